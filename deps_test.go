package agentrt_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The core module depends on the SQLite driver and the schema validator (and
// what they bring) and nothing else: heavy dependencies (pgx, the MCP SDK,
// OpenTelemetry, CEL) belong in nested modules.
func TestDeps_CoreModuleStaysLean(t *testing.T) {
	allowed := map[string]bool{
		"modernc.org/sqlite":                       true,
		"github.com/santhosh-tekuri/jsonschema/v6": true,
		"golang.org/x/text":                        true, // the schema validator's messages
	}
	forbidden := []string{"github.com/jackc/pgx", "github.com/modelcontextprotocol", "go.opentelemetry.io",
		"cel.dev/", "github.com/google/cel-go"}
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

// No package of the core module imports CEL, directly or through another
// package, even where go.work would let the build find it: the declarative
// policy lives in policy/cel, and the agentrt CLI reaches it only by running
// agentrt-policy.
func TestDeps_CoreImportsNoCEL(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(gobin, "list", "-deps", "./...")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "cel.dev/") || strings.HasPrefix(pkg, "github.com/google/cel-go") ||
			strings.HasPrefix(pkg, "github.com/agentrt/agentrt/policy/cel") {
			t.Errorf("the core module's packages depend on %s", pkg)
		}
	}
}
