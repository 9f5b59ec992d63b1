package policycli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/internal/cliflag"
)

type testOptions struct{ verbose bool }

var testCommand = &command{
	Name:    "test",
	Summary: "judge a table of requests; exit 1 on a mismatch",
	Usage:   "[-v] FILE CASES",
	Help: `Judges each case in CASES (a YAML or JSON table of requests and what
the policy must decide) with FILE, and prints every case that disagrees
with the rule that decided it. Exits 1 when any case fails.
  -v  print passing cases too`,
	Bind: cliflag.With(func(fs *flag.FlagSet, o *testOptions) {
		fs.BoolVar(&o.verbose, "v", false, "print passing cases too")
	}, runTest),
}

func runTest(e *env, o *testOptions, pos []string) int {
	if len(pos) != 2 {
		return e.usageError("test takes a policy file and a cases file")
	}
	p, code := e.load(pos[0])
	if p == nil {
		return code
	}
	cases, err := loadCases(pos[1])
	if err != nil {
		return e.fail("%v", err)
	}
	failed := 0
	for _, r := range p.Run(cases) {
		rule := r.Rule
		if rule == "" {
			rule = "none"
		}
		if len(r.Failures) == 0 {
			if o.verbose {
				fmt.Fprintf(e.stdout, "PASS %s (line %d): %s by rule %s\n", s(r.Case.Name), r.Case.Line, r.Decision.Outcome, s(rule))
			}
			continue
		}
		failed++
		fmt.Fprintf(e.stdout, "FAIL %s (line %d): tool %s, decided by rule %s\n", s(r.Case.Name), r.Case.Line, s(r.Case.Request.Spec.Name), s(rule))
		for _, f := range r.Failures {
			fmt.Fprintf(e.stdout, "  %s\n", s(strings.TrimSpace(f)))
		}
	}
	// Not "N passed, N failed": CI reads that line as a test runner's.
	if failed > 0 {
		fmt.Fprintf(e.stdout, "FAIL: %d of %d cases disagree with the policy\n", failed, len(cases))
		return ExitFailure
	}
	fmt.Fprintf(e.stdout, "ok: all %d cases decided as expected\n", len(cases))
	return ExitOK
}
