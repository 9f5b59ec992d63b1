package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// Exit codes.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailure: the command ran and failed, or found something wrong: a
	// refused database, a broken chain, a kept head not reached, a declined
	// prompt, a decision the runtime refused.
	ExitFailure = 1
	// ExitUsage: the command line was wrong; nothing was opened.
	ExitUsage = 2
)

// Bounds on paging flags, so no command reads more than a page.
const (
	maxLimit       = 1000
	defaultRuns    = 100
	defaultDetail  = 500
	maxIDBytes     = 1024
	dbEnv          = "AGENTRT_DB"
	timeLayout     = "2006-01-02 15:04:05 -0700"
	goalClipBytes  = 60
	cellClipBytes  = 80
	textClipBytes  = 4000
	eventTextBytes = 8000
)

// env is what a command may touch: its streams, the environment and the
// clock. Run fills it from the process; tests fill it themselves.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// osUser names the account -by falls back to after $USER; nil asks
	// the system's user database.
	osUser func() string
	// now is the clock decisions are recorded on; nil is the wall clock.
	now func() time.Time
	// interactive reports whether stdin is a terminal a person types at.
	interactive func(io.Reader) bool
	// progress reports whether stderr is a terminal to show progress on.
	progress func(io.Writer) bool
	// prog is how printed commands invoke agentrt.
	prog string
	// demo holds what tests fix about the demo.
	demo demoOptions
	// opts is what the main package wired in.
	opts Options
}

// Options is what a main package wires into the command line from modules
// the core cannot import.
type Options struct {
	// Disclosure is the disclosure the engines the command line builds
	// for the user (demo, resume) run with. Nil runs them without one.
	Disclosure agentrt.Disclosure
}

// Run runs the agentrt command line: args are the arguments after the
// program name. It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunWith(Options{}, args, stdin, stdout, stderr)
}

// RunWith is Run with what the main package wired in.
func RunWith(o Options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := newEnv(stdin, stdout, stderr)
	e.opts = o
	return e.run(args)
}

func newEnv(stdin io.Reader, stdout, stderr io.Writer) *env {
	return &env{
		stdin: stdin, stdout: stdout, stderr: stderr,
		getenv:      os.Getenv,
		interactive: isTerminalInput,
		progress:    isTerminalOutput,
		prog:        programName(),
	}
}

// programName is "go run ./cmd/agentrt" when agentrt was started by go run,
// whose binaries live in a go-build temporary directory, and "agentrt"
// otherwise, so printed commands can be pasted as they are.
func programName() string {
	if len(os.Args) > 0 && strings.Contains(os.Args[0], "go-build") {
		return "go run ./cmd/agentrt"
	}
	return "agentrt"
}

// global holds the flags that come before the command (and may be repeated
// after it).
type global struct {
	db   string
	json bool
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string
	// subs are the subcommands of a command that has them (budgets
	// list, approvers add, ...), each answering -h with the command's help.
	subs []string
	run  func(e *env, g *global, c *command, args []string) int
}

// isHelp reports whether arg asks for help rather than naming anything.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// commands are listed in this order by help.
var commands = []*command{
	runsCommand, showCommand, eventsCommand, followCommand, approveCommand, rejectCommand, cancelCommand,
	verifyCommand, checkpointCommand, receiptCommand, verifyReceiptCommand, eraseCommand, retainCommand, approversCommand, budgetsCommand, serveCommand, versionCommand, demoCommand, resumeCommand, policyCommand, recheckCommand,
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (e *env) run(args []string) int {
	g := &global{}
	fs := flag.NewFlagSet("agentrt", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			e.usage(e.stdout)
			return ExitOK
		}
		return e.usageError(nil, err.Error())
	}
	rest := fs.Args()
	if len(rest) == 0 {
		e.usage(e.stderr)
		return ExitUsage
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 2 {
			return e.usageError(nil, "help takes at most one command name")
		}
		if len(rest) == 2 {
			c := lookup(rest[1])
			if c == nil {
				return e.usageError(nil, fmt.Sprintf("unknown command %q", trace.Sanitize(rest[1])))
			}
			e.commandUsage(e.stdout, c)
			return ExitOK
		}
		e.usage(e.stdout)
		return ExitOK
	}
	c := lookup(name)
	if c == nil {
		return e.usageError(nil, fmt.Sprintf("unknown command %q", trace.Sanitize(name)))
	}
	// "agentrt budgets -h" asks for help before any subcommand is named;
	// a command without subcommands reaches the same answer through its
	// flag set.
	if len(rest) > 1 && isHelp(rest[1]) {
		e.commandUsage(e.stdout, c)
		return ExitOK
	}
	return c.run(e, g, c, rest[1:])
}

func (g *global) register(fs *flag.FlagSet) {
	fs.StringVar(&g.db, "db", g.db, "the runs database (default $"+dbEnv+")")
	fs.BoolVar(&g.json, "json", g.json, "write JSON Lines instead of text")
}

// path returns the database named by -db or AGENTRT_DB.
func (g *global) path(e *env) string {
	if g.db != "" {
		return g.db
	}
	return e.getenv(dbEnv)
}

// requireDB is the usage check that a database was named.
func (g *global) requireDB(e *env, c *command) (string, int) {
	p := g.path(e)
	if p == "" {
		return "", e.usageError(c, "no database: pass -db PATH or set "+dbEnv)
	}
	return p, ExitOK
}

// openDB opens the database the global flags name through the backend
// registry, read-only when readOnly, refusing a command run without one.
// name is how messages may print it: a URL's password redacted. A code
// other than ExitOK means stop with it.
func (g *global) openDB(e *env, c *command, readOnly bool) (st agentrt.Store, name string, code int) {
	path, code := g.requireDB(e, c)
	if code != ExitOK {
		return nil, "", code
	}
	st, code = e.open(path, readOnly)
	return st, backend.Redact(path), code
}

// subArg checks a subcommand's positional arguments: none when takesNone,
// else exactly one, which it returns (what says what it names: "NAME").
func (e *env) subArg(c *command, sub string, pos []string, takesNone bool, what string) (string, int, bool) {
	switch {
	case takesNone && len(pos) > 0:
		return "", e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80))), false
	case takesNone:
		return "", ExitOK, true
	case len(pos) != 1:
		return "", e.usageError(c, c.name+" "+sub+" takes exactly one "+what), false
	}
	return pos[0], ExitOK, true
}

// oneRunID checks that pos is exactly one run id and returns it, or what
// is wrong with pos.
func oneRunID(pos []string) (string, string) {
	switch {
	case len(pos) == 0:
		return "", "missing the run id"
	case len(pos) > 1:
		return "", fmt.Sprintf("unexpected argument %q after the run id", trace.Sanitize(trace.Truncate(pos[1], 80)))
	}
	if msg := checkID("run id", pos[0]); msg != "" {
		return "", msg
	}
	return pos[0], ""
}

// resolveRun turns the run id as typed into the run's id once the database
// is open: the id itself, or the one run whose id begins with it (the short
// id a trail prints). Unless ok it has printed why and code is the exit.
func (e *env) resolveRun(st agentrt.StoreReader, name, typed string) (id string, code int, ok bool) {
	id, err := view.ResolveRunID(background(), st, typed)
	var amb *view.AmbiguousRunIDError
	switch {
	case err == nil:
		return id, ExitOK, true
	case errors.As(err, &amb):
		return "", e.fail("%v", err), false
	case errors.Is(err, agentrt.ErrNotFound):
		return "", e.fail("no run in %s has the id %s or an id that begins with it", name, trace.Truncate(typed, 64)), false
	}
	return "", e.fail("reading run %s: %v", trace.Truncate(typed, 64), err), false
}

func checkID(what, id string) string {
	if id == "" {
		return what + " must not be empty"
	}
	if len(id) > maxIDBytes {
		return fmt.Sprintf("%s is %d bytes; ids are at most %d", what, len(id), maxIDBytes)
	}
	return ""
}

func checkPage(c *command, e *env, limit, offset int) int {
	if limit < 1 || limit > maxLimit {
		return e.usageError(c, fmt.Sprintf("-limit must be from 1 to %d, got %d", maxLimit, limit))
	}
	if offset < 0 {
		return e.usageError(c, fmt.Sprintf("-offset must not be negative, got %d", offset))
	}
	return ExitOK
}

// usageError prints the specific error first, then how to use the command,
// and returns ExitUsage.
func (e *env) usageError(c *command, msg string) int {
	fmt.Fprintf(e.stderr, "agentrt: %s\n", msg)
	if c != nil {
		fmt.Fprintf(e.stderr, "usage: agentrt [-db PATH] [-json] %s %s\n", c.name, c.usage)
		fmt.Fprintf(e.stderr, "run 'agentrt help %s' for more\n", c.name)
	} else {
		fmt.Fprintln(e.stderr, "run 'agentrt help' for usage")
	}
	return ExitUsage
}

// fail prints one line for a failure and returns ExitFailure. Text that came
// from the database or the runtime passes through Sanitize.
func (e *env) fail(format string, args ...any) int {
	fmt.Fprintf(e.stderr, "agentrt: %s\n", trace.Sanitize(fmt.Sprintf(format, args...)))
	return ExitFailure
}

// open opens an existing database through the backend registry (a SQLite
// file, or a URL of a backend this binary links), read-only for commands
// that only read. A refusal is printed as one sentence naming the database
// without its password.
func (e *env) open(db string, readOnly bool) (agentrt.Store, int) {
	st, err := backend.Open(background(), db, readOnly)
	if err != nil {
		fmt.Fprintln(e.stderr, "agentrt: "+openRefusal(backend.Redact(db), err))
		return nil, ExitFailure
	}
	return st, ExitOK
}

// openRefusal turns an error from a backend's OpenExisting into one sentence
// that says what was refused and what to do, matched on the error's type,
// never its text.
func openRefusal(path string, err error) string {
	p := trace.Sanitize(path)
	var ins *agentrt.InsecureModeError
	var uns *agentrt.UnsafeSchemaError
	var ver *agentrt.SchemaVersionError
	var sch *backend.UnknownSchemeError
	switch {
	case errors.As(err, &ins) && ins.Problem == agentrt.FileSymlink:
		return fmt.Sprintf("refusing %s because it is a symbolic link, and agentrt opens only the database file itself, so name that file.", trace.Sanitize(ins.Path))
	case errors.As(err, &ins) && ins.Problem == agentrt.FileNotRegular && isDir(ins.Path):
		return fmt.Sprintf("refusing %s because it is a directory, and a runs database is a file, so name the database file itself.", trace.Sanitize(ins.Path))
	case errors.As(err, &ins) && ins.Problem == agentrt.FileNotRegular:
		return fmt.Sprintf("refusing %s because it is not a regular file, and a runs database is one, so name the database file itself.", trace.Sanitize(ins.Path))
	case errors.As(err, &ins) && ins.Problem == agentrt.FileOwner:
		return fmt.Sprintf("refusing %s because it is owned by user %d, not by you (user %d), and whoever owns a runs database can forge any approval in it, so run agentrt as its owner or chown it to your account.",
			trace.Sanitize(ins.Path), ins.Owner, ins.User)
	case errors.As(err, &ins):
		return fmt.Sprintf("refusing %s because %s (mode %04o), and anyone who can write a runs database can approve anything in it, so make it owner-only with chmod 600 and owned by the account that runs agentrt.",
			trace.Sanitize(ins.Path), trace.Sanitize(ins.Reason), ins.Mode)
	case errors.As(err, &uns):
		typ, name := trace.Sanitize(uns.Type), trace.Sanitize(trace.Truncate(uns.Name, 80))
		article := "a"
		if strings.HasPrefix(typ, "i") {
			article = "an" // index, the only kind sqlite_schema names that takes one
		}
		what := fmt.Sprintf("it holds %s %s named %q that agentrt's migrations do not create", article, typ, name)
		switch uns.Difference {
		case agentrt.SchemaAltered:
			what = fmt.Sprintf("its %s %q is not the one agentrt's migrations create", typ, name)
		case agentrt.SchemaMissing:
			what = fmt.Sprintf("it lacks the %s %q that agentrt's migrations create", typ, name)
		}
		return fmt.Sprintf("refusing %s because %s, and agentrt never opens a database that could run its author's SQL.", trace.Sanitize(uns.Path), what)
	case errors.As(err, &ver):
		if ver.Database > ver.Build {
			return fmt.Sprintf("refusing %s because its schema version %d is newer than this agentrt's %d, so use an agentrt built from a newer release.",
				trace.Sanitize(ver.Path), ver.Database, ver.Build)
		}
		return fmt.Sprintf("refusing %s because its schema version %d is older than this agentrt's %d, and agentrt never migrates, so open it once with the program that owns it.",
			trace.Sanitize(ver.Path), ver.Database, ver.Build)
	case errors.Is(err, agentrt.ErrSchemaVersion):
		return fmt.Sprintf("refusing %s because it is not an agentrt runs database.", p)
	case errors.Is(err, agentrt.ErrNotFound):
		return fmt.Sprintf("there is no database at %s, and agentrt never creates one.", p)
	case sqlite.IsNotADatabase(err):
		return fmt.Sprintf("refusing %s because it is not a SQLite database, so name the runs database your program or agentrt demo created.", p)
	case errors.As(err, &sch):
		return fmt.Sprintf("refusing %s because this agentrt has no backend for %s:// URLs (it has %s).", p, trace.Sanitize(sch.Scheme), strings.Join(sch.Registered, ", "))
	}
	// A backend's error may already name the database (postgres: "agentrt:
	// postgres NAME: ..."); it is named once.
	msg := strings.TrimPrefix(err.Error(), "agentrt: ")
	for _, prefix := range []string{"postgres " + path + ": ", "postgres DSN " + path + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return fmt.Sprintf("cannot open %s: %s.", p, strings.TrimSuffix(trace.Sanitize(msg), "."))
}

// isDir reports whether path names a directory (the error carries only
// the permission bits).
func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// decideError turns a refusal of a decision or a cancel into one line.
func (e *env) decideError(runID, approvalID string, err error) int {
	switch {
	case errors.Is(err, agentrt.ErrUnsignedGrant):
		return e.fail("%s; nothing was decided; sign the decision with -key FILE", strings.TrimPrefix(err.Error(), "agentrt: "))
	case errors.Is(err, agentrt.ErrSignature):
		return e.fail("%s; nothing was decided", strings.TrimPrefix(err.Error(), "agentrt: "))
	case errors.Is(err, agentrt.ErrApprovalChanged):
		return e.fail("approval %s changed after it was shown; nothing was decided; run the command again to see it as it is now", approvalID)
	case errors.Is(err, agentrt.ErrApprovalExpired):
		return e.fail("approval %s had expired, so it was recorded as expired and run %s was cancelled", approvalID, runID)
	case errors.Is(err, agentrt.ErrNotPending):
		return e.fail("approval %s was already decided; nothing was changed", approvalID)
	case errors.Is(err, agentrt.ErrApprovalHash):
		return e.fail("approval %s does not match its own hash, so the record was altered; nothing was decided", approvalID)
	case errors.Is(err, agentrt.ErrRunState):
		return e.fail("run %s is not in a state that allows this; nothing was changed", runID)
	case errors.Is(err, agentrt.ErrNotFound):
		return e.fail("%v", err)
	case sqlite.IsBusy(err):
		return e.fail("the database is locked by another writer; nothing was changed; try again")
	}
	return e.fail("%v", err)
}

func background() context.Context { return context.Background() }
