package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/export"
)

var followCommand = &command{
	name:    "follow",
	summary: "print events as they commit, across runs, resuming from a cursor file",
	usage:   "[-run ID] [-cursor FILE] [-once]",
	run:     runFollow,
}

// followSignals stop a follow cleanly, with the cursor saved.
var followSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func runFollow(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	runID := fs.String("run", "", "follow only this run's events")
	cursor := fs.String("cursor", "", "a file that keeps the last seq printed, to resume after it")
	once := fs.Bool("once", false, "stop once every committed event is printed")
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, "unexpected argument "+quoted(clip(pos[0], 80))+"; follow takes flags only (-run ID for one run)")
	}
	if *runID != "" {
		if msg := checkID("-run", *runID); msg != "" {
			return e.usageError(c, msg)
		}
	}
	path, code := g.requireDB(e, c)
	if code != ExitOK {
		return code
	}
	var cur export.Cursor
	if *cursor != "" {
		fc := export.FileCursor{Path: *cursor}
		// A damaged cursor is refused before the database is opened.
		if _, err := fc.Load(); err != nil {
			return e.fail("%v", err)
		}
		cur = fc
	}
	st, code := e.open(path, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	if *runID != "" {
		if *runID, code, ok = e.resolveRun(st, backend.Redact(path), *runID); !ok {
			return code
		}
	}

	ctx, stop := signal.NotifyContext(background(), followSignals...)
	defer stop()
	var sink export.Sink
	if g.json {
		sink = export.JSONL(e.stdout)
	} else {
		sink = func(ev agentrt.Event) error { return writeTrail(e, []agentrt.Event{ev}) }
	}
	f := &export.Follower{Store: st, RunID: *runID, Cursor: cur, Once: *once}
	loud := e.progress != nil && e.progress(e.stderr)
	told := false
	f.CaughtUp = func(seq int64) {
		if !loud || told || *once {
			return
		}
		told = true
		e.note("caught up at seq %d; printing events as they commit (Ctrl-C stops)", seq)
	}
	var last int64
	err := f.Follow(ctx, func(ev agentrt.Event) error {
		if err := sink(ev); err != nil {
			return err
		}
		last = ev.Seq
		return nil
	})
	if err != nil {
		return e.fail("follow stopped: %v", err)
	}
	if loud {
		e.followStopped(f, cur != nil, *cursor, last)
	}
	return ExitOK
}

// followStopped says where a follow on a terminal stopped and how the
// next one resumes after it.
func (e *env) followStopped(f *export.Follower, saved bool, cursor string, last int64) {
	switch {
	case saved:
		if seq, hash, herr := f.Head(background()); herr == nil && seq > 0 {
			e.note("stopped at seq %d (hash %s); %s resumes after it", seq, hash, clean(cursor))
		}
	case last > 0:
		e.note("stopped at seq %d; pass -cursor FILE to resume after it next time", last)
	}
}

// note prints one line of progress to stderr.
func (e *env) note(format string, args ...any) {
	fmt.Fprintf(e.stderr, "agentrt: "+format+"\n", args...)
}
