package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/cliflag"
)

var followCommand = fromKit(&kitCmd{
	Name:    "follow",
	Summary: "print events as they commit, across runs, resuming from a cursor file",
	Usage:   "[-run ID] [-cursor FILE] [-once]",
	Bind: cliflag.With(func(fs *flag.FlagSet, o *followOptions) {
		fs.StringVar(&o.runID, "run", "", "follow only this run's events")
		fs.StringVar(&o.cursor, "cursor", "", "a file that keeps the last seq printed, to resume after it")
		fs.BoolVar(&o.once, "once", false, "stop once every committed event is printed")
	}, runFollow),
})

// followOptions are follow's flags.
type followOptions struct {
	runID, cursor string
	once          bool
}

// followSignals stop a follow cleanly, with the cursor saved.
var followSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func runFollow(x *inv, o *followOptions, pos []string) int {
	path, cur, code := x.checkFollow(o, pos)
	if code != ExitOK {
		return code
	}
	st, code := x.open(path, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	runID := o.runID
	if runID != "" {
		var ok bool
		if runID, code, ok = x.resolveRun(st, backend.Redact(path), runID); !ok {
			return code
		}
	}
	ctx, stop := signal.NotifyContext(background(), followSignals...)
	defer stop()
	f := &export.Follower{Store: st, RunID: runID, Cursor: cur, Once: o.once}
	loud := x.progress != nil && x.progress(x.stderr)
	told := false
	f.CaughtUp = func(seq int64) {
		if !loud || told || o.once {
			return
		}
		told = true
		x.note("caught up at seq %d; printing events as they commit (Ctrl-C stops)", seq)
	}
	last, err := x.followInto(ctx, f)
	if err != nil {
		return x.fail("follow stopped: %v", err)
	}
	if loud {
		x.followStopped(f, cur != nil, o.cursor, last)
	}
	return ExitOK
}

// checkFollow checks follow's arguments and loads its cursor file, before
// the database is opened: a damaged cursor is refused first.
func (x *inv) checkFollow(o *followOptions, pos []string) (path string, cur export.Cursor, code int) {
	if len(pos) > 0 {
		return "", nil, x.usageError(x.c, "unexpected argument "+quoted(clip(pos[0], 80))+"; follow takes flags only (-run ID for one run)")
	}
	if o.runID != "" {
		if msg := checkID("-run", o.runID); msg != "" {
			return "", nil, x.usageError(x.c, msg)
		}
	}
	path, code = x.g.requireDB(x.env, x.c)
	if code != ExitOK {
		return "", nil, code
	}
	if o.cursor != "" {
		fc := export.FileCursor{Path: o.cursor}
		if _, err := fc.Load(); err != nil {
			return "", nil, x.fail("%v", err)
		}
		cur = fc
	}
	return path, cur, ExitOK
}

// followInto prints what f follows, as JSON Lines or as the trail, and
// returns the seq of the last event printed.
func (x *inv) followInto(ctx context.Context, f *export.Follower) (last int64, err error) {
	var sink export.Sink
	if x.g.json {
		sink = export.JSONL(x.stdout)
	} else {
		sink = func(ev agentrt.Event) error { return writeTrail(x.env, []agentrt.Event{ev}) }
	}
	err = f.Follow(ctx, func(ev agentrt.Event) error {
		if err := sink(ev); err != nil {
			return err
		}
		last = ev.Seq
		return nil
	})
	return last, err
}

// followStopped says where a follow on a terminal stopped and how the
// next one resumes after it.
func (e *env) followStopped(f *export.Follower, saved bool, cursor string, last int64) {
	switch {
	case saved:
		if h, herr := f.Head(background()); herr == nil && h.Seq > 0 {
			e.note("stopped at seq %d, of run %s (the run's hash there %s); %s resumes after it", h.Seq, clean(h.RunID), h.Hash, clean(cursor))
			if c := h.Checkpoint; c != nil {
				folded := "folds it"
				if !h.Folded {
					folded = "does not fold it yet"
				}
				e.note("latest checkpoint %s (keep it for verify -head) %s", c.Kept(), folded)
			}
		}
	case last > 0:
		e.note("stopped at seq %d; pass -cursor FILE to resume after it next time", last)
	}
}

// note prints one line of progress to stderr.
func (e *env) note(format string, args ...any) {
	fmt.Fprintf(e.stderr, "agentrt: "+format+"\n", args...)
}
