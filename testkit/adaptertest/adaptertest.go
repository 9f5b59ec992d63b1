package adaptertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
)

// Wait bounds every wait on another goroutine or process.
const Wait = time.Minute

// Notes is the note file the adapters' tools read, append to and delete,
// with a count of each tool's runs.
type Notes struct {
	Path string
	runs sync.Map // tool name -> *atomic.Int32
	// ReadHold, when set, is waited on by Read before it reads.
	ReadHold func() error
	// AfterAppend, when set, is called once Append wrote its line.
	AfterAppend func()
	// OnCall, when set, is called first in each tool with its name.
	OnCall func(tool string)
}

// NewNotes is the note in dir, holding "first line\n" unless it exists.
func NewNotes(dir string) (*Notes, error) {
	n := &Notes{Path: filepath.Join(dir, "note.txt")}
	if _, err := os.Stat(n.Path); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(n.Path, []byte("first line\n"), 0o600); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// TempNotes is a fresh note in t.TempDir(); an error fails t.
func TempNotes(t testing.TB) *Notes {
	t.Helper()
	n, err := NewNotes(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckWriteSkipped reports on t unless read_note ran once and append_note
// never, the note holding its first line only: a hook answered the write
// itself and let the read run.
func (n *Notes) CheckWriteSkipped(t testing.TB) {
	t.Helper()
	if got := n.Count("read_note"); got != 1 {
		t.Errorf("read_note ran %d times, want 1", got)
	}
	if got := n.Count("append_note"); got != 0 {
		t.Errorf("append_note ran %d times, want 0: the hook's answer must skip it", got)
	}
	if got := n.Text(t); got != "first line\n" {
		t.Errorf("the note is %q, want it unchanged", got)
	}
}

// Count is how often the named tool ran.
func (n *Notes) Count(tool string) int32 {
	v, _ := n.runs.LoadOrStore(tool, new(atomic.Int32))
	return v.(*atomic.Int32).Load()
}

// Ran counts one run of the named tool, after OnCall.
func (n *Notes) Ran(tool string) {
	if n.OnCall != nil {
		n.OnCall(tool)
	}
	v, _ := n.runs.LoadOrStore(tool, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
}

// Read is read_note: the note's text, after ReadHold.
func (n *Notes) Read() (string, error) {
	n.Ran("read_note")
	if n.ReadHold != nil {
		if err := n.ReadHold(); err != nil {
			return "", err
		}
	}
	b, err := os.ReadFile(n.Path)
	return string(b), err
}

// Append is append_note: text as a new line, then AfterAppend.
func (n *Notes) Append(text string) error {
	n.Ran("append_note")
	f, err := os.OpenFile(n.Path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text + "\n")
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	if n.AfterAppend != nil {
		n.AfterAppend()
	}
	return nil
}

// Delete is the delete tool named tool: the note is emptied.
func (n *Notes) Delete(tool string) error {
	n.Ran(tool)
	return os.WriteFile(n.Path, nil, 0o600)
}

// Text is the note's text now.
func (n *Notes) Text(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(n.Path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Events is an Observer that signals the first event of each type, and
// every event to AwaitStatus.
type Events struct {
	mu   sync.Mutex
	ch   map[agentrt.EventType]chan struct{}
	tick chan struct{} // closed at the next event
}

// On is closed at the first event of type typ.
func (e *Events) On(typ agentrt.EventType) <-chan struct{} { return e.on(typ) }

func (e *Events) on(typ agentrt.EventType) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = map[agentrt.EventType]chan struct{}{}
	}
	if e.ch[typ] == nil {
		e.ch[typ] = make(chan struct{})
	}
	return e.ch[typ]
}

// Observe is the agentrt.Observer.
func (e *Events) Observe(ev agentrt.Event) {
	c := e.on(ev.Type)
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
	if e.tick != nil {
		close(e.tick)
		e.tick = nil
	}
}

// next is closed at the next event.
func (e *Events) next() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tick == nil {
		e.tick = make(chan struct{})
	}
	return e.tick
}

// AwaitStatus fails t unless run runID is in status within Wait. It reads
// the run at once and again after each event (an observer hears an event
// after its commit), so it never sleeps and it does not matter which
// event moved the run: a pending approval that pauses a run with nothing
// in flight moves it with approval.requested, one that comes while a
// sibling runs moves it with run.waiting at the sibling's end.
func (e *Events) AwaitStatus(t testing.TB, st agentrt.StoreReader, runID string, status agentrt.RunStatus) {
	t.Helper()
	deadline := time.After(Wait)
	for {
		next := e.next()
		run, err := st.GetRun(context.Background(), runID)
		if err == nil && run.Status == status {
			return
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("run %s is %s after %s, want %s (%v)", runID, run.Status, Wait, status, err)
		}
	}
}

// Await fails t unless an event of type typ is heard within Wait.
func (e *Events) Await(t testing.TB, typ agentrt.EventType) {
	t.Helper()
	select {
	case <-e.On(typ):
	case <-time.After(Wait):
		t.Fatalf("no %s event within %s", typ, Wait)
	}
}

// Approvals lists run runID's approvals of one status, or ("") all.
func Approvals(t testing.TB, st agentrt.StoreReader, runID string, status agentrt.ApprovalStatus) []agentrt.Approval {
	t.Helper()
	all, err := st.ListApprovals(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentrt.Approval
	for _, a := range all {
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	return out
}

// Pending is run runID's one pending approval; any other number fails t.
func Pending(t testing.TB, st agentrt.StoreReader, runID string) agentrt.Approval {
	t.Helper()
	p := Approvals(t, st, runID, agentrt.ApprovalPending)
	if len(p) != 1 {
		t.Fatalf("run %s has %d pending approvals, want 1: %+v", runID, len(p), p)
	}
	return p[0]
}

// Recv is the next value on ch; none within Wait fails t, naming what.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return enginekit.Recv(t, ch, what, Wait)
}
