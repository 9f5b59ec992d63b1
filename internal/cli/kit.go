package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/trace"
)

// inv is one invocation of a command built on the cliflag kit: the
// environment, the global flags and the command named, whose usage a usage
// error prints.
type inv struct {
	*env
	g *global
	c *command
}

// kitCmd is a command or subcommand of agentrt built on the kit.
type kitCmd = cliflag.Command[*inv]

// cliKit runs the kit's commands: the global flags may follow the command,
// -h on a command or any subcommand prints the command's help, and a
// usage error prints the command's usage.
var cliKit = &cliflag.Kit[*inv]{
	Global:     func(x *inv, fs *flag.FlagSet) { x.g.register(fs) },
	Help:       func(x *inv, _ []*kitCmd) { x.commandUsage(x.stdout, x.c) },
	UsageError: func(x *inv, _ []*kitCmd, msg string) int { return x.usageError(x.c, msg) },
	Missing: func(c *kitCmd) string {
		names := c.SubNames()
		return fmt.Sprintf("missing the %s command: %s or %s", c.Name, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	},
	Unknown: func(c *kitCmd, name string) string {
		return fmt.Sprintf("unknown %s command %q", c.Name, trace.Sanitize(trace.Truncate(name, 40)))
	},
}

// fromKit is the entry of the command table for k.
func fromKit(k *kitCmd) *command {
	return &command{name: k.Name, summary: k.Summary, usage: k.Usage, subs: k.SubNames(),
		run: func(e *env, g *global, c *command, args []string) int {
			return cliKit.Exec(&inv{env: e, g: g, c: c}, k, args)
		}}
}

// byFlag is the -by flag: who is doing this, recorded as given, or when it
// is not given $USER, else the account's name.
type byFlag struct {
	who   string
	given bool
}

func (b *byFlag) String() string { return b.who }

func (b *byFlag) Set(v string) error { b.who, b.given = v, true; return nil }

func (b *byFlag) register(fs *flag.FlagSet) {
	fs.Var(b, "by", "who is doing this, recorded as given (default $USER, else your account's name)")
}

// name is who to record: the flag's value when given, else whoami.
func (b *byFlag) name(e *env) string {
	if b.given {
		return b.who
	}
	return e.whoami()
}

// requireBy is the name to record; "" means a usage error was printed,
// since no one could be named, and code is the exit.
func (x *inv) requireBy(b *byFlag, doing string) (string, int) {
	who := b.name(x.env)
	if who == "" {
		return "", x.usageError(x.c, "no one to record"+doing+": pass -by WHO (a label, recorded as given), since neither USER nor the system's user database names this account")
	}
	return who, ExitOK
}

// runArg checks that pos is exactly one run id and returns it as typed;
// unless code is ExitOK a usage error was printed.
func (x *inv) runArg(pos []string) (string, int) {
	runID, msg := oneRunID(pos)
	if msg != "" {
		return "", x.usageError(x.c, msg)
	}
	return runID, ExitOK
}

// runAndBy checks what cancel and erase check first: pos is exactly one
// run id (returned as typed), and someone can be recorded as doing this
// (who). Unless code is ExitOK a usage error was printed.
func (x *inv) runAndBy(pos []string, by *byFlag, doing string) (typed, who string, code int) {
	if typed, code = x.runArg(pos); code != ExitOK {
		return "", "", code
	}
	if who, code = x.requireBy(by, doing); code != ExitOK {
		return "", "", code
	}
	return typed, who, ExitOK
}

// beginNamed checks a changing subcommand's one argument (what it names,
// as what says: "NAME"), then -by, then check on the argument, and only
// then opens the database for writing. Unless code is ExitOK the command
// stops with it and nothing is open; else the caller closes st.
func (x *inv) beginNamed(sub, what string, pos []string, by *byFlag, check func(name string) int) (name, who string, st agentrt.Store, code int) {
	name, code, ok := x.subArg(x.c, sub, pos, false, what)
	if !ok {
		return "", "", nil, code
	}
	if who, code = x.requireBy(by, ""); code != ExitOK {
		return "", "", nil, code
	}
	if code := check(name); code != ExitOK {
		return "", "", nil, code
	}
	if st, _, code = x.g.openDB(x.env, x.c, false); code != ExitOK {
		return "", "", nil, code
	}
	return name, who, st, ExitOK
}

// pageOptions are the paging flags of a command that lists.
type pageOptions struct{ limit, offset int }

// paged binds run to the paging flags alone, -limit defaulting to limit:
// the flags of runs, show and events.
func paged(limit int, limitHelp, offsetHelp string, run func(x *inv, o *pageOptions, pos []string) int) func(*flag.FlagSet) cliflag.Runner[*inv] {
	return cliflag.With(func(fs *flag.FlagSet, o *pageOptions) { o.register(fs, limit, limitHelp, offsetHelp) }, run)
}

// onPage binds run as paged does, for a command that reads one page of a
// run: the run id and the paging flags are checked, the database opened
// read-only, and closed once run returns.
func onPage(limit int, limitHelp, offsetHelp string, run func(x *inv, rp runPage) int) func(*flag.FlagSet) cliflag.Runner[*inv] {
	return paged(limit, limitHelp, offsetHelp, func(x *inv, o *pageOptions, pos []string) int {
		rp, code, ok := x.openPage(o, pos)
		if !ok {
			return code
		}
		defer rp.st.Close()
		return run(x, rp)
	})
}

func (o *pageOptions) register(fs *flag.FlagSet, limit int, limitHelp, offsetHelp string) {
	fs.IntVar(&o.limit, "limit", limit, fmt.Sprintf("%s, 1 to %d", limitHelp, maxLimit))
	fs.IntVar(&o.offset, "offset", 0, offsetHelp)
}

// openRunToChange opens the database for writing, once every argument is
// checked, and resolves the run id as typed. Unless code is ExitOK the
// command stops with it and nothing is open; else the caller closes st.
func (x *inv) openRunToChange(typed string) (st agentrt.Store, where, runID string, code int) {
	st, where, code = x.g.openDB(x.env, x.c, false)
	if code != ExitOK {
		return nil, "", "", code
	}
	runID, code, ok := x.resolveRun(st, where, typed)
	if !ok {
		st.Close()
		return nil, "", "", code
	}
	return st, where, runID, ExitOK
}

// runPage is what show and events share: a run id, one page of it, and the
// database opened read-only once every argument has been checked.
type runPage struct {
	st agentrt.Store
	// path is the database as given (for a command line to print), name
	// how messages print it.
	path, name, runID string
	limit, offset     int
}

// openPage checks the run id in pos and the paging flags, then opens the
// database read-only and resolves the run. Unless ok, the command stops
// with code and nothing is open; else the caller closes rp.st.
func (x *inv) openPage(o *pageOptions, pos []string) (rp runPage, code int, ok bool) {
	e, c, g := x.env, x.c, x.g
	runID, code := x.runArg(pos)
	if code != ExitOK {
		return runPage{}, code, false
	}
	if code := checkPage(c, e, o.limit, o.offset); code != ExitOK {
		return runPage{}, code, false
	}
	st, name, code := g.openDB(e, c, true)
	if code != ExitOK {
		return runPage{}, code, false
	}
	if runID, code, ok = e.resolveRun(st, name, runID); !ok {
		st.Close()
		return runPage{}, code, false
	}
	return runPage{st: st, path: g.path(e), name: name, runID: runID, limit: o.limit, offset: o.offset}, ExitOK, true
}
