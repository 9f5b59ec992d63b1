package agentrt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Worker defaults.
const (
	DefaultWorkerConcurrency = 4
	DefaultWorkerPoll        = 50 * time.Millisecond
	DefaultWorkerGrace       = 30 * time.Second
)

// WorkerConfig configures a Worker: the engine, the agent, and how the
// worker claims and drives runs. EngineConfig's fields mean what they mean
// there.
type WorkerConfig struct {
	EngineConfig
	// Agent decides each step of the runs the worker drives (required).
	Agent Agent

	// Concurrency bounds the runs the worker drives at once, and so what
	// one claim takes (zero: DefaultWorkerConcurrency).
	Concurrency int
	// Poll is how often the worker looks for runnable work while it has a
	// free slot (zero: DefaultWorkerPoll).
	Poll time.Duration
	// Grace bounds how long Run, once its context is done, waits for runs
	// to reach a step boundary (their tool calls finishing) before it
	// cancels them (zero: DefaultWorkerGrace).
	Grace time.Duration
	// OnError, when set, hears of a claim or a run's driving that ended in
	// an error. The run records what happened to it; this is for logs.
	OnError func(runID string, err error)
}

// DefaultWorkerConfig returns a config with the defaults filled in; Store,
// Agent and Policy are still the caller's to set.
func DefaultWorkerConfig() WorkerConfig {
	return WorkerConfig{EngineConfig: EngineConfig{LeaseTTL: DefaultLeaseTTL}, Concurrency: DefaultWorkerConcurrency, Poll: DefaultWorkerPoll, Grace: DefaultWorkerGrace}
}

// Worker drives runnable runs from a store until its context ends: runs
// enqueued with Driver.Enqueue, waiting runs whose approval was decided
// (so an approved run resumes by itself), and runs whose lease lapsed
// (takeover, with the interrupted-step rules of Resume). Many workers, in
// one process or many, may share a store: a claim leases a run and bumps its
// fencing generation in one transaction, oldest runs first, and on Postgres
// skips rows another claimer holds.
type Worker struct {
	d     *Driver
	cfg   WorkerConfig
	slots chan struct{}
	wake  chan struct{}

	mu     sync.Mutex
	active map[string]bool
	// refused are runs whose grant Resume refused as tampered or unsigned;
	// this worker does not claim them again.
	refused refusedSet
}

// maxRefusedRuns bounds the runs a worker remembers refusing, which every
// claim names: past it the oldest is forgotten, and may be claimed and
// refused once more (one more claim in the chain, one more OnError).
const maxRefusedRuns = 4096

// refusedSet is a set of run ids that keeps at most max of them, dropping
// the oldest first.
type refusedSet struct {
	max   int
	ids   map[string]bool
	order []string
}

func newRefusedSet(max int) refusedSet {
	return refusedSet{max: max, ids: map[string]bool{}}
}

func (s *refusedSet) add(id string) {
	if s.ids[id] {
		return
	}
	s.ids[id] = true
	s.order = append(s.order, id)
	if len(s.order) > s.max {
		delete(s.ids, s.order[0])
		// Copied down rather than resliced, so the array does not grow.
		s.order = s.order[:copy(s.order, s.order[1:])]
	}
}

// NewWorker validates cfg and returns a worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Concurrency < 0 {
		return nil, &ConfigError{Field: "WorkerConfig.Concurrency", Reason: fmt.Sprintf("must not be negative, got %d", cfg.Concurrency)}
	}
	if cfg.Poll < 0 {
		return nil, &ConfigError{Field: "WorkerConfig.Poll", Reason: "must not be negative"}
	}
	if cfg.Grace < 0 {
		return nil, &ConfigError{Field: "WorkerConfig.Grace", Reason: "must not be negative"}
	}
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultWorkerConcurrency)
	cfg.Poll = cmp.Or(cfg.Poll, DefaultWorkerPoll)
	cfg.Grace = cmp.Or(cfg.Grace, DefaultWorkerGrace)
	d, err := NewDriver(Config{EngineConfig: cfg.EngineConfig, Agent: cfg.Agent})
	if err != nil {
		return nil, err
	}
	return &Worker{d: d, cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), wake: make(chan struct{}, 1), active: map[string]bool{}, refused: newRefusedSet(maxRefusedRuns)}, nil
}

// Driver returns the worker's driver: Enqueue, Approve and the rest, on
// the worker's store and tools.
func (w *Worker) Driver() *Driver { return w.d }

// Owner returns the lease owner the worker claims as.
func (w *Worker) Owner() string { return w.d.e.owner }

// Wake asks the worker to look for work now rather than at its next poll
// (after an approval decided in the same process, say).
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run claims and drives runs until ctx is done. Then it stops claiming,
// asks each run to stop at its next step boundary, where the run's lease
// is released for another worker to claim, and waits up to Grace for them;
// runs still going after that are cancelled, leaving what a crash leaves.
// It returns nil after a clean shutdown.
func (w *Worker) Run(ctx context.Context) error {
	stop := make(chan struct{})
	hard, cancelHard := context.WithCancel(context.Background())
	defer cancelHard()
	runCtx := context.WithValue(hard, stopKey{}, (<-chan struct{})(stop))
	// The runs in flight hear of the stop the moment ctx is done, not when
	// the loop next gets round to it (it may be inside a slow claim), so a
	// run never takes a step it was asked to stop before.
	defer context.AfterFunc(ctx, func() { close(stop) })()
	var wg sync.WaitGroup
	tick := time.NewTicker(w.cfg.Poll)
	defer tick.Stop()
	var wakeups <-chan struct{}
	if wk, ok := w.d.e.store.(Waker); ok {
		var err error
		if wakeups, err = wk.Wakeups(ctx); err != nil {
			w.report("", err) // poll only
		}
	}
	for {
		if free := cap(w.slots) - len(w.slots); free > 0 && ctx.Err() == nil {
			runs, err := w.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				w.report("", err)
			}
			for _, r := range runs {
				w.slots <- struct{}{}
				wg.Add(1)
				go func(r Run) {
					defer wg.Done()
					w.drive(runCtx, r)
					w.mu.Lock()
					delete(w.active, r.ID)
					w.mu.Unlock()
					<-w.slots
					w.Wake()
				}(r)
			}
		}
		select {
		case <-ctx.Done():
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			t := time.NewTimer(w.cfg.Grace)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				cancelHard()
				<-done
			}
			return nil
		case <-tick.C:
		case <-w.wake:
		case <-wakeups:
		}
	}
}

// claim leases up to n runnable runs to this worker, recording each claim
// in the chain in the same transaction.
func (w *Worker) claim(ctx context.Context, n int) ([]Run, error) {
	e := w.d.e
	var claimed []Run
	// Runs this worker drives now, or refused, are not claimed (a claim of
	// an active run whose lease lapsed under a slow tool would only record
	// a takeover from itself).
	w.mu.Lock()
	skip := slices.Sorted(maps.Keys(w.refused.ids))
	for id := range w.active {
		if !w.refused.ids[id] {
			skip = append(skip, id)
		}
	}
	w.mu.Unlock()
	evs, err := e.store.Update(context.WithoutCancel(ctx), func(tx Tx) error {
		claimed = claimed[:0]
		runs, err := tx.RunClaim(RunClaim{Owner: e.owner, Limit: n, Now: e.wall(), TTL: e.leaseTTL, ApprovalsNow: e.now(), Skip: skip})
		if err != nil {
			return err
		}
		now := e.now()
		for _, r := range runs {
			typ, payload := EventRunClaimed, any(RunClaimedPayload{Owner: e.owner, Status: r.Status, Generation: r.Generation + 1})
			if r.LeaseOwner != "" {
				typ, payload = EventLeaseTakenOver, LeaseTakenOverPayload{Owner: e.owner, Status: r.Status, Generation: r.Generation + 1,
					PreviousOwner: r.LeaseOwner, PreviousExpiresAt: r.LeaseExpiresAt}
			}
			if err := event(tx, r.ID, "", now, typ, payload); err != nil {
				return err
			}
		}
		claimed = append(claimed, runs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A claim's runs are driven even if the wait for their claims' fold
	// fails (ctx ended): each run's first commit waits again, and a run
	// left claimed would hold its lease until it lapsed.
	_ = e.committed(ctx, evs)
	out := claimed[:0]
	w.mu.Lock()
	for _, r := range claimed {
		if !w.active[r.ID] {
			w.active[r.ID] = true
			out = append(out, r)
		}
	}
	w.mu.Unlock()
	return out, nil
}

// drive takes a claimed run to its next pause or end, or to a step
// boundary once the worker stops.
func (w *Worker) drive(ctx context.Context, r Run) {
	_, err := w.d.Resume(ctx, r.ID)
	if errors.Is(err, ErrTamperedRecord) || errors.Is(err, ErrUnsignedGrant) {
		// Nothing ran, and nothing will until an operator acts (cancels
		// the run); claiming it again would only record claims.
		w.mu.Lock()
		w.refused.add(r.ID)
		w.mu.Unlock()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		w.report(r.ID, err)
	}
}

func (w *Worker) report(runID string, err error) {
	if w.cfg.OnError != nil {
		w.cfg.OnError(runID, err)
	}
}

// stopKey carries a worker's stop channel to the loop it drives: a loop
// that sees it closed ends at its next step boundary, leaving the run
// RUNNING with its lease released.
type stopKey struct{}

func stopRequested(ctx context.Context) bool {
	ch, _ := ctx.Value(stopKey{}).(<-chan struct{})
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Enqueue records a run that waits for a Worker to claim it: ENQUEUED, no
// step, no lease. The goal and limits are checked as Start checks them.
func (d *Driver) Enqueue(ctx context.Context, goal string, limits Limits) (Run, error) {
	return d.EnqueueWithID(ctx, d.e.newID(), goal, limits)
}

// EnqueueWithID is Enqueue with the caller's run id.
func (d *Driver) EnqueueWithID(ctx context.Context, id, goal string, limits Limits) (Run, error) {
	e := d.e
	if id == "" {
		return Run{}, &ConfigError{Field: "run id", Reason: "must not be empty"}
	}
	if err := limits.Validate(); err != nil {
		return Run{}, err
	}
	tc, err := traceContextOf(ctx)
	if err != nil {
		return Run{}, err
	}
	now := e.now()
	run := Run{ID: id, Goal: goal, Status: RunEnqueued, Limits: limits, CreatedAt: now}
	evs, err := e.store.Update(ctx, func(tx Tx) error {
		if err := tx.RunInsert(run); err != nil {
			return err
		}
		for _, t := range e.tools {
			if err := tx.SpecPut(t.hash, t.canonical); err != nil {
				return err
			}
		}
		return event(tx, id, "", now, EventRunCreated, RunCreatedPayload{Goal: goal, Limits: limits, Tools: e.toolList, Enqueued: true, Disclosure: e.described, Trace: tc})
	})
	if err != nil {
		return Run{}, err
	}
	// The run exists whatever the wait returns: hand it back with the error.
	return run, e.committed(ctx, evs)
}

// startEnqueued moves a claimed ENQUEUED run to RUNNING under this
// session's lease (a new generation): what Start does for a run it creates.
func (s *session) startEnqueued(ctx context.Context) (Verdict, error) {
	run := s.run
	now := s.e.now()
	exp := s.lease.expiry()
	gen := run.Generation + 1
	err := s.write(ctx, func(tx Tx) error {
		if err := s.mayTakeLease(ctx, tx); err != nil {
			return err
		}
		if err := tx.RunUpdate(RunUpdate{ID: s.runID, From: []RunStatus{RunEnqueued}, CheckLease: true, Owner: run.LeaseOwner,
			Generation: run.Generation, Status: RunRunning, StartedAt: now, SetLease: true, LeaseOwner: s.lease.owner,
			LeaseExpiresAt: exp, LeaseTTL: s.lease.ttl, BumpGeneration: true}); err != nil {
			return err
		}
		return event(tx, s.runID, "", now, EventRunStarted, RunStartedPayload{})
	})
	if err != nil {
		return Verdict{Run: copyRun(run)}, err
	}
	s.run.Status, s.run.StartedAt = RunRunning, now
	s.run.LeaseOwner, s.run.LeaseExpiresAt, s.run.Generation = s.lease.owner, exp, gen
	s.lease.held(gen, exp)
	s.lease.start()
	return Verdict{}, nil
}
