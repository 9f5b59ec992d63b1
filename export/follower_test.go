package export_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/scripted"
)

// Four runs of a real driver, two of them concurrent so their events
// interleave in the chain, are delivered in seq order, each event once,
// exactly as the store lists them; with RunID only that run's events come.
func TestFollower_DeliversEveryRunInCommitOrder(t *testing.T) {
	st, path := newDB(t)
	ctx := context.Background()
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read", InputSchema: []byte(`{"type":"object"}`),
			SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: []byte(`{"ok":true}`), Summary: "read"}, nil
		},
	}
	start := func() (agentrt.Run, error) {
		d, err := agentrt.NewDriver(agentrt.Config{
			EngineConfig: agentrt.EngineConfig{
				Store:  st,
				Policy: agentrt.DefaultPolicy(),
				Tools:  []agentrt.Tool{tool},
			},
			Agent: &scripted.Agent{Decisions: []agentrt.Decision{
				scripted.ToolCall("read", `{}`, "look"), scripted.ToolCall("read", `{}`, "again"), scripted.Complete(`{}`)}},
		})
		if err != nil {
			return agentrt.Run{}, err
		}
		return d.Start(ctx, "read twice", agentrt.DefaultLimits())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := start()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids = append(ids, r.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	all, err := st.ListEvents(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ro := openRO(t, path)
	var c collector
	f := export.Follower{Store: ro, PageSize: 7, Once: true}
	if err := f.Follow(ctx, c.sink); err != nil {
		t.Fatal(err)
	}
	if !equal(c.got(), span(1, int64(len(all)))) {
		t.Fatalf("delivered %v, want 1..%d", c.got(), len(all))
	}
	for i, e := range c.evs {
		if e.RunID != all[i].RunID || e.Type != all[i].Type || string(e.Payload) != string(all[i].Payload) || !e.At.Equal(all[i].At) {
			t.Fatalf("event %d delivered as %+v, stored as %+v", e.Seq, e, all[i])
		}
	}
	runs := map[string]bool{}
	for _, e := range c.evs {
		runs[e.RunID] = true
	}
	if len(runs) != 4 {
		t.Fatalf("delivered events of %d runs, want 4", len(runs))
	}

	one, err := st.ListEvents(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	var c2 collector
	f2 := export.Follower{Store: ro, RunID: ids[2], PageSize: 3, Once: true}
	if err := f2.Follow(ctx, c2.sink); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, e := range one {
		want = append(want, e.Seq)
	}
	if !equal(c2.got(), want) {
		t.Fatalf("run %s delivered %v, want %v", ids[2], c2.got(), want)
	}
}

// A follower stopped in every clean way (Once, a cancel in the middle of a
// page, a sink error) and started again with the same file cursor delivers
// every event exactly once, while more are committed between the runs.
func TestFollower_ExactlyOnceAcrossRestarts(t *testing.T) {
	st, path := newDB(t)
	ctx := context.Background()
	addRun(t, st, "r")
	addEvents(t, st, "r", 24)
	ro := openRO(t, path)
	cur := export.FileCursor{Path: filepath.Join(t.TempDir(), "cursor")}
	var got []int64
	follow := func(ctx context.Context, sink export.Sink) error {
		f := export.Follower{Store: ro, Cursor: cur, PageSize: 5, Once: true}
		return f.Follow(ctx, sink)
	}
	keep := func(e agentrt.Event) error { got = append(got, e.Seq); return nil }

	// 1: to the end, Once.
	if err := follow(ctx, keep); err != nil {
		t.Fatal(err)
	}
	addEvents(t, st, "r", 13)
	// 2: cancelled after the 3rd event of the 2nd page.
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	if err := follow(cctx, func(e agentrt.Event) error {
		got = append(got, e.Seq)
		if n++; n == 8 {
			cancel()
		}
		return nil
	}); err != nil {
		t.Fatalf("a cancelled Follow returned %v, want nil", err)
	}
	cancel()
	// 3: the sink refuses one event in the middle of a page.
	refuse := errors.New("sink full")
	n = 0
	err := follow(ctx, func(e agentrt.Event) error {
		if n++; n == 2 {
			return refuse
		}
		got = append(got, e.Seq)
		return nil
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Follow = %v, want the sink's error", err)
	}
	addEvents(t, st, "r", 4)
	// 4: to the end again.
	if err := follow(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if want := span(1, 42); !equal(got, want) {
		t.Fatalf("delivered %v\nwant      %v", got, want)
	}
	if seq, err := cur.Load(); err != nil || seq != 42 {
		t.Fatalf("cursor = %d, %v; want 42", seq, err)
	}
}

// A follower left running sees events as they commit, and a cancel stops
// it cleanly with the cursor at the last one delivered.
func TestFollower_LiveRunAndStopOnCancel(t *testing.T) {
	st, path := newDB(t)
	addRun(t, st, "r")
	ro := openRO(t, path)
	cur := &export.MemCursor{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan int64, 100)
	caught := make(chan int64, 100)
	f := export.Follower{Store: ro, Cursor: cur, Interval: time.Millisecond, PageSize: 4,
		CaughtUp: func(seq int64) { caught <- seq }}
	done := make(chan error, 1)
	go func() {
		done <- f.Follow(ctx, func(e agentrt.Event) error { seen <- e.Seq; return nil })
	}()
	wait := func(want int64) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case s := <-seen:
				if s == want {
					return
				}
			case err := <-done:
				t.Fatalf("Follow returned %v before seq %d", err, want)
			case <-deadline:
				t.Fatalf("seq %d was never delivered", want)
			}
		}
	}
	wait(1)
	if s := <-caught; s != 1 {
		t.Fatalf("caught up at %d, want 1", s)
	}
	addEvents(t, st, "r", 10)
	wait(11)
	// Events commit one at a time, so it may catch up in between; it
	// reports catching up at 11 last.
	for deadline := time.After(30 * time.Second); ; {
		var s int64
		select {
		case s = <-caught:
		case <-deadline:
			t.Fatal("never reported catching up at 11")
		}
		if s > 11 || s < 1 {
			t.Fatalf("caught up at %d", s)
		}
		if s == 11 {
			break
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Follow after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow did not stop on cancel")
	}
	if seq, _ := cur.Load(); seq != 11 {
		t.Fatalf("cursor after cancel = %d, want 11", seq)
	}
}

// Following a database read-only changes nothing in it: the file's bytes
// and modification time are as they were, and no file is added or removed
// beside it but the cursor.
func TestFollower_ReadOnlyLeavesTheFileUntouched(t *testing.T) {
	st, path := newDB(t)
	addRun(t, st, "r")
	addEvents(t, st, "r", 30)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	before, beforeInfo, beforeNames := snapshot(t, path)
	ro := openRO(t, path)
	f := export.Follower{Store: ro, Cursor: export.FileCursor{Path: filepath.Join(t.TempDir(), "cursor")}, PageSize: 7, Once: true}
	var c collector
	if err := f.Follow(context.Background(), c.sink); err != nil {
		t.Fatal(err)
	}
	if h, err := f.Head(context.Background()); err != nil || h.Seq != 31 || h.Hash == "" {
		t.Fatalf("Head = %+v %v", h, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if len(c.got()) != 31 {
		t.Fatalf("delivered %d events, want 31", len(c.got()))
	}
	after, afterInfo, afterNames := snapshot(t, path)
	if !bytes.Equal(before, after) {
		t.Fatal("the database file's bytes changed")
	}
	if !beforeInfo.ModTime().Equal(afterInfo.ModTime()) || beforeInfo.Mode() != afterInfo.Mode() {
		t.Fatalf("the database file changed: mtime %v -> %v, mode %v -> %v", beforeInfo.ModTime(), afterInfo.ModTime(), beforeInfo.Mode(), afterInfo.Mode())
	}
	// SQLite's reader of a WAL database makes the -shm index (and an empty
	// -wal) if they are missing; nothing may have been logged.
	for _, n := range afterNames {
		if slices.Contains(beforeNames, n) {
			continue
		}
		if n != "runs.db-shm" && n != "runs.db-wal" {
			t.Fatalf("files in %s: %v, then %v", dir, beforeNames, afterNames)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("the follower left %d bytes in the write-ahead log", fi.Size())
	}
}

func snapshot(t *testing.T, path string) ([]byte, os.FileInfo, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return b, fi, names
}

// countingStore records the pages the follower asked for.
type countingStore struct {
	agentrt.StoreReader
	mu    sync.Mutex
	reads []int
}

func (s *countingStore) ListEventsAfter(ctx context.Context, runID string, after int64, limit int) ([]agentrt.Event, error) {
	evs, err := s.StoreReader.ListEventsAfter(ctx, runID, after, limit)
	s.mu.Lock()
	s.reads = append(s.reads, len(evs))
	s.mu.Unlock()
	return evs, err
}

// A table many pages long is read one bounded page at a time, each read
// starting where the last ended, and delivered whole.
func TestFollower_PagesALargeTable(t *testing.T) {
	st, path := newDB(t)
	addRun(t, st, "r")
	bulk(t, st, "r", 2499) // 2,500 events
	cs := &countingStore{StoreReader: openRO(t, path)}
	var c collector
	f := export.Follower{Store: cs, PageSize: 100, Once: true}
	if err := f.Follow(context.Background(), c.sink); err != nil {
		t.Fatal(err)
	}
	if !equal(c.got(), span(1, 2500)) {
		t.Fatalf("delivered %d events, want 1..2500", len(c.got()))
	}
	if len(cs.reads) != 26 {
		t.Fatalf("%d reads, want 25 full pages and one empty: %v", len(cs.reads), cs.reads)
	}
	for i, n := range cs.reads[:25] {
		if n != 100 {
			t.Fatalf("read %d returned %d events, want 100", i, n)
		}
	}
}

// bulk appends n events to run in transactions of 500.
func bulk(t testing.TB, st agentrt.Store, run string, n int) {
	t.Helper()
	for n > 0 {
		k := min(n, 500)
		_, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
			for i := 0; i < k; i++ {
				if _, err := tx.EventAppend(agentrt.Event{RunID: run, At: t0, Type: agentrt.EventStepStarted, Payload: []byte(`{"index":1}`)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n -= k
	}
}

// A sink error stops delivery with the cursor on the event before the
// refused one, and the next Follow offers the refused event first.
func TestFollower_SinkErrorStopsWithCursorBeforeIt(t *testing.T) {
	st, path := newDB(t)
	addRun(t, st, "r")
	addEvents(t, st, "r", 9)
	ro := openRO(t, path)
	cur := &export.MemCursor{}
	refuse := errors.New("collector down")
	var got []int64
	f := export.Follower{Store: ro, Cursor: cur, PageSize: 4, Once: true}
	err := f.Follow(context.Background(), func(e agentrt.Event) error {
		if e.Seq == 7 {
			return refuse
		}
		got = append(got, e.Seq)
		return nil
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("Follow = %v, want the sink's error", err)
	}
	if cur.Seq != 6 || !equal(got, span(1, 6)) {
		t.Fatalf("cursor %d after delivering %v; want 6 after 1..6", cur.Seq, got)
	}
	var c collector
	if err := f.Follow(context.Background(), c.sink); err != nil {
		t.Fatal(err)
	}
	if !equal(c.got(), span(7, 10)) {
		t.Fatalf("the next Follow delivered %v, want 7..10", c.got())
	}
}

// Settings out of bounds, a missing store or sink, and a negative cursor
// are refused before anything is read.
func TestFollower_RejectsBadSettings(t *testing.T) {
	st, _ := newDB(t)
	cs := &countingStore{StoreReader: st}
	sink := func(agentrt.Event) error { return nil }
	cases := map[string]struct {
		f    export.Follower
		sink export.Sink
	}{
		"no store":          {export.Follower{}, sink},
		"no sink":           {export.Follower{Store: cs}, nil},
		"negative interval": {export.Follower{Store: cs, Interval: -time.Second}, sink},
		"interval too long": {export.Follower{Store: cs, Interval: export.MaxInterval + 1}, sink},
		"negative page":     {export.Follower{Store: cs, PageSize: -1}, sink},
		"page too big":      {export.Follower{Store: cs, PageSize: export.MaxPageSize + 1}, sink},
		"negative cursor":   {export.Follower{Store: cs, Cursor: &export.MemCursor{Seq: -3}}, sink},
	}
	for name, c := range cases {
		if err := c.f.Follow(context.Background(), c.sink); err == nil {
			t.Errorf("%s: Follow was accepted", name)
		}
	}
	if len(cs.reads) != 0 {
		t.Fatalf("a refused Follow read %d pages", len(cs.reads))
	}
	ok := export.Follower{Store: cs, Interval: export.MaxInterval, PageSize: export.MaxPageSize, Once: true}
	if err := ok.Follow(context.Background(), sink); err != nil {
		t.Fatalf("the largest settings were refused: %v", err)
	}
}

// A missing cursor file is seq 0; garbage, a negative number, extra text
// and an oversized file are errors, not 0. Save leaves an owner-only file
// holding the seq and no temporary file beside it.
func TestFileCursor_LoadsZeroWhenMissingAndRefusesGarbage(t *testing.T) {
	dir := t.TempDir()
	c := export.FileCursor{Path: filepath.Join(dir, "cursor")}
	if seq, err := c.Load(); err != nil || seq != 0 {
		t.Fatalf("missing cursor = %d, %v; want 0, nil", seq, err)
	}
	if err := c.Save(1234); err != nil {
		t.Fatal(err)
	}
	if seq, err := c.Load(); err != nil || seq != 1234 {
		t.Fatalf("Load = %d, %v; want 1234", seq, err)
	}
	fi, err := os.Stat(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor mode %04o, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files beside the cursor, want only it", len(ents))
	}
	if err := c.Save(-1); err == nil {
		t.Fatal("a negative seq was saved")
	}
	for _, bad := range []string{"", "abc", "-5", "12 34", "0x10", "+7", "007", "99999999999999999999", "12\n\n", string(bytes.Repeat([]byte("1"), 100))} {
		if err := os.WriteFile(c.Path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if seq, err := c.Load(); err == nil {
			t.Errorf("cursor %q loaded as %d", bad, seq)
		}
	}
	// A follower does not start over on a damaged cursor.
	st, _ := newDB(t)
	f := export.Follower{Store: st, Cursor: c, Once: true}
	if err := f.Follow(context.Background(), func(agentrt.Event) error { return nil }); err == nil {
		t.Fatal("Follow started from a garbage cursor")
	}
}

// The JSONL sink writes exactly what eventlog.JSONL writes, and reports a
// failed write as its error.
func TestJSONL_MatchesTrace(t *testing.T) {
	evs := []agentrt.Event{
		{Seq: 1, RunID: "r", At: t0, Type: agentrt.EventRunCreated, Payload: []byte(`{"goal":"\u202e\u001b[2J"}`)},
		{Seq: 2, RunID: "r", StepID: "s", At: t0, Type: agentrt.EventStepDecided, Payload: []byte(`not json`)},
		{Seq: 3, RunID: "r", At: t0, Type: agentrt.EventRunFinished},
	}
	var a, b bytes.Buffer
	sink := export.JSONL(&a)
	obs := eventlog.JSONL(&b)
	for _, e := range evs {
		if err := sink(e); err != nil {
			t.Fatal(err)
		}
		obs(e)
	}
	if a.String() != b.String() || a.Len() == 0 {
		t.Fatalf("JSONL sink wrote\n%s\neventlog.JSONL wrote\n%s", a.String(), b.String())
	}
	fail := export.JSONL(failWriter{})
	if err := fail(evs[0]); err == nil {
		t.Fatal("a failed write was not the sink's error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// Head names the last delivered event, its run and the run's chain hash
// there (VerifyEvents checks up to it), moving only as events are
// delivered, and the latest checkpoint: none before a fold, then the
// checkpoint that folds the delivered event, then a later one that folds
// events not yet delivered while the event part stays put.
func TestFollower_HeadIsTheRunAndTheCheckpointAsFarAsDelivered(t *testing.T) {
	st, path := newDB(t)
	ctx := context.Background()
	addRun(t, st, "r")
	addEvents(t, st, "r", 11)
	addRun(t, st, "s")
	ro := openRO(t, path)
	cur := &export.MemCursor{}
	f := export.Follower{Store: ro, Cursor: cur, PageSize: 5, Once: true}
	if h, err := f.Head(ctx); h != (export.Head{}) || err != nil {
		t.Fatalf("Head before delivery = %+v %v", h, err)
	}
	stop := errors.New("stop")
	f.Follow(ctx, func(e agentrt.Event) error {
		if e.Seq == 9 {
			return stop
		}
		return nil
	})
	h, err := f.Head(ctx)
	if err != nil || h.Seq != 8 || h.RunID != "r" || h.Checkpoint != nil || h.Folded {
		t.Fatalf("Head = %+v, %v; want seq 8 of run r and no checkpoint", h, err)
	}
	want, err := st.EventHash(ctx, 8)
	if err != nil || h.Hash != want {
		t.Fatalf("Head hash %q, stored %q (%v)", h.Hash, want, err)
	}
	rep, err := ro.VerifyEvents(ctx, 0, h.Seq)
	if err != nil || !rep.Intact() || rep.Hash != h.Hash || rep.To != 8 {
		t.Fatalf("verify to the head = %+v, %v", rep, err)
	}
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, first, ok, err := in.Fold(ctx)
	if err != nil || !ok || first.Size != 13 {
		t.Fatalf("fold = %+v %v %v; want 13 events folded", first, ok, err)
	}
	if h, err := f.Head(ctx); err != nil || h.Seq != 8 || h.Checkpoint == nil || h.Checkpoint.Kept() != first.Kept() || !h.Folded {
		t.Fatalf("Head after the fold = %+v %v; want seq 8 folded into checkpoint %s", h, err, first.Kept())
	}
	addEvents(t, st, "s", 3)
	if _, _, _, err := in.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Follow(ctx, func(agentrt.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h, err = f.Head(ctx)
	head, headHash, _ := st.ChainHead(ctx)
	if err != nil || h.Seq != 16 || h.Seq != head || h.Hash != headHash || h.RunID != "s" || h.Checkpoint.Size != 16 || !h.Folded {
		t.Fatalf("Head after delivering all = %+v %v, chain head %d %s", h, err, head, headHash)
	}
	addEvents(t, st, "s", 1)
	if h, err := f.Head(ctx); err != nil || h.Seq != 16 || h.Checkpoint.Size != 16 {
		t.Fatalf("Head moved without delivery: %+v %v", h, err)
	}
	if h, err := (&export.Follower{Store: ro}).Head(ctx); err != nil || h.Seq != 0 || h.Checkpoint == nil || h.Checkpoint.Size != 16 {
		t.Fatalf("Head without a cursor = %+v %v; want the checkpoint alone", h, err)
	}
}
