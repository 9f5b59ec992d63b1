package cli

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/internal/buildinfo"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/sqlite"
)

var versionCommand = fromKit(&kitCmd{
	Name:    "version",
	Summary: "print agentrt's version and the schema version it opens",
	Usage:   "",
	Bind:    cliflag.With[*inv, struct{}](nil, runVersion),
})

// version is the release stamp (internal/buildinfo), else the module
// version agentrt was built from, else "devel".
func version() string { return buildinfo.Version() }

func runVersion(x *inv, _ *struct{}, pos []string) int {
	if len(pos) > 0 {
		return x.usageError(x.c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	p := &printer{w: x.stdout}
	backends := backend.Backends()
	if x.g.json {
		writeJSON(p, struct {
			Version  string   `json:"version"`
			Schema   int      `json:"schema"`
			Go       string   `json:"go"`
			Backends []string `json:"backends"`
			Schemes  []string `json:"schemes"`
		}{version(), sqlite.SchemaVersion, runtime.Version(), backends, backend.Schemes()})
		return x.done(p, ExitOK)
	}
	p.printf("agentrt %s (database schema %d, %s)\n", version(), sqlite.SchemaVersion, runtime.Version())
	p.printf("backends: %s\n", strings.Join(backends, ", "))
	return x.done(p, ExitOK)
}
