package agentrt_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The SQL implementation is internal (ADR 0011): across every module of
// the repository, only the two backends (sqlite in the core, the postgres
// module) import it.
func TestSeam_OnlyTheBackendsImportTheSQLStore(t *testing.T) {
	const seam = "github.com/agentrt/agentrt/internal/sqlstore"
	var importers []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "testdata" || (strings.HasPrefix(name, ".") && path != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		imports, err := goImports(path)
		if err != nil {
			return err
		}
		if slices.Contains(imports, seam) {
			importers = append(importers, filepath.ToSlash(filepath.Dir(path)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(importers)
	importers = slices.Compact(importers)
	if want := []string{"postgres", "sqlite"}; !slices.Equal(importers, want) {
		t.Fatalf("internal/sqlstore is imported by %v; only %v may (docs/decisions/0011)", importers, want)
	}
}
