package policycli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/disclosure"
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
and the run as the policy was shown them (agentrt.Recheck), the secrets
found in its arguments by the disclosure rules its run.created records
included (request.secrets), and prints one
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
	rules, err := judgedBy(context.Background(), st, runID)
	if err != nil {
		return e.fail("%v", err)
	}
	rep, err := agentrt.Recheck(context.Background(), st, runID, p, agentrt.RecheckOptions{Disclosure: rules})
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

// judgedBy rebuilds the disclosure rules runID was judged by from its
// run.created record, so the policy is handed the argument findings the
// engine handed it (request.secrets). A run recorded without disclosure
// is rechecked without; one judged by a Disclosure other than the
// disclosure module's cannot be rebuilt, and is refused rather than
// rechecked as if its arguments held no secret.
func judgedBy(ctx context.Context, st agentrt.StoreReader, runID string) (agentrt.Disclosure, error) {
	evs, _, err := st.ListEventsPage(ctx, runID, 1, 0)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Type != agentrt.EventRunCreated {
		return nil, fmt.Errorf("run %s has no run.created event to read its disclosure rules from", runID)
	}
	p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
	if err != nil {
		return nil, err
	}
	if len(p.Disclosure) == 0 {
		return nil, nil
	}
	rules, err := disclosure.FromDescription(p.Disclosure)
	if err != nil {
		return nil, fmt.Errorf("run %s was judged by disclosure rules this command cannot rebuild (%v), so its policy cannot be handed the same argument findings", runID, err)
	}
	return rules, nil
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
