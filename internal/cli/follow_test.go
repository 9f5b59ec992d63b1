package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/sqlite"
)

// The text and JSON output of follow, over the fixture's hostile runs:
// every run's events in commit order, sanitized like events, and the usage
// errors. Each output is checked to be safe on a terminal.
func TestFollow_GoldenTextAndJSON(t *testing.T) {
	base := newFixture(t)
	loud := func(e *env) { e.progress = func(io.Writer) bool { return true } }
	none := func(*env) {}
	cases := []struct {
		name string
		args func(f *fixture, cursor string) []string
		opt  func(*env)
	}{
		{"follow_once", func(f *fixture, _ string) []string { return []string{"follow", "-once"} }, none},
		{"follow_small.json", func(f *fixture, _ string) []string { return []string{"-json", "follow", "-once", "-run", f.small} }, none},
		{"follow_run", func(f *fixture, _ string) []string { return []string{"follow", "-run", f.cancelled, "-once"} }, none},
		{"follow_run.json", func(f *fixture, _ string) []string { return []string{"follow", "-once", "-run", f.done, "-json"} }, none},
		{"follow_terminal", func(f *fixture, c string) []string { return []string{"follow", "-once", "-run", f.done, "-cursor", c} }, loud},
		{"follow_extra_arg", func(f *fixture, _ string) []string { return []string{"follow", f.done} }, none},
		{"follow_no_db", func(f *fixture, _ string) []string { return []string{"follow", "-once", "-db", ""} }, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base.clone(t)
			cursor := filepath.Join(t.TempDir(), "cursor")
			args := append([]string{"-db", f.path}, c.args(f, cursor)...)
			r := f.runWith(t, c.opt, nil, args...)
			norm := func(s string) string {
				s = strings.ReplaceAll(s, cursor, "$CURSOR")
				return strings.ReplaceAll(s, f.path, "$DB")
			}
			checkGolden(t, c.name, args, r, strings.HasSuffix(c.name, ".json"), norm)
		})
	}
}

// Following with a cursor file prints each event once across invocations:
// the second prints only what committed in between, starting right after
// the first's last seq, and prints nothing when nothing new committed.
func TestFollow_ResumesFromTheCursorWithoutRepeating(t *testing.T) {
	f := newFixture(t).clone(t)
	cursor := filepath.Join(t.TempDir(), "cursor")
	first := f.run(t, nil, "-db", f.path, "-json", "follow", "-once", "-cursor", cursor)
	if first.code != ExitOK {
		t.Fatalf("first follow: %d %s", first.code, first.stderr)
	}
	seqs := func(out string) []int64 {
		var s []int64
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var e struct{ Seq int64 }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%v: %.100s", err, l)
			}
			s = append(s, e.Seq)
		}
		return s
	}
	a := seqs(first.stdout)
	if len(a) == 0 || a[0] != 1 {
		t.Fatalf("first follow printed %v", a)
	}
	if again := f.run(t, nil, "-db", f.path, "follow", "-once", "-cursor", cursor); again.code != ExitOK || again.stdout != "" {
		t.Fatalf("nothing new, yet follow printed %q (exit %d, %s)", again.stdout, again.code, again.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "cancel", f.small, "-by", "op"); r.code != ExitOK {
		t.Fatalf("cancel: %s", r.stderr)
	}
	second := f.run(t, nil, "-db", f.path, "-json", "follow", "-once", "-cursor", cursor)
	b := seqs(second.stdout)
	last := a[len(a)-1]
	if second.code != ExitOK || len(b) == 0 || b[0] != last+1 {
		t.Fatalf("after the cancel, follow printed %v (exit %d), want from %d", b, second.code, last+1)
	}
	if seq, err := (export.FileCursor{Path: cursor}).Load(); err != nil || seq != b[len(b)-1] {
		t.Fatalf("cursor = %d, %v; want %d", seq, err, b[len(b)-1])
	}
}

// A cursor file that does not hold a seq is refused before anything is
// printed, rather than read as "start over".
func TestFollow_RefusesAGarbageCursor(t *testing.T) {
	f := newFixture(t).clone(t)
	cursor := filepath.Join(t.TempDir(), "cursor")
	if err := os.WriteFile(cursor, []byte("twelve"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, nil, "-db", f.path, "follow", "-once", "-cursor", cursor)
	if r.code != ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, "not a seq") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// signalWriter is a stderr that tells the test when follow says it has
// caught up.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	caught chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "caught up at seq") {
		w.once.Do(func() { close(w.caught) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Ctrl-C (SIGINT to the process) stops a follow that is waiting for new
// events: it exits 0 with the cursor saved at the head it printed, and
// says so on a terminal.
func TestFollow_CtrlCStopsCleanlyWithTheCursorSaved(t *testing.T) {
	f := newFixture(t).clone(t)
	cursor := filepath.Join(t.TempDir(), "cursor")
	var out bytes.Buffer
	errw := &signalWriter{caught: make(chan struct{})}
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: errw, getenv: func(string) string { return "" },
		interactive: func(io.Reader) bool { return false }, progress: func(io.Writer) bool { return true }, prog: "agentrt"}
	done := make(chan int, 1)
	go func() { done <- e.run([]string{"-db", f.path, "follow", "-cursor", cursor}) }()
	select {
	case <-errw.caught:
	case code := <-done:
		t.Fatalf("follow ended with %d before catching up: %s", code, errw.String())
	case <-time.After(60 * time.Second):
		t.Fatal("follow never said it caught up")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("follow did not stop on SIGINT")
	}
	st, err := sqlite.OpenExisting(f.path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	head, hash, err := st.ChainHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.ListEventsAfter(context.Background(), "", head-1, 1)
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	seq, err := (export.FileCursor{Path: cursor}).Load()
	if code != ExitOK || err != nil || seq != head {
		t.Fatalf("exit %d, cursor %d (%v), head %d; stderr %s", code, seq, err, head, errw.String())
	}
	if want := fmt.Sprintf("stopped at seq %d, of run %s (the run's hash there %s)", head, evs[0].RunID, hash); !strings.Contains(errw.String(), want) {
		t.Fatalf("stderr %q does not say %q", errw.String(), want)
	}
	if n := strings.Count(out.String(), "\n"); int64(n) != head {
		t.Fatalf("printed %d lines for %d events", n, head)
	}
}
