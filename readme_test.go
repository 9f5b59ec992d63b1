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
