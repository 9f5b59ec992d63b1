package house_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// architecture reads docs/architecture.md's sections by their "## " title.
func architecture(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(tree.Root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]string{}
	title := ""
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "## ") {
			title = strings.TrimPrefix(line, "## ")
			continue
		}
		sections[title] = append(sections[title], line)
	}
	return sections
}

var backticked = regexp.MustCompile("`([^`]+)`")

// tableCells is, for each table row of a section, its cells.
func tableCells(lines []string) [][]string {
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") {
			continue
		}
		rows = append(rows, strings.Split(strings.Trim(l, "|"), "|"))
	}
	return rows
}

// firstNames is the backticked names of each row's first cell that has any.
func firstNames(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, cells := range tableCells(lines) {
		for _, c := range cells {
			if m := backticked.FindAllStringSubmatch(c, -1); m != nil {
				for _, n := range m {
					out[n[1]] = cells
				}
				break
			}
		}
	}
	return out
}

// sameSet fails for every name only one side holds.
func sameSet(t *testing.T, what string, tree []string, doc map[string][]string) {
	t.Helper()
	for _, n := range tree {
		if _, ok := doc[n]; !ok {
			t.Errorf("docs/architecture.md's %s has no row for %s: add one", what, n)
		}
		delete(doc, n)
	}
	var stale []string
	for n := range doc {
		stale = append(stale, n)
	}
	sort.Strings(stale)
	for _, n := range stale {
		t.Errorf("docs/architecture.md's %s names %s, which the tree does not hold: remove or rename its row", what, n)
	}
}

// modules reads go.work's use lines, "." for the root module.
func modules(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(tree.Root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(\.(?:/[\w./-]+)?)\s*$`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, path.Clean(m[1]))
	}
	if len(out) < 5 {
		t.Fatalf("read only %d modules from go.work", len(out))
	}
	return out
}

// moduleOf is the go.work module a package directory belongs to.
func moduleOf(mods []string, dir string) string {
	best := "."
	for _, m := range mods {
		if m != "." && (dir == m || strings.HasPrefix(dir, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// docs/architecture.md's module map has one row for each module go.work
// uses, and none for a module that is gone.
func TestHouse_ModuleMapNamesEveryModule(t *testing.T) {
	doc := map[string][]string{}
	for _, cells := range tableCells(architecture(t)["Modules"]) {
		if m := backticked.FindStringSubmatch(cells[0]); m != nil {
			name := strings.TrimPrefix(strings.TrimPrefix(m[1], "github.com/agentrt/agentrt"), "/")
			doc[cmpOr(name, ".")] = cells
		}
	}
	sameSet(t, "module map", modules(t), doc)
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// docs/architecture.md's package map has a row for every package directory
// of every module (the root package's files have the code map), names no
// directory that is gone, and puts each nested module's package under its
// own module.
func TestHouse_CodeMapNamesEveryPackage(t *testing.T) {
	doc := firstNames(architecture(t)["Packages"])
	mods := modules(t)
	for dir, cells := range doc {
		if len(cells) == 3 && strings.TrimSpace(cells[0]) != moduleOf(mods, dir) {
			t.Errorf("docs/architecture.md puts %s in the %s module; it is in %s", dir, strings.TrimSpace(cells[0]), moduleOf(mods, dir))
		}
	}
	dirs := slices.DeleteFunc(tree.PackageDirs(), func(d string) bool { return d == "." })
	if len(dirs) < 50 {
		t.Fatalf("found only %d package directories", len(dirs))
	}
	sameSet(t, "package map", dirs, doc)
}

// docs/architecture.md's code map names only root files that exist (that
// it names every one is TestArchitecture_CodeMapNamesEveryRootFile's).
func TestHouse_CodeMapNamesNoRootFileThatIsGone(t *testing.T) {
	files := tree.RootFiles()
	for name := range firstNames(architecture(t)["Code map"]) {
		if files[name] == nil {
			t.Errorf("docs/architecture.md's code map has a row for %s, which the root package no longer holds: remove it", name)
		}
	}
}

// docs/architecture.md's map of the proxy names every file of the proxy
// package, and none that is gone.
func TestHouse_ProxyMapNamesEveryProxyFile(t *testing.T) {
	var files []string
	for _, f := range tree.Files {
		if f.Dir() == "proxy" && !f.Test {
			files = append(files, path.Base(f.Path))
		}
	}
	sameSet(t, "map of the proxy (## The proxy's files)", files, firstNames(architecture(t)["The proxy's files"]))
}
