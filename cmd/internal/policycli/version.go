package policycli

import (
	"flag"
	"fmt"
	"runtime"

	"github.com/agentrt/agentrt/internal/buildinfo"
)

var versionCommand = &command{
	name:  "version",
	usage: "",
	help:  `Prints agentrt-policy's version and the Go release it was built with.`,
	run:   runVersion,
}

func runVersion(e *env, c *command, args []string) int {
	pos, code, ok := e.parse(c, flag.NewFlagSet("version", flag.ContinueOnError), args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", s(pos[0])))
	}
	fmt.Fprintf(e.stdout, "agentrt-policy %s (%s)\n", buildinfo.Version(), runtime.Version())
	return ExitOK
}
