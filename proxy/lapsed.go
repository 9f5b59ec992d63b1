package proxy

import (
	"context"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// A mutating call whose lease lapsed while its tool executed (the proxy
// that ran it was killed) has an unknown outcome. The proxy finds such
// calls on start, and whenever it claims a row for a call to the same
// tool, and makes them blocking at once: the takeover opens the
// operator's approval about the interruption then, not when (if ever)
// the model repeats the call. A lease still live at start is looked at
// again when it lapses.

// sweepLapsed takes over every open call of the session (of tool, when
// not empty) whose run's lease lapsed while its tool executed, and
// returns the earliest lease still live on an executing call, or zero.
func (p *Proxy) sweepLapsed(ctx context.Context, tool string) time.Time {
	now := p.now()
	// A call runs in a row just claimed (begun) or one whose approval was
	// granted (waiting). On a claim, only rows older than a lease are
	// looked at: a lease cannot lapse before LeaseTTL has passed since its
	// row was made, and the calls in flight now are younger.
	begun, err := p.ix.RunningRows(ctx, p.cfg.Session, tool, now.Add(-p.cfg.LeaseTTL))
	if err != nil {
		p.logf("agentrt-proxy: the index could not be read for interrupted calls: %s", trace.Sanitize(err.Error()))
		return time.Time{}
	}
	var next time.Time
	for _, r := range begun {
		t := p.tools[r.Tool]
		if t == nil || !t.mutating() {
			continue
		}
		run, err := p.store.GetRun(ctx, r.RunID)
		if err != nil || run.Status != agentrt.RunRunning {
			continue
		}
		steps, err := p.store.ListSteps(ctx, r.RunID)
		if err != nil || len(steps) == 0 {
			continue
		}
		last := steps[len(steps)-1]
		if last.Status != agentrt.StepExecuting || last.Decision == nil || last.Decision.Kind != agentrt.KindToolCall {
			continue
		}
		if p.now().Before(run.LeaseExpiresAt) {
			if next.IsZero() || run.LeaseExpiresAt.Before(next) {
				next = run.LeaseExpiresAt
			}
			continue
		}
		c := &call{t: t, args: last.Decision.Args, key: r.Key}
		p.recover(ctx, c, r)
	}
	return next
}

// sweepLater sweeps again when the earliest live lease of an executing
// call lapses, until none is left or the proxy closes.
func (p *Proxy) sweepLater(at time.Time) {
	if at.IsZero() {
		close(p.sweepDone)
		return
	}
	go func() {
		defer close(p.sweepDone)
		for !at.IsZero() {
			wait := at.Sub(p.now()) + 50*time.Millisecond
			if wait < 50*time.Millisecond {
				wait = 50 * time.Millisecond
			}
			timer := time.NewTimer(wait)
			select {
			case <-p.sweepStop:
				timer.Stop()
				return
			case <-timer.C:
			}
			at = p.sweepLapsed(context.Background(), "")
		}
	}()
}
