package house_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/house"
)

// The allowlists under testdata/allow hold today's exceptions to a house
// rule, one a line. They may only shrink: a test fails both for a new
// offender and for a listed line that no longer offends (its message says
// which line to remove). To refresh them after a merge:
//
//	go test ./internal/house -update        # drops the lines no longer needed
//	go test ./internal/house -update -grow  # also adds today's new offenders
//
// -grow is for the coordinator taking in a merge knowingly; review its diff.
var (
	update = flag.Bool("update", false, "rewrite testdata/allow, removing every line no longer needed")
	grow   = flag.Bool("grow", false, "with -update, also add every new offender to testdata/allow")
)

// tree is the checkout, read and parsed once for every test here.
var tree *house.Tree

func TestMain(m *testing.M) {
	flag.Parse()
	root, err := house.FindRoot(".")
	if err == nil {
		tree, err = house.Load(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// allowlist is one checked-in list: its header comment and its lines.
type allowlist struct {
	path   string
	header []string
	items  []string
}

func readAllowlist(t *testing.T, name string) *allowlist {
	t.Helper()
	a := &allowlist{path: filepath.Join("testdata", "allow", name)}
	src, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatalf("read the allowlist: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#"):
			a.header = append(a.header, line)
		case line != "":
			a.items = append(a.items, line)
		}
	}
	return a
}

func (a *allowlist) write(t *testing.T, items []string) {
	t.Helper()
	sort.Strings(items)
	var b strings.Builder
	for _, h := range a.header {
		b.WriteString(h + "\n")
	}
	for _, it := range items {
		b.WriteString(it + "\n")
	}
	if err := os.WriteFile(a.path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// holdAllowlist fails for every offender the allowlist does not name and
// every line of it that no longer offends; with -update it rewrites the
// list instead (adding offenders only with -grow). why says what an
// offender breaks.
func holdAllowlist(t *testing.T, name string, offenders []string, why func(string) string) {
	t.Helper()
	a := readAllowlist(t, name)
	listed := map[string]bool{}
	for _, it := range a.items {
		if listed[it] {
			t.Errorf("internal/house/%s lists %q twice: remove one line", a.path, it)
		}
		listed[it] = true
	}
	var keep, added []string
	for _, o := range offenders {
		if listed[o] {
			keep = append(keep, o)
			delete(listed, o)
		} else {
			added = append(added, o)
		}
	}
	if *update {
		if *grow {
			keep = append(keep, added...)
			added = nil
		}
		a.write(t, slices.Compact(slices.Sorted(slices.Values(keep))))
		listed = nil
	}
	for _, o := range added {
		t.Errorf("%s (internal/house/%s takes no new lines)", why(o), a.path)
	}
	for _, it := range slices.Sorted(func(yield func(string) bool) {
		for k := range listed {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Errorf("%q no longer needs its place: remove the line %q from internal/house/%s (or run go test ./internal/house -update)", it, it, a.path)
	}
}

// Files stay at or under 700 lines (outside _test.go, testdata and
// generated files), except the ones testdata/allow/long-files.txt lists.
func TestHouse_FilesStayWithin700Lines(t *testing.T) {
	longs := tree.LongFiles()
	lines := map[string]int{}
	var keys []string
	for _, l := range longs {
		keys = append(keys, l.Key)
		lines[l.Key] = l.Lines
	}
	if len(tree.Product()) < 300 {
		t.Fatalf("measured only %d files: the walk from %s missed the tree", len(tree.Product()), tree.Root)
	}
	holdAllowlist(t, "long-files.txt", keys, func(k string) string {
		return fmt.Sprintf("%s has %d lines, over the house's %d: split it by concern", k, lines[k], house.MaxFileLines)
	})
}

// Functions stay at or under 80 lines (top-level declarations in product
// and test-support files, as shape.sh counts), except the ones
// testdata/allow/long-funcs.txt lists.
func TestHouse_FunctionsStayWithin80Lines(t *testing.T) {
	longs := tree.LongFuncs()
	at := map[string]house.Long{}
	var keys []string
	for _, l := range longs {
		keys = append(keys, l.Key)
		at[l.Key] = l
	}
	holdAllowlist(t, "long-funcs.txt", keys, func(k string) string {
		l := at[k]
		file, fn, _ := strings.Cut(k, " ")
		return fmt.Sprintf("%s:%d: %s has %d lines, over the house's %d: split it", file, l.Line, fn, l.Lines, house.MaxFuncLines)
	})
}
