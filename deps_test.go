package agentrt_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
	forbidden := []string{"github.com/jackc/pgx", "github.com/modelcontextprotocol", "go.opentelemetry.io"}
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

// No package of the core module imports OpenTelemetry or a nested module:
// go.mod alone would not catch an import that go.work satisfies. Every Go
// file outside a directory with its own go.mod is parsed for its imports.
func TestDeps_CoreImportsNoNestedModuleOrOpenTelemetry(t *testing.T) {
	forbidden := []string{"go.opentelemetry.io", "github.com/jackc/pgx", "github.com/modelcontextprotocol"}
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
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
