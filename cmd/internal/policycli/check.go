package policycli

import (
	"flag"
	"fmt"

	"github.com/agentrt/agentrt/internal/cliflag"
)

type checkOptions struct{ strict bool }

var checkCommand = &command{
	Name:    "check",
	Summary: "compile FILE; warn on rules that can never match",
	Usage:   "[-strict] FILE",
	Help: `Compiles FILE as agentrt would load it (owner-only, strict, every
expression type-checked) and prints its policy id and the rules whose
approvals need a signed grant (require_signature: true). Warns about rules that
can never match, rules an earlier rule shadows, and a default that allows.
  -strict  exit 1 when there is any warning`,
	Bind: cliflag.With(func(fs *flag.FlagSet, o *checkOptions) {
		fs.BoolVar(&o.strict, "strict", false, "exit 1 on any warning")
	}, runCheck),
}

func runCheck(e *env, o *checkOptions, pos []string) int {
	if len(pos) != 1 {
		return e.usageError("check takes exactly one policy file")
	}
	p, code := e.load(pos[0])
	if p == nil {
		return code
	}
	ws := p.Warnings()
	fmt.Fprintf(e.stdout, "%s: compiles; id %s\n", s(pos[0]), p.PolicyID())
	for _, r := range p.SignedGrantRules() {
		fmt.Fprintf(e.stdout, "rule %s: an approval needs a signed grant (require_signature)\n", s(r))
	}
	for _, w := range ws {
		fmt.Fprintf(e.stdout, "warning: %s:%s\n", s(pos[0]), s(w.String()))
	}
	if o.strict && len(ws) > 0 {
		return ExitFailure
	}
	return ExitOK
}
