package cli

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/internal/buildinfo"
	"github.com/agentrt/agentrt/sqlite"
)

var versionCommand = &command{
	name:    "version",
	summary: "print agentrt's version and the schema version it opens",
	usage:   "",
	run:     runVersion,
}

// version is the release stamp (internal/buildinfo), else the module
// version agentrt was built from, else "devel".
func version() string { return buildinfo.Version() }

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
