package agentrt

import (
	"context"
	"errors"
	"sync"
	"time"
)

// lease is a session's hold on a run: owner plus fencing generation. It is
// renewed by compare-and-set on that identity, every TTL/3, on the store's
// lease connection, and trusted locally only until shortly before the expiry
// last written.
type lease struct {
	store Store
	runID string
	owner string
	ttl   time.Duration
	wall  func() time.Time

	mu      sync.Mutex
	gen     int64
	expires time.Time
	lost    bool
	stop    chan struct{}
	done    chan struct{}
}

func newLease(e *engine, runID string) *lease {
	return &lease{store: e.store, runID: runID, owner: e.owner, ttl: e.leaseTTL, wall: e.wall}
}

// expiry is the expiry a write taking or renewing the lease records.
func (l *lease) expiry() time.Time { return l.wall().Add(l.ttl) }

// held records a successful write that took or renewed the lease.
func (l *lease) held(gen int64, expires time.Time) {
	l.mu.Lock()
	l.gen = gen
	if expires.After(l.expires) {
		l.expires = expires
	}
	l.mu.Unlock()
}

func (l *lease) generation() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// ok reports whether the lease may still be trusted: not lost, and the wall
// clock short of the expiry by a margin.
func (l *lease) ok() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return false
	}
	margin := l.ttl / 10
	return l.wall().Before(l.expires.Add(-margin))
}

func (l *lease) markLost() {
	l.mu.Lock()
	l.lost = true
	l.mu.Unlock()
}

func (l *lease) isLost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// start begins the heartbeat.
func (l *lease) start() {
	l.mu.Lock()
	if l.stop != nil {
		l.mu.Unlock()
		return
	}
	l.stop = make(chan struct{})
	l.done = make(chan struct{})
	stop, done := l.stop, l.done
	l.mu.Unlock()
	// The heartbeat is handed its channels: halt clears the fields, and a
	// heartbeat not yet scheduled when halt runs must still see its stop.
	go l.beat(stop, done)
}

func (l *lease) beat(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := l.ttl / 3
	if every <= 0 {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if l.isLost() {
			return
		}
		exp := l.expiry()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := l.store.RenewLease(ctx, l.runID, l.owner, l.generation(), exp)
		cancel()
		switch {
		case err == nil:
			l.held(l.generation(), exp)
		case errors.Is(err, ErrLeaseLost):
			l.markLost()
			return
		}
		// Any other failure is retried at the next tick; the local expiry
		// makes ok() false in time if renewals keep failing.
	}
}

// halt stops the heartbeat and waits for it.
func (l *lease) halt() {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
