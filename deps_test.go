package agentrt_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// coreDirect is the core module's whole set of direct dependencies, each
// with why the core needs it. SECURITY.md names the same set.
var coreDirect = map[string]string{
	"github.com/santhosh-tekuri/jsonschema/v6": "validates arguments against a tool's schema",
	"modernc.org/sqlite":                       "the embedded store",
	"golang.org/x/text":                        "the printer the schema validator's messages are rendered with",
}

// requires reads go.mod's require lines: every module, and the direct ones.
func requires(t *testing.T) (all, direct []string) {
	t.Helper()
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
		all = append(all, fields[0])
		if !strings.Contains(line, "// indirect") {
			direct = append(direct, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(direct)
	return all, direct
}

func wantDirect() []string {
	var want []string
	for mod := range coreDirect {
		want = append(want, mod)
	}
	slices.Sort(want)
	return want
}

// The core module depends directly on exactly the modules in coreDirect:
// one more is refused, and so is one fewer, so the list (and SECURITY.md,
// which the next test holds to it) cannot go stale. Heavy dependencies
// (pgx, the MCP SDK, OpenTelemetry) belong in nested modules.
func TestDeps_CoreModuleStaysLean(t *testing.T) {
	forbidden := []string{"github.com/jackc/pgx", "github.com/modelcontextprotocol", "go.opentelemetry.io",
		// what the MCP SDK brings, which the mcp module holds
		"github.com/google/jsonschema-go", "github.com/segmentio/encoding", "github.com/yosida95/uritemplate", "golang.org/x/oauth2"}
	all, direct := requires(t)
	for _, mod := range all {
		for _, bad := range forbidden {
			if strings.HasPrefix(mod, bad) {
				t.Errorf("the core module requires %s", mod)
			}
		}
	}
	if want := wantDirect(); !slices.Equal(direct, want) {
		t.Errorf("go.mod's direct dependencies are %q, want exactly %q; add heavy dependencies in a nested module, and update coreDirect and SECURITY.md together", direct, want)
	}
}

// SECURITY.md states how many direct dependencies the core module has and
// names each one, and both agree with go.mod.
func TestDeps_SecurityNamesExactlyTheDirectSet(t *testing.T) {
	_, direct := requires(t)
	doc, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	m := regexp.MustCompile(`(?s)has exactly (\w+) direct\s+dependencies(.*?)\n\n`).FindSubmatch(doc)
	if m == nil {
		t.Fatal(`SECURITY.md does not say "has exactly N direct dependencies" in a paragraph naming them`)
	}
	if len(direct) >= len(words) || string(m[1]) != words[len(direct)] {
		t.Errorf("SECURITY.md says exactly %s direct dependencies; go.mod has %d: %q", m[1], len(direct), direct)
	}
	named := regexp.MustCompile("`([a-z0-9.]+\\.[a-z]+/[^`]+)`").FindAllSubmatch(m[2], -1)
	var got []string
	for _, n := range named {
		got = append(got, string(n[1]))
	}
	slices.Sort(got)
	if !slices.Equal(got, direct) {
		t.Errorf("SECURITY.md names %q as the direct dependencies; go.mod has %q", got, direct)
	}
}

// No package of the core module imports a nested module or pgx, even
// through go.work, which would let such an import build here while a
// consumer of the core alone could not build it: the CLI opens Postgres
// through the opener registry the postgres module's own main fills.
func TestDeps_CoreImportsNoNestedModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	nested := []string{"github.com/agentrt/agentrt/postgres", "github.com/agentrt/agentrt/mcp", "github.com/agentrt/agentrt/examples/mcp",
		"github.com/jackc/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range nested {
			if pkg == bad || strings.HasPrefix(pkg, strings.TrimSuffix(bad, "/")+"/") {
				t.Errorf("the core module imports %s", pkg)
			}
		}
	}
}
