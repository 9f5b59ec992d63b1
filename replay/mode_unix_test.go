//go:build unix

package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt"
)

// Under umask 0 the Recorder still creates its directories 0700 and its
// files 0600, and a symbolic link planted at any predictable path (a temp
// name derived from the key, or the target itself) is never written through.
func TestRecorder_WritesOwnerOnlyThroughItsOwnFile(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	base := t.TempDir()
	parent := filepath.Join(base, "recordings")
	dir := filepath.Join(parent, "session")
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := &Scripted{Responses: []agentrt.ModelResponse{{Text: "one"}, {Text: "two"}, {Text: "three"}}}
	rec := &Recorder{Inner: inner, Dir: dir}
	ctx := context.Background()
	if _, err := rec.Generate(ctx, textRequest("a")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{parent, dir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}

	keyA, _ := Key("scripted", textRequest("a"))
	keyB, _ := Key("scripted", textRequest("b"))
	planted := []string{
		keyB + ".json", keyB + ".tmp", keyB + ".json.tmp", "." + keyB + ".json.tmp",
		keyA + ".2.json", keyA + ".2.json.tmp", ".recording-.tmp", ".recording.tmp",
	}
	for _, p := range planted {
		if err := os.Symlink(victim, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rec.Generate(ctx, textRequest("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Generate(ctx, textRequest("a")); err != nil {
		t.Fatal(err)
	}

	if data, _ := os.ReadFile(victim); string(data) != "untouched" {
		t.Fatalf("the victim was written through a planted link: %q", data)
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o644 {
		t.Fatalf("the victim's mode changed to %v", fi.Mode().Perm())
	}
	for _, name := range []string{keyA + ".json", keyB + ".json", keyA + ".2.json"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v; want a regular file with mode 0600", name, fi.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".recording-") && e.Type()&os.ModeSymlink == 0 {
			t.Fatalf("a temporary file was left behind: %s", e.Name())
		}
	}
	if inner.Calls() != 3 {
		t.Fatalf("calls = %d", inner.Calls())
	}
}

// A directory group or others can write is refused before a call is paid for.
func TestRecorder_RefusesADirectoryOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	inner := &Scripted{Responses: []agentrt.ModelResponse{{Text: "x"}}}
	_, err := (&Recorder{Inner: inner, Dir: dir}).Generate(context.Background(), textRequest("a"))
	if !errors.Is(err, ErrUnsafeDir) || inner.Calls() != 0 {
		t.Fatalf("err = %v, calls = %d", err, inner.Calls())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("something was written: %v", entries)
	}
}
