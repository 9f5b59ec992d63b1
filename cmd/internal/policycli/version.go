package policycli

import (
	"fmt"
	"runtime"

	"github.com/agentrt/agentrt/internal/buildinfo"
	"github.com/agentrt/agentrt/internal/cliflag"
)

type versionOptions struct{}

var versionCommand = &command{
	Name:    "version",
	Summary: "print the version and the Go release it was built with",
	Help:    `Prints agentrt-policy's version and the Go release it was built with.`,
	Bind:    cliflag.With(nil, runVersion),
}

func runVersion(e *env, _ *versionOptions, pos []string) int {
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("unexpected argument %q", s(pos[0])))
	}
	fmt.Fprintf(e.stdout, "agentrt-policy %s (%s)\n", buildinfo.Version(), runtime.Version())
	return ExitOK
}
