package cli

import (
	"strings"
	"testing"
)

// -token-file and -stdio=false mean nothing without -listen, and a
// -listen that is not a loopback IP is refused before anything opens.
func TestCLI_ListenFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"-config", "x.json", "-token-file", "t"},
		{"-config", "x.json", "-stdio=false"},
	} {
		code, _, stderr := run(args...)
		if code != ExitUsage || !strings.Contains(stderr, "need -listen") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	for _, addr := range []string{"0.0.0.0:8931", "localhost:8931", "example.com:80"} {
		code, _, stderr := run("-config", "x.json", "-listen", addr)
		if code != ExitUsage || !strings.Contains(stderr, "loopback") {
			t.Errorf("-listen %s: exit %d, %s", addr, code, stderr)
		}
	}
}
