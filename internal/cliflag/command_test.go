package cliflag_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cliflag"
)

// rec records what the kit did for one command line.
type rec struct{ out []string }

type greetOpts struct{ loud bool }

func kitProgram() (*cliflag.Kit[*rec], *cliflag.Command[*rec]) {
	greet := &cliflag.Command[*rec]{Name: "greet", Usage: "[-loud] NAME", Bind: cliflag.With(
		func(fs *flag.FlagSet, o *greetOpts) { fs.BoolVar(&o.loud, "loud", false, "shout") },
		func(r *rec, o *greetOpts, pos []string) int {
			r.out = append(r.out, fmt.Sprintf("greet loud=%t pos=%q", o.loud, pos))
			return 0
		})}
	root := &cliflag.Command[*rec]{Name: "say", Subs: []*cliflag.Command[*rec]{greet}}
	k := &cliflag.Kit[*rec]{
		Global: func(r *rec, fs *flag.FlagSet) { fs.Bool("json", false, "") },
		Help: func(r *rec, path []*cliflag.Command[*rec]) {
			r.out = append(r.out, "help "+path[len(path)-1].Name)
		},
		UsageError: func(r *rec, path []*cliflag.Command[*rec], msg string) int {
			r.out = append(r.out, "usage "+path[len(path)-1].Name+": "+msg)
			return 2
		},
	}
	return k, root
}

// A subcommand's flags land in its own options struct wherever they stand,
// with the global flags beside them; -h before or after the subcommand is
// help and exit 0; a missing or unknown subcommand and a bad flag are usage
// errors naming the command or subcommand they belong to.
func TestKit_ExecParsesOptionsAndAnswersHelpAlike(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"greet", "ann", "-loud", "-json"}, 0, `greet loud=true pos=["ann"]`},
		{[]string{"greet", "ann"}, 0, `greet loud=false pos=["ann"]`},
		{[]string{"-h"}, 0, "help say"},
		{[]string{"greet", "--help"}, 0, "help greet"},
		{[]string{"greet", "x", "-help"}, 0, "help greet"},
		{nil, 2, "usage say: missing the say subcommand"},
		{[]string{"wave\x1b"}, 2, `usage say: unknown say subcommand "wave\x1b"`},
		{[]string{"greet", "-quiet"}, 2, "usage greet: flag provided but not defined: -quiet"},
	} {
		k, root := kitProgram()
		r := &rec{}
		code := k.Exec(r, root, c.args)
		if code != c.code || strings.Join(r.out, "|") != c.out {
			t.Errorf("Exec(%q) = %d %q, want %d %q", c.args, code, r.out, c.code, c.out)
		}
	}
}
