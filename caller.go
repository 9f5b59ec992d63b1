package agentrt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/internal/ctxsleep"
	"github.com/agentrt/agentrt/internal/textcut"
)

const (
	// defaultCallTimeout bounds one attempt when ModelConfig.CallTimeout is zero.
	defaultCallTimeout = 2 * time.Minute
	// defaultBackoff is the base wait between attempts when ModelConfig.Backoff
	// is zero.
	defaultBackoff = time.Second
	// maxPlausibleTokens is the largest token count believed on a reply. No
	// model reads or writes a trillion tokens in one call; a count past it is
	// a broken or hostile provider, and is charged the estimate instead.
	maxPlausibleTokens = 1 << 40
	// maxErrorText bounds the error text stored with an attempt.
	maxErrorText = 4096
)

// caller returns the accounted model handle for the step at position i.
func (s *session) caller(i int) ModelCaller {
	return &modelCaller{s: s, cfg: s.e.model, stepID: s.steps[i].ID, stepStart: s.steps[i].StartedAt,
		reserved: map[string]reservation{}, holds: map[string][]BudgetHold{}}
}

// modelCaller is the accounting caller handed to an agent for one step. It
// may be called concurrently: the limit check and the reservation it leads
// to happen under mu, so concurrent calls cannot all pass one check.
type modelCaller struct {
	s         *session
	cfg       *ModelConfig
	stepID    string
	stepStart time.Time

	// mu guards reserved and the session's cached run while the agent is
	// deciding.
	mu sync.Mutex
	// reserved holds the projection of each attempt dispatched but not yet
	// recorded, by call id. An attempt whose outcome could not be recorded
	// stays reserved: its row may still say dispatched, and the totals do not
	// hold what it cost.
	reserved map[string]reservation
	// holds are each in-flight attempt's reservations on shared budgets,
	// by call id, settled when its outcome is recorded.
	holds map[string][]BudgetHold
}

// reservation is what an in-flight attempt is projected to use.
type reservation struct {
	tokens int64
	cost   Micros
}

// attemptOutcome is how one attempt ended and what to do next.
type attemptOutcome struct {
	status  ModelCallStatus
	charged Usage
	errText string
	resp    ModelResponse
	// retry says another attempt may follow a wait; last is the error
	// reported when none may.
	retry bool
	last  error
	// final is returned to the agent when the attempt is not retried.
	final error
	// unknown says the request may have been served with its usage
	// unknown: its budget reservations become uncertain, not settled.
	unknown bool
}

// Generate sends req through the configured model, accounting every attempt.
// Each attempt reserves a model_calls row before it is sent, after checking
// the run's limits against a projection of the request, and records what it
// cost after. A limit refuses with *LimitError, a model that cannot be used
// fails with *ModelUnavailableError, and a lost lease with ErrLeaseLost.
func (c *modelCaller) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	req = c.clamp(req)
	in, err := c.projectInput(ctx, req)
	if err != nil {
		return ModelResponse{}, err
	}
	est := Usage{InputTokens: in, OutputTokens: max(req.MaxOutputTokens, 0)}
	name := c.cfg.Model.Name()
	price, priced := c.cfg.Prices[name]
	if pv := c.s.e.prices; pv != nil {
		price, priced = pv.Table[name]
	}
	retries := max(c.cfg.MaxRetries, 0)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return ModelResponse{}, err
		}
		if err := c.s.requireLive(); err != nil {
			return ModelResponse{}, err
		}
		call, enc, sent, err := c.dispatch(ctx, attempt, name, req, est, price, priced)
		if err != nil {
			return ModelResponse{}, err
		}
		out, completed := c.attempt(ctx, sent, enc, est, attempt)
		if err := c.record(ctx, call, out, costOf(price, out.charged), completed); err != nil {
			return ModelResponse{}, fmt.Errorf("agentrt: recording model call %s: %w", call.ID, err)
		}
		if out.status == ModelOK {
			if err := ctx.Err(); err != nil {
				return ModelResponse{}, err
			}
			return out.resp, nil
		}
		if !out.retry {
			return ModelResponse{}, out.final
		}
		if attempt > retries {
			return ModelResponse{}, &ModelUnavailableError{Attempts: attempt, Last: out.last}
		}
		if c.callsSpent() {
			continue // the next dispatch is refused by the limit: no wait for it
		}
		wait, err := c.retryWait(ctx, attempt, out.last, completed)
		if err != nil {
			return ModelResponse{}, &ModelUnavailableError{Attempts: attempt, Last: err}
		}
		if err := c.sleep(ctx, wait); err != nil {
			return ModelResponse{}, err
		}
	}
}

// callsSpent reports whether the run has made every model call its limit
// allows.
func (c *modelCaller) callsSpent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.s.run.Limits.MaxModelCalls
	return l > 0 && c.s.run.ModelCalls >= l
}

// clamp applies Limits.MaxOutputTokensPerCall: a request with no cap, or a
// larger one, gets the limit.
func (c *modelCaller) clamp(req ModelRequest) ModelRequest {
	c.mu.Lock()
	limit := c.s.run.Limits.MaxOutputTokensPerCall
	c.mu.Unlock()
	if req.MaxOutputTokens < 0 {
		req.MaxOutputTokens = 0
	}
	if limit > 0 && (req.MaxOutputTokens == 0 || req.MaxOutputTokens > limit) {
		req.MaxOutputTokens = limit
	}
	return req
}

// dispatch describes the request in its egress manifest and lets the
// egress rules decide it, then checks the limits, reserves the attempt's
// row and its hold on every shared budget that applies, in one transaction
// that requires the lease and counts the call on the run. A denied request
// is recorded on its own and never sent. It returns the request to send:
// req, or req with the secrets the egress rules redact redacted.
func (c *modelCaller) dispatch(ctx context.Context, attempt int, name string, req ModelRequest, est Usage, price Price, priced bool) (ModelCall, *EncodedRequest, ModelRequest, error) {
	s := c.s
	req, secrets, why := c.judgeSecrets(ctx, req)
	m, enc, err := c.manifest(req, name, attempt)
	if err != nil {
		return ModelCall{}, nil, req, err
	}
	m.Secrets, m.Redacted = secrets, why == "" && len(secrets) > 0
	estCost := costOf(price, est)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := s.e.now()
	call := ModelCall{ID: s.e.newID(), RunID: s.runID, StepID: c.stepID, Attempt: attempt, Status: ModelDispatched,
		Model: name, DispatchedAt: now}
	m.CallID = call.ID
	if why == "" {
		why = s.e.egress.Decide(m)
	}
	if why != "" {
		err := s.write(ctx, func(tx Tx) error {
			if err := s.requireLive(); err != nil {
				return err
			}
			if _, err := s.guardRead(tx, RunUpdate{}); err != nil {
				return err
			}
			return event(tx, s.runID, c.stepID, now, EventEgressDenied, EgressDeniedPayload{EgressManifest: m, Reason: why})
		})
		if err != nil {
			return call, nil, req, err
		}
		return call, nil, req, &EgressDeniedError{Manifest: m, Reason: why}
	}
	var run Run
	var holds []BudgetHold
	var version string
	err = s.write(ctx, func(tx Tx) error {
		if err := s.requireLive(); err != nil {
			return err
		}
		var err error
		run, err = s.guardRead(tx, RunUpdate{AddCalls: 1})
		if err != nil {
			return err
		}
		if err := c.check(run, req, est, estCost, name, price, priced); err != nil {
			return err
		}
		if holds, version, err = c.reserve(tx, run, call, req, est, m.Provider, now); err != nil {
			return err
		}
		if err := tx.ModelCallInsert(call); err != nil {
			return err
		}
		return event(tx, s.runID, c.stepID, now, EventModelDispatched, ModelDispatchedPayload{CallID: call.ID, Attempt: attempt, Model: name,
			Provider: m.Provider, MaxOutputTokens: req.MaxOutputTokens, Estimate: est, EstimatedCost: estCost,
			Egress: &m, PriceVersion: version, Reservations: holds})
	})
	if err != nil {
		return call, nil, req, err
	}
	if version != "" {
		s.e.pricesStored.Store(true)
	}
	c.reserved[call.ID] = reservation{tokens: satAdd(est.InputTokens, est.OutputTokens), cost: estCost}
	if len(holds) > 0 {
		c.holds[call.ID] = holds
	}
	if run.ModelCalls < math.MaxInt {
		run.ModelCalls++
	}
	s.run = run
	return call, enc, req, nil
}

// check refuses an attempt that would cross a limit: the model calls made,
// or the tokens and cost recorded plus those reserved by attempts in flight
// plus this request's projection. It runs under mu.
func (c *modelCaller) check(run Run, req ModelRequest, est Usage, estCost Micros, name string, price Price, priced bool) error {
	l := run.Limits
	if l.MaxModelCalls > 0 && run.ModelCalls >= l.MaxModelCalls {
		return &LimitError{Reason: ReasonLimitModelCalls,
			Detail: fmt.Sprintf("%d model calls reached the limit of %d", run.ModelCalls, l.MaxModelCalls)}
	}
	if l.MaxTotalTokens > 0 && req.MaxOutputTokens <= 0 {
		return &LimitError{Reason: ReasonLimitTokens,
			Detail: "a request with no output cap cannot be projected under a token limit; set MaxOutputTokens or Limits.MaxOutputTokensPerCall"}
	}
	if l.MaxEstimatedCost > 0 {
		if !priced {
			return &LimitError{Reason: ReasonLimitCost,
				Detail: fmt.Sprintf("model %q has no price, so a cost limit cannot hold; price it in ModelConfig.Prices, or declare it free with a zero Price", name)}
		}
		if price.OutputPerMTok > 0 && req.MaxOutputTokens <= 0 {
			return &LimitError{Reason: ReasonLimitCost,
				Detail: "a request with no output cap cannot be projected under a cost limit; set MaxOutputTokens or Limits.MaxOutputTokensPerCall"}
		}
	}
	var inTokens int64
	var inCost Micros
	for _, r := range c.reserved {
		inTokens = satAdd(inTokens, r.tokens)
		inCost = Micros(satAdd(int64(inCost), int64(r.cost)))
	}
	if l.MaxTotalTokens > 0 {
		used := satAdd(run.Usage.InputTokens, run.Usage.OutputTokens)
		this := satAdd(est.InputTokens, est.OutputTokens)
		if p := satAdd(satAdd(used, inTokens), this); p > l.MaxTotalTokens {
			return &LimitError{Reason: ReasonLimitTokens,
				Detail: fmt.Sprintf("projected %d tokens (%d used, %d in flight, %d for this request) would exceed the limit of %d", p, used, inTokens, this, l.MaxTotalTokens)}
		}
	}
	if l.MaxEstimatedCost > 0 {
		used := run.EstimatedCost
		if p := Micros(satAdd(satAdd(int64(used), int64(inCost)), int64(estCost))); p > l.MaxEstimatedCost {
			return &LimitError{Reason: ReasonLimitCost,
				Detail: fmt.Sprintf("projected cost %d micros (%d spent, %d in flight, %d for this request) would exceed the limit of %d", p, used, inCost, estCost, l.MaxEstimatedCost)}
		}
	}
	return nil
}

// attempt sends req once under the per-attempt timeout and classifies what
// came back. It returns the outcome and when the attempt completed.
func (c *modelCaller) attempt(ctx context.Context, req ModelRequest, enc *EncodedRequest, est Usage, attempt int) (attemptOutcome, time.Time) {
	timeout := c.cfg.CallTimeout
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := c.send(actx, req, enc)
	timedOut := actx.Err() != nil
	cancel()
	completed := c.s.e.now()
	return classify(ctx, resp, err, timedOut, est, attempt), completed
}

// send calls the model, turning a panic into an error. An encoded request
// is sent as the bytes its manifest describes.
func (c *modelCaller) send(ctx context.Context, req ModelRequest, enc *EncodedRequest) (resp ModelResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = ModelResponse{}, &modelPanic{v: p}
		}
	}()
	if em, ok := c.cfg.Model.(EncodedModel); ok && enc != nil {
		return em.SendEncoded(ctx, req, *enc)
	}
	return c.cfg.Model.Generate(ctx, req)
}

// modelPanic is a model's Generate panicking after the request may have gone
// out.
type modelPanic struct{ v any }

func (e *modelPanic) Error() string { return fmt.Sprintf("model panicked: %v", e.v) }

// classify decides how an attempt ended: what it is charged, and whether it
// is retried. ctx is the caller's; timedOut says the attempt's own context
// was done when the model returned.
func classify(ctx context.Context, resp ModelResponse, err error, timedOut bool, est Usage, attempt int) attemptOutcome {
	unavailable := func(last error) error { return &ModelUnavailableError{Attempts: attempt, Last: last} }
	if err == nil {
		if why := implausible(resp.Usage); why != "" {
			last := fmt.Errorf("%w: %s", ErrUnusableUsage, why)
			return attemptOutcome{status: ModelError, charged: est, errText: "unusable usage: " + why, final: unavailable(last), unknown: true}
		}
		return attemptOutcome{status: ModelOK, charged: resp.Usage, resp: resp}
	}
	msg := errorText(err)
	var panicked *modelPanic
	if errors.As(err, &panicked) {
		// The request may have been served before the panic.
		return attemptOutcome{status: ModelError, charged: est, errText: msg, final: unavailable(err), unknown: true}
	}
	var served *ServedError
	if errors.As(err, &served) {
		// Served and billed: charged what the provider reported, and never
		// retried, since a retry is billed again.
		if errors.Is(err, ErrUnusableUsage) {
			return attemptOutcome{status: ModelError, charged: est, errText: "unusable usage: " + msg, final: unavailable(err), unknown: true}
		}
		if why := implausible(served.Usage); why != "" {
			last := fmt.Errorf("%w: %s (%w)", ErrUnusableUsage, why, err)
			return attemptOutcome{status: ModelError, charged: est, errText: "unusable usage: " + why + ": " + msg, final: unavailable(last), unknown: true}
		}
		return attemptOutcome{status: ModelError, charged: served.Usage, errText: msg, final: unavailable(err)}
	}
	if cerr := ctx.Err(); cerr != nil {
		// The caller gave up with the request in flight: it may have been
		// served, so it is charged the estimate, and not retried.
		return attemptOutcome{status: ModelAmbiguous, charged: est, errText: "cancelled in flight: " + msg, final: cerr, unknown: true}
	}
	if timedOut || ambiguous(err) {
		return attemptOutcome{status: ModelAmbiguous, charged: est, errText: msg, retry: true, last: err, unknown: true}
	}
	var transient *TransientError
	if errors.As(err, &transient) {
		return attemptOutcome{status: ModelError, errText: msg, retry: true, last: err}
	}
	return attemptOutcome{status: ModelError, errText: msg, final: unavailable(err)}
}

// ambiguous reports whether err says the attempt ended after the request may
// have been sent: a timeout, or a connection closed or cut. It is matched by
// type, never by text, and sees through a TransientError, since an adapter
// may call a reset worth retrying without knowing whether it was served.
func ambiguous(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op != "dial" {
		// A read or write failed on a connection that was up; a dial that
		// failed sent nothing.
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// implausible says why usage reported on a served reply cannot be believed,
// or "".
func implausible(u Usage) string {
	for _, f := range []struct {
		name string
		n    int64
	}{{"input tokens", u.InputTokens}, {"output tokens", u.OutputTokens}, {"cached input tokens", u.CachedInputTokens}} {
		if f.n < 0 {
			return fmt.Sprintf("%s is negative (%d)", f.name, f.n)
		}
		if f.n > maxPlausibleTokens {
			return fmt.Sprintf("%s %d is more than any call uses", f.name, f.n)
		}
	}
	if u.CachedInputTokens > u.InputTokens {
		return fmt.Sprintf("cached input tokens %d exceed input tokens %d", u.CachedInputTokens, u.InputTokens)
	}
	return ""
}

// record writes an attempt's outcome: the row, the run's totals and the
// event, in one transaction on a context the caller's cancellation does not
// reach. A run that moved on while the request was in flight (an operator
// cancelled it, another process took it over) still gets the attempt's cost.
func (c *modelCaller) record(ctx context.Context, call ModelCall, out attemptOutcome, cost Micros, completed time.Time) error {
	s := c.s
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	charged := Usage{InputTokens: max(out.charged.InputTokens, 0), OutputTokens: max(out.charged.OutputTokens, 0),
		CachedInputTokens: max(out.charged.CachedInputTokens, 0)}
	latency := max(completed.Sub(call.DispatchedAt), 0)
	fin := ModelCallFinish{ID: call.ID, Status: out.status, Usage: charged, Cost: cost, Latency: latency,
		Error: clipText(out.errText, maxErrorText), CompletedAt: completed}
	typ := EventModelFailed
	if out.status == ModelOK {
		typ = EventModelCompleted
	}
	payload := ModelCallFinishedPayload{CallID: call.ID, Attempt: call.Attempt, Status: out.status, Model: call.Model,
		Usage: charged, Cost: cost, LatencyMS: latency.Milliseconds(), Error: fin.Error}
	if out.status == ModelOK {
		payload.StopReason = clipText(out.resp.StopReason, maxStopReason)
	}
	c.mu.Lock()
	holds := c.holds[call.ID]
	c.mu.Unlock()
	if len(holds) > 0 {
		payload.PriceVersion = s.e.prices.idOrEmpty()
	}
	settle := func(tx Tx) error {
		notes, err := settleHolds(tx, call.ID, holds, out, charged, cost, completed, s.e.owner)
		payload.Settlements = notes
		return err
	}
	var run Run
	err := s.write(rctx, func(tx Tx) error {
		var err error
		run, err = s.guardRead(tx, RunUpdate{AddUsage: charged, AddCost: cost})
		if err != nil {
			return err
		}
		if err := tx.ModelCallFinish(fin); err != nil {
			return err
		}
		if err := settle(tx); err != nil {
			return err
		}
		return event(tx, s.runID, c.stepID, completed, typ, payload)
	})
	late := false
	if errors.Is(err, ErrRunState) || errors.Is(err, ErrLeaseLost) {
		late = true
		payload.Late = true
		err = s.write(rctx, func(tx Tx) error {
			if err := tx.ModelCallFinish(fin); err != nil {
				return err
			}
			if charged != (Usage{}) || cost > 0 {
				if err := tx.RunUpdate(RunUpdate{ID: s.runID, AddUsage: charged, AddCost: cost}); err != nil {
					return err
				}
			}
			if err := settle(tx); err != nil {
				return err
			}
			return event(tx, s.runID, c.stepID, completed, typ, payload)
		})
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reserved, call.ID)
	delete(c.holds, call.ID)
	if !late {
		run.Usage.InputTokens = satAdd(run.Usage.InputTokens, charged.InputTokens)
		run.Usage.OutputTokens = satAdd(run.Usage.OutputTokens, charged.OutputTokens)
		run.Usage.CachedInputTokens = satAdd(run.Usage.CachedInputTokens, charged.CachedInputTokens)
		run.EstimatedCost = Micros(satAdd(int64(run.EstimatedCost), int64(cost)))
		s.run = run
	}
	return nil
}

// maxStopReason bounds the provider-chosen stop reason an event records.
const maxStopReason = 64

// provider names the model's provider when the Model says (ModelProvider).
func (c *modelCaller) provider() string {
	if p, ok := c.cfg.Model.(ModelProvider); ok {
		return clipText(p.Provider(), maxStopReason)
	}
	return ""
}

// retryWait is how long to wait before the attempt after attempt: the
// exponential backoff or the provider's Retry-After, whichever is longer. A
// wait that cannot fit (past MaxRetryAfter, the context's deadline, or a
// time limit of the run) is an error, returned without waiting.
func (c *modelCaller) retryWait(ctx context.Context, attempt int, last error, completed time.Time) (time.Duration, error) {
	base := c.cfg.Backoff
	if base <= 0 {
		base = defaultBackoff
	}
	wait := time.Duration(math.MaxInt64)
	if shift := attempt - 1; shift < 63 && base <= time.Duration(math.MaxInt64>>shift) {
		wait = base << shift
	}
	fail := func(format string, args ...any) (time.Duration, error) {
		return 0, fmt.Errorf("%s; last error: %w", fmt.Sprintf(format, args...), last)
	}
	var te *TransientError
	if errors.As(last, &te) && te.RetryAfter > 0 {
		maxAfter := c.cfg.MaxRetryAfter
		if maxAfter <= 0 {
			maxAfter = DefaultMaxRetryAfter
		}
		if te.RetryAfter > maxAfter {
			return fail("the provider asked to wait %s, longer than the %s ModelConfig.MaxRetryAfter allows", te.RetryAfter, maxAfter)
		}
		wait = max(wait, te.RetryAfter)
	}
	if dl, ok := ctx.Deadline(); ok && wait >= dl.Sub(c.s.e.wall()) {
		return fail("waiting %s to retry would pass the context's deadline", wait)
	}
	c.mu.Lock()
	run := c.s.run
	c.mu.Unlock()
	l := run.Limits
	if l.MaxElapsedTime > 0 {
		if left := l.MaxElapsedTime - completed.Sub(run.CreatedAt); wait >= left {
			return fail("waiting %s to retry would reach the run's elapsed time limit of %s", wait, l.MaxElapsedTime)
		}
	}
	if l.MaxActiveTime > 0 {
		used := time.Duration(satAdd(int64(run.ActiveTime), int64(max(completed.Sub(c.stepStart), 0))))
		if left := l.MaxActiveTime - used; wait >= left {
			return fail("waiting %s to retry would reach the run's active time limit of %s", wait, l.MaxActiveTime)
		}
	}
	return wait, nil
}

// sleep waits d or until ctx is done.
func (c *modelCaller) sleep(ctx context.Context, d time.Duration) error {
	if c.cfg.sleep != nil {
		return c.cfg.sleep(ctx, d)
	}
	return ctxsleep.Sleep(ctx, d)
}

// errorText is err's message, even from an error whose Error panics.
func errorText(err error) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("%T (its Error method panicked)", err)
		}
	}()
	return err.Error()
}

// clipText makes s valid UTF-8 and cuts it to at most n bytes without
// splitting a rune.
func clipText(s string, n int) string {
	return textcut.Truncate(strings.ToValidUTF8(s, "\uFFFD"), n)
}
