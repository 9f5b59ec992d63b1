package agentrt_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// coreDirect is the core module's whole set of direct dependencies, each
// with why the core needs it. SECURITY.md names the same set.
var coreDirect = map[string]string{
	"github.com/santhosh-tekuri/jsonschema/v6": "validates arguments against a tool's schema",
	"modernc.org/sqlite":                       "the embedded store",
	"golang.org/x/text":                        "the printer the schema validator's messages are rendered with",
	"golang.org/x/mod":                         "sumdb/tlog and sumdb/note: the checkpoints' Merkle tree and signed notes (docs/decisions/0015)",
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
		"github.com/google/jsonschema-go", "github.com/segmentio/encoding", "github.com/yosida95/uritemplate", "golang.org/x/oauth2",
		"cel.dev/", "github.com/google/cel-go",
		// the console's ceremonies and its browser tests
		"github.com/go-webauthn/", "github.com/chromedp/"}
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

// No package of the core module imports OpenTelemetry or a nested module:
// go.mod alone would not catch an import that go.work satisfies. Every Go
// file outside a directory with its own go.mod is parsed for its imports.
func TestDeps_CoreImportsNoNestedModuleOrOpenTelemetry(t *testing.T) {
	forbidden := []string{"go.opentelemetry.io", "github.com/jackc/pgx", "github.com/modelcontextprotocol", "cel.dev/", "github.com/google/cel-go",
		"github.com/go-webauthn/", "github.com/chromedp/"}
	nested := map[string]bool{}
	// walk visits the core module's files: a directory with its own go.mod
	// is a nested module, recorded and skipped.
	walk := func(file func(path string) error) error {
		return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return file(path)
			}
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				nested["github.com/agentrt/agentrt/"+filepath.ToSlash(path)] = true
				return filepath.SkipDir
			}
			return nil
		})
	}
	if err := walk(func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := walk(func(path string) error {
		imports, err := goImports(path)
		if err != nil {
			return err
		}
		for _, p := range imports {
			for _, bad := range forbidden {
				if strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s", path, p)
				}
			}
			for mod := range nested {
				if p == mod || strings.HasPrefix(p, mod+"/") {
					t.Errorf("%s imports the nested module %s", path, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !nested["github.com/agentrt/agentrt/export/otel"] {
		t.Fatal("export/otel was not found as a nested module; the walk is not looking where it should")
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

// goImports lists the import paths of the Go file at path; none for a file
// that is not Go source.
func goImports(path string) ([]string, error) {
	if !strings.HasSuffix(path, ".go") {
		return nil, nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(f.Imports))
	for i, im := range f.Imports {
		paths[i], _ = strconv.Unquote(im.Path.Value)
	}
	return paths, nil
}
