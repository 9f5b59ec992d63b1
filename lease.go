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

// expiry is the expiry a write taking or renewing the lease records, and
// the local deadline this process trusts the lease until once the write
// succeeds. A DatabaseClock store records its own now plus the TTL instead;
// the wall clock read here, before the write, is no later than that, so
// trusting the lease until then (less a margin) stays on the safe side
// whatever the two clocks read.
func (l *lease) expiry() time.Time { return l.wall().Add(l.ttl) }

// leaseNow is the time a stored lease expiry is judged against inside tx:
// the database's clock where the store keeps lease time on it, else the
// wall clock.
func (e *engine) leaseNow(ctx context.Context, tx Tx) (time.Time, error) {
	if c, ok := tx.(DatabaseClock); ok {
		return c.DatabaseNow(ctx)
	}
	return e.wall(), nil
}

// storeNow is leaseNow outside a transaction.
func (e *engine) storeNow(ctx context.Context) (time.Time, error) {
	if c, ok := e.store.(DatabaseClock); ok {
		return c.DatabaseNow(ctx)
	}
	return e.wall(), nil
}

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
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	l.mu.Unlock()
	go l.beat(stop, done)
}

// beat renews the lease until stop closes; it owns its channels, so halt
// may clear the lease's fields while it runs.
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
		err := l.store.RenewLease(ctx, LeaseRenewal{RunID: l.runID, Owner: l.owner, Generation: l.generation(), ExpiresAt: exp, TTL: l.ttl})
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
