package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// entry is the pinned filesystem server `make mcp-servers` installs. A
// missing install fails, never skips.
func entry(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	e := filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(defaultEntry))
	if _, err := os.Stat(e); err != nil {
		t.Fatalf("the pinned filesystem server is not installed (%v): run `make mcp-servers`", err)
	}
	return e
}

// isolate points the per-user cache directory at a fresh directory.
func isolate(t *testing.T) paths {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HOME", home)
	p, err := defaultPaths()
	if err != nil {
		t.Fatal(err)
	}
	must(t, strings.HasPrefix(p.dir, home), "the cache directory %s is not under %s", p.dir, home)
	return p
}

func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errb)
	return out.String() + errb.String(), code
}

// End to end against the real filesystem server: pin, run (the read is
// allowed, the write waits), the operator approves the exact request,
// resume, and the file is written exactly once with the approved content.
// A second resume of the finished run is refused and writes nothing.
func TestRun_WriteWaitsForApprovalThenResumesOnce(t *testing.T) {
	p := isolate(t)
	e := entry(t)
	out, code := run(t, "pin", "-entry", e)
	must(t, code == 0, "pin: %s", out)
	note := filepath.Join(p.sandbox, "notes.txt")

	out, code = run(t, "run", "-entry", e)
	must(t, code == 0 && strings.Contains(out, string(agentrt.RunWaiting)), "run: %s", out)
	_, err := os.Stat(note)
	must(t, os.IsNotExist(err), "the write ran before it was approved: %v", err)

	ctx := context.Background()
	store, err := sqlite.Open(p.db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := store.ListRuns(ctx)
	must(t, err == nil && len(runs) == 1, "runs: %v %v", runs, err)
	id := runs[0].ID
	approvals, err := store.ListApprovals(ctx, id)
	must(t, err == nil && len(approvals) == 1, "approvals: %v %v", approvals, err)
	a := approvals[0]
	must(t, a.Request.Spec.Name == "fs_write_file" && strings.Contains(string(a.Request.Args), "notes.txt"), "the approval is for %s %s", a.Request.Spec.Name, a.Request.Args)
	// What `agentrt approve` does: decide bound to the hash it showed.
	if err := agentrt.ApproveShown(ctx, store, nil, id, a.ID, a.Hash, "test", "looks right"); err != nil {
		t.Fatal(err)
	}
	store.Close()

	out, code = run(t, "run", "-entry", e, "-resume", id)
	must(t, code == 0 && strings.Contains(out, string(agentrt.RunCompleted)), "resume: %s", out)
	b, err := os.ReadFile(note)
	must(t, err == nil && string(b) == noteText, "notes.txt = %q, %v", b, err)

	store, err = sqlite.Open(p.db)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := store.ListSteps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	reads, writes := 0, 0
	for _, s := range steps {
		if s.Decision == nil || s.Observation == nil || s.Observation.Kind != agentrt.ObsToolResult {
			continue
		}
		switch s.Decision.Tool {
		case "fs_read_text_file":
			reads++
		case "fs_write_file":
			writes++
		}
	}
	must(t, reads == 1 && writes == 1, "reads %d, writes %d; want one each", reads, writes)

	if err := os.WriteFile(note, []byte("changed by hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = run(t, "run", "-entry", e, "-resume", id)
	must(t, code != 0, "a second resume of a finished run succeeded: %s", out)
	b, _ = os.ReadFile(note)
	must(t, string(b) == "changed by hand\n", "the second resume wrote again: %q", b)
}

// The sandbox and the example's directory are 0700, the README and rules
// 0600, the manifest 0600; a README already there is never overwritten.
func TestPrepare_CreatesOwnerOnlyFiles(t *testing.T) {
	p := isolate(t)
	if err := prepare(p); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{p.dir: 0o700, p.sandbox: 0o700, p.rules: 0o600, filepath.Join(p.sandbox, "README.md"): 0o600} {
		fi, err := os.Stat(path)
		must(t, err == nil && fi.Mode().Perm() == want, "%s: %v %v, want %o", path, fi.Mode(), err, want)
	}
	readmePath := filepath.Join(p.sandbox, "README.md")
	if err := os.WriteFile(readmePath, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepare(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readmePath)
	must(t, string(b) == "mine", "prepare overwrote the README")
}

// run without a manifest says to pin first.
func TestRun_WithoutAManifestSaysToPinFirst(t *testing.T) {
	isolate(t)
	out, code := run(t, "run", "-entry", entry(t))
	must(t, code == 1 && strings.Contains(out, "examples/mcp pin"), "run: %d %s", code, out)
}
