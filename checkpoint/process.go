package checkpoint

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
)

// Process is how a long-lived process (a worker, the console, the proxy)
// runs the integrator beside its engine. Its zero value runs it with the
// defaults: unsigned checkpoints every 250 ms.
type Process struct {
	// KeyFile is an owner-only file holding the private signing key
	// (agentrt checkpoint -new-key makes one). Empty writes unsigned
	// checkpoints.
	KeyFile string
	// Interval is how long the integrator waits between folds. Zero means
	// 250 ms; a negative value runs no integrator in this process.
	Interval time.Duration
	// Sync makes every commit of the process's engine wait for the
	// checkpoint that folds it (Running.EngineAwait). False leaves a
	// committed event unfolded for up to about one Interval.
	Sync bool
}

// Flags registers -checkpoint-key and -checkpoint-interval (a duration,
// or "off") on fs, filling p when fs is parsed.
func (p *Process) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.KeyFile, "checkpoint-key", p.KeyFile, "sign checkpoints with the private key in this owner-only file (default: unsigned)")
	fs.Var((*intervalFlag)(&p.Interval), "checkpoint-interval", `how often this process folds committed events into a checkpoint, or "off" (default 250ms)`)
}

// SyncFlag registers -checkpoint-sync on fs: for a process whose engine
// takes Running.EngineAwait.
func (p *Process) SyncFlag(fs *flag.FlagSet) {
	fs.BoolVar(&p.Sync, "checkpoint-sync", p.Sync, "each commit waits for the checkpoint that folds it")
}

type intervalFlag time.Duration

func (f *intervalFlag) String() string {
	switch {
	case f == nil || *f == 0:
		return DefaultConfig().Interval.String()
	case *f < 0:
		return "off"
	}
	return time.Duration(*f).String()
}

func (f *intervalFlag) Set(s string) error {
	if s == "off" {
		*f = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q is neither a positive duration nor off", s)
	}
	*f = intervalFlag(d)
	return nil
}

// Running is an integrator running in the background of a process.
type Running struct {
	in     *Integrator
	cancel context.CancelFunc
	done   chan struct{}
	sync   bool
}

// Start runs the integrator on st (an agentrt store, found by For) until
// Stop. It returns nil, nil when p turns it off or st keeps no
// checkpoints; an unreadable key file is an error. A fold that fails
// (the database away) is handed to onError, when not nil, and tried again
// after an Interval: a process does not stop serving for it.
func (p Process) Start(st any, onError func(error)) (*Running, error) {
	if p.Interval < 0 {
		return nil, nil
	}
	cs, err := For(st)
	if err != nil {
		return nil, nil
	}
	cfg := Config{Interval: p.Interval}
	if p.KeyFile != "" {
		if cfg.Signer, err = LoadSigner(p.KeyFile); err != nil {
			return nil, err
		}
	}
	in, err := NewIntegrator(cs, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{in: in, cancel: cancel, done: make(chan struct{}), sync: p.Sync}
	go r.loop(ctx, onError)
	return r, nil
}

func (r *Running) loop(ctx context.Context, onError func(error)) {
	defer close(r.done)
	for {
		err := r.in.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		if onError != nil {
			onError(err)
		}
		t := time.NewTimer(r.in.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Integrator is the integrator Start runs.
func (r *Running) Integrator() *Integrator { return r.in }

// EngineAwait is what agentrt.EngineConfig.AwaitCheckpoint takes: the
// integrator's Await when the process runs in synchronous mode, else nil.
// Safe on a nil Running (no integrator: nil).
func (r *Running) EngineAwait() func(context.Context, agentrt.Event) error {
	if r == nil || !r.sync {
		return nil
	}
	return r.in.Await
}

// Stop ends the integrator, waiting for a fold in progress to end and the
// integrator's role to be given back. Safe on a nil Running and more than
// once.
func (r *Running) Stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}
