package cliflag_test

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/internal/cliflag"
)

// Flags are taken wherever they stand; after "--" every argument is
// positional, a dash or not; -h is flag.ErrHelp and a bad flag its error.
func TestParse_FlagsAnywhereAndEverythingAfterTheDoubleDash(t *testing.T) {
	for _, c := range []struct {
		args, pos []string
		v         bool
	}{
		{[]string{"a", "-v", "b"}, []string{"a", "b"}, true},
		{[]string{"-v", "a"}, []string{"a"}, true},
		{[]string{"a", "b", "-v"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "-v", "b"}, []string{"a", "-v", "b"}, false},
		{nil, nil, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		v := fs.Bool("v", false, "")
		pos, err := cliflag.Parse(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *v != c.v {
			t.Errorf("Parse(%q) = %q, -v %t, %v; want %q, -v %t", c.args, pos, *v, err, c.pos, c.v)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := cliflag.Parse(fs, []string{"a", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h = %v, want flag.ErrHelp", err)
	}
	if _, err := cliflag.Parse(fs, []string{"a", "-nope"}); err == nil || errors.Is(err, flag.ErrHelp) {
		t.Errorf("-nope = %v, want an error naming the flag", err)
	}
}
