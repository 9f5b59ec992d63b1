package agentrt_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// The core module depends on the SQLite driver and the schema validator (and
// what they bring) and nothing else: heavy dependencies (pgx, the MCP SDK,
// OpenTelemetry) belong in nested modules.
func TestDeps_CoreModuleStaysLean(t *testing.T) {
	allowed := map[string]bool{
		"modernc.org/sqlite":                       true,
		"github.com/santhosh-tekuri/jsonschema/v6": true,
		"golang.org/x/text":                        true, // the schema validator's messages
	}
	forbidden := []string{"github.com/jackc/pgx", "github.com/modelcontextprotocol", "go.opentelemetry.io",
		// what the MCP SDK brings, which the mcp module holds
		"github.com/google/jsonschema-go", "github.com/segmentio/encoding", "github.com/yosida95/uritemplate", "golang.org/x/oauth2"}
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inRequire := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "require ("):
			inRequire = true
			continue
		case inRequire && line == ")":
			inRequire = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inRequire:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		mod := fields[0]
		for _, bad := range forbidden {
			if strings.HasPrefix(mod, bad) {
				t.Errorf("the core module requires %s", mod)
			}
		}
		if !strings.Contains(line, "// indirect") && !allowed[mod] {
			t.Errorf("the core module requires %s directly; add heavy dependencies in a nested module", mod)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
