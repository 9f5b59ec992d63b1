package policycli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	_ "github.com/agentrt/agentrt/sqlite" // SQLite files; the main links the other backends
)

var recheckCommand = &command{
	name:  "recheck",
	usage: "-db DB -policy FILE RUN",
	help: `Re-asks FILE about every policy decision RUN recorded, with the request
and the run as the policy was shown them (agentrt.Recheck), and prints one
line per decision. Opens DB read-only and writes nothing. Exits 1 when any
decision is decided differently or could not be asked again.
  -db DB         the runs database (default $AGENTRT_DB)
  -policy FILE   the policy file to ask`,
	run: runRecheck,
}

func runRecheck(e *env, c *command, args []string) int {
	fs := flag.NewFlagSet("recheck", flag.ContinueOnError)
	db := fs.String("db", "", "the runs database")
	file := fs.String("policy", "", "the policy file")
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if *db == "" {
		*db = getenv("AGENTRT_DB")
	}
	switch {
	case *file == "" && len(pos) == 2:
		return e.usageError(c, fmt.Sprintf("the policy file is named with -policy, so pass -policy %s and then the run id", s(pos[0])))
	case len(pos) != 1:
		return e.usageError(c, "recheck takes exactly one run id")
	case pos[0] == "" || len(pos[0]) > 1024:
		return e.usageError(c, "the run id must be 1 to 1024 bytes")
	case *db == "":
		return e.usageError(c, "no database: pass -db PATH or set AGENTRT_DB")
	case *file == "":
		return e.usageError(c, "-policy FILE is required")
	}
	p, code := e.load(*file)
	if p == nil {
		return code
	}
	// The backends are the ones the main links (cmd/agentrt-policy links
	// SQLite and PostgreSQL); the name printed never holds a password.
	name := backend.Redact(*db)
	st, err := backend.Open(context.Background(), *db, true)
	if err != nil {
		return e.fail("cannot open %s: %v", name, err)
	}
	defer st.Close()
	rep, err := agentrt.Recheck(context.Background(), st, pos[0], p, agentrt.RecheckOptions{})
	if err != nil {
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("there is no run %s in %s", pos[0], name)
		}
		return e.fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "run %s against %s (%s)\n", s(rep.RunID), s(*file), p.PolicyID())
	for _, ev := range rep.Evaluations {
		line := fmt.Sprintf("  step %d %s: recorded %s, now %s: %s", ev.StepIndex, s(ev.Tool), orNone(string(ev.Recorded)), orNone(string(ev.Now)), ev.Result)
		if ev.Detail != "" {
			line += " (" + s(ev.Detail) + ")"
		}
		fmt.Fprintln(e.stdout, line)
	}
	switch {
	case len(rep.Evaluations) == 0:
		fmt.Fprintln(e.stdout, "no policy decisions recorded")
	case rep.Same():
		fmt.Fprintf(e.stdout, "all %d decisions decided alike\n", len(rep.Evaluations))
	default:
		fmt.Fprintf(e.stdout, "%d of %d decisions differ, %d not recheckable\n", len(rep.Differences()), len(rep.Evaluations), notRecheckable(rep))
		return ExitFailure
	}
	return ExitOK
}

func notRecheckable(rep agentrt.RecheckReport) int {
	n := 0
	for _, ev := range rep.Evaluations {
		if ev.Result == agentrt.RecheckNotRecheckable {
			n++
		}
	}
	return n
}
