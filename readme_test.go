package agentrt_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's first example is a whole program that builds as shown:
// examples/readme holds the same text (below its doc comment), and the
// built program runs the path the README says it prints.
func TestReadme_ExampleBuildsAndRunsAsShown(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-example -->\n```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- readme-example --> go block")
	}
	src, err := os.ReadFile(filepath.Join("examples", "readme", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	prog := string(src)
	prog = prog[strings.Index(prog, "package main"):]
	if string(m[1]) != prog {
		t.Fatal("the README's example differs from examples/readme/main.go: copy one over the other")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "readme")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/readme").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/readme: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	want := "WAITING_FOR_APPROVAL\nupload_file {\"path\":\"notes.txt\"}\nCOMPLETED {\"shared\":true}\n"
	if string(out) != want {
		t.Fatalf("the example printed\n%s\nwant\n%s", out, want)
	}
}

// docs/architecture.md's code map names every file of the root package, so
// a newcomer finds each one there, and every ADR it cites exists.
func TestArchitecture_CodeMapNamesEveryRootFile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		n++
		if !strings.Contains(string(doc), "| `"+f+"` |") {
			t.Errorf("docs/architecture.md's code map has no row for %s", f)
		}
	}
	if n < 30 {
		t.Fatalf("found only %d root files", n)
	}
	for _, m := range regexp.MustCompile(`ADR (\d{4})`).FindAllStringSubmatch(string(doc), -1) {
		if adrs, _ := filepath.Glob(filepath.Join("docs", "decisions", m[1]+"-*.md")); len(adrs) != 1 {
			t.Errorf("docs/architecture.md cites ADR %s, which docs/decisions does not hold", m[1])
		}
	}
}
