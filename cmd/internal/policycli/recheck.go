package policycli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/internal/cliflag"
	_ "github.com/agentrt/agentrt/sqlite" // SQLite files; the main links the other backends
	"github.com/agentrt/agentrt/view"
)

type recheckOptions struct{ db, file string }

var recheckCommand = &command{
	Name:    "recheck",
	Summary: "re-ask FILE about every decision RUN recorded",
	Usage:   "-db DB -policy FILE RUN",
	Help: `Re-asks FILE about every policy decision RUN recorded, with the request
and the run as the policy was shown them (agentrt.Recheck), and prints one
line per decision. Opens DB read-only and writes nothing. Exits 1 when any
decision is decided differently or could not be asked again.
  -db DB         the runs database (default $AGENTRT_DB)
  -policy FILE   the policy file to ask`,
	Bind: cliflag.With(func(fs *flag.FlagSet, o *recheckOptions) {
		fs.StringVar(&o.db, "db", "", "the runs database")
		fs.StringVar(&o.file, "policy", "", "the policy file")
	}, runRecheck),
}

func runRecheck(e *env, o *recheckOptions, pos []string) int {
	if o.db == "" {
		o.db = getenv("AGENTRT_DB")
	}
	switch {
	case o.file == "" && len(pos) == 2:
		return e.usageError(fmt.Sprintf("the policy file is named with -policy, so pass -policy %s and then the run id", s(pos[0])))
	case len(pos) != 1:
		return e.usageError("recheck takes exactly one run id")
	case pos[0] == "" || len(pos[0]) > 1024:
		return e.usageError("the run id must be 1 to 1024 bytes")
	case o.db == "":
		return e.usageError("no database: pass -db PATH or set AGENTRT_DB")
	case o.file == "":
		return e.usageError("-policy FILE is required")
	}
	p, code := e.load(o.file)
	if p == nil {
		return code
	}
	// The backends are the ones the main links (cmd/agentrt-policy links
	// SQLite and PostgreSQL); the name printed never holds a password.
	name := backend.Redact(o.db)
	st, err := backend.Open(context.Background(), o.db, true)
	if err != nil {
		return e.fail("cannot open %s: %v", name, err)
	}
	defer st.Close()
	// The run may be named by the short id a trail prints.
	runID, err := view.ResolveRunID(context.Background(), st, pos[0])
	var amb *view.AmbiguousRunIDError
	switch {
	case errors.As(err, &amb):
		return e.fail("%v", err)
	case errors.Is(err, agentrt.ErrNotFound):
		return e.fail("there is no run %s in %s, nor one whose id begins with it", pos[0], name)
	case err != nil:
		return e.fail("%v", err)
	}
	rep, err := agentrt.Recheck(context.Background(), st, runID, p, agentrt.RecheckOptions{})
	if err != nil {
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("there is no run %s in %s", runID, name)
		}
		return e.fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "run %s against %s (%s)\n", s(rep.RunID), s(o.file), p.PolicyID())
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
