package notify_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/sqlite"
)

var secret = []byte("0123456789abcdef0123456789abcdef-notify")

// sink is a receiving server: it verifies each notification and answers
// with the next status of its script (200 once the script is spent).
type sink struct {
	t        *testing.T
	srv      *httptest.Server
	receiver *notify.Receiver

	mu       sync.Mutex
	script   []int
	got      []notify.Notification
	requests int
	raw      []captured
}

type captured struct {
	header http.Header
	body   []byte
	path   string
}

func newSink(t *testing.T, clock *fixture.Clock, script ...int) *sink {
	t.Helper()
	rc, err := notify.NewReceiver(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.Now = clock.Now
	s := &sink{t: t, receiver: rc, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests++
	s.raw = append(s.raw, captured{header: r.Header.Clone(), body: body, path: r.URL.RequestURI()})
	status := http.StatusOK
	if len(s.script) > 0 {
		status, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	n, err := s.receiver.Verify(r)
	if err != nil {
		s.t.Errorf("the sink could not verify a notification: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if status == http.StatusOK {
		s.mu.Lock()
		s.got = append(s.got, n)
		s.mu.Unlock()
	}
	w.WriteHeader(status)
}

func (s *sink) notifications() []notify.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notify.Notification(nil), s.got...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// runner runs a notifier until it is idle, then stops it.
type runner struct {
	t      *testing.T
	cfg    notify.Config
	sleeps []time.Duration
	mu     sync.Mutex
	stderr strings.Builder
}

func newRunner(t *testing.T, f *fixture.Fixture, targets ...notify.Target) *runner {
	t.Helper()
	ro, err := sqlite.OpenExisting(f.Path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	r := &runner{t: t}
	r.cfg = notify.Config{Store: ro, Targets: targets, Cursor: export.FileCursor{Path: filepath.Join(t.TempDir(), "cursor")},
		Now: f.Clock.Now, Interval: time.Millisecond, Stderr: lockedWriter{r},
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			r.sleeps = append(r.sleeps, d)
			r.mu.Unlock()
			return ctx.Err()
		}}
	return r
}

type lockedWriter struct{ r *runner }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.stderr.Write(p)
}

func (r *runner) deadLetters() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range strings.Split(r.stderr.String(), "\n") {
		if strings.HasPrefix(l, "notify: dead letter:") {
			out = append(out, l)
		}
	}
	return out
}

// untilIdle runs one notifier until everything committed is answered,
// stops it, and returns the cursor's seq.
func (r *runner) untilIdle() int64 {
	r.t.Helper()
	idle := make(chan int64, 1)
	cfg := r.cfg
	cfg.Idle = func(seq int64) {
		select {
		case idle <- seq:
		default:
		}
	}
	n, err := notify.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var seq int64
	select {
	case seq = <-idle:
	case err := <-done:
		cancel()
		r.t.Fatalf("Run returned before it was idle: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		r.t.Fatalf("Run: %v", err)
	}
	return seq
}
