package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/sqlite"
)

var versionCommand = &command{
	name:    "version",
	summary: "print agentrt's version and the schema version it opens",
	usage:   "",
	run:     runVersion,
}

// stamp is the version make release writes in at link time
// (-ldflags "-X github.com/agentrt/agentrt/internal/cli.stamp=v1.2.3"): the
// tag a release is built from, or its commit. Empty in any other build.
var stamp string

// version is the release stamp, else the module version agentrt was built
// from, else "devel".
func version() string {
	if stamp != "" {
		return stamp
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func runVersion(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	p := &printer{w: e.stdout}
	backends := backend.Backends()
	if g.json {
		writeJSON(p, struct {
			Version  string   `json:"version"`
			Schema   int      `json:"schema"`
			Go       string   `json:"go"`
			Backends []string `json:"backends"`
			Schemes  []string `json:"schemes"`
		}{version(), sqlite.SchemaVersion, runtime.Version(), backends, backend.Schemes()})
		return e.done(p, ExitOK)
	}
	p.printf("agentrt %s (database schema %d, %s)\n", version(), sqlite.SchemaVersion, runtime.Version())
	p.printf("backends: %s\n", strings.Join(backends, ", "))
	return e.done(p, ExitOK)
}
