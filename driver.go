package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Driver runs agents: it owns the loop that asks the agent, records, validates,
// judges and executes. A Driver is safe for concurrent use across runs; one run
// is executed by one call at a time.
type Driver struct {
	e     *engine
	agent Agent
}

// engine is what a Driver and a Gate share: registration, clocks, the store
// and the lease identity.
type engine struct {
	store     Store
	policy    Policy
	policyID  string
	tools     map[string]*regTool
	specs     []ToolSpec // sorted by name
	toolList  json.RawMessage
	observer  Observer
	model     *ModelConfig
	reconcile func(ctx context.Context, view RunView) (Reconciliation, error)
	now       func() time.Time
	newID     func() string
	wall      func() time.Time // lease clock: the wall clock, never Config.Now
	leaseTTL  time.Duration
	owner     string
	pinned    *PinnedKeys
	// requireSigned is EngineConfig.RequireSignedGrant: every grant of
	// every run needs a valid signature.
	requireSigned bool
	// egress is EngineConfig.Egress; prices the versioned table calls
	// are charged at (nil: none), and pricesStored says this engine has
	// stored it.
	egress       *EgressRules
	prices       *PriceVersion
	pricesStored atomic.Bool
	// disclosure is EngineConfig.Disclosure (disclosure.go).
	disclosure Disclosure
	// described is its description for run.created, or nil.
	described json.RawMessage
	// awaitCheckpoint is EngineConfig.AwaitCheckpoint.
	awaitCheckpoint func(ctx context.Context, last Event) error

	mu     sync.Mutex
	active map[string]bool
}

type regTool struct {
	tool      Tool
	spec      ToolSpec
	schema    *ToolSchema
	hash      string
	canonical []byte
	// specOnly: registered by SpecOnly; its body comes with each call.
	specOnly bool
}

// NewDriver checks cfg and registers its tools. Each tool must compile (see
// CompileTool); names must be unique.
func NewDriver(cfg Config) (*Driver, error) {
	if cfg.Agent == nil {
		return nil, &ConfigError{Field: "Config.Agent", Reason: "is required"}
	}
	e, err := newEngine(cfg.EngineConfig)
	if err != nil {
		return nil, err
	}
	return &Driver{e: e, agent: cfg.Agent}, nil
}

func newEngine(cfg EngineConfig) (*engine, error) {
	if err := checkEngineConfig(cfg); err != nil {
		return nil, err
	}
	prices, err := enginePrices(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.LeaseTTL < 0 {
		return nil, &ConfigError{Field: "Config.LeaseTTL", Reason: "must not be negative"}
	}
	e := &engine{
		store: cfg.Store, policy: cfg.Policy, observer: cfg.Observer, model: cfg.Model,
		reconcile: cfg.Reconcile, now: cfg.Now, newID: cfg.NewID, wall: time.Now,
		leaseTTL: cfg.LeaseTTL, tools: map[string]*regTool{}, active: map[string]bool{}, pinned: cfg.PinnedKeys,
		requireSigned: cfg.RequireSignedGrant, egress: cfg.Egress, prices: prices,
		disclosure: cfg.Disclosure, awaitCheckpoint: cfg.AwaitCheckpoint,
	}
	if e.described, err = describeDisclosure(cfg.Disclosure); err != nil {
		return nil, err
	}
	if e.now == nil {
		e.now = time.Now
	}
	// Recorded times are UTC without a monotonic reading, as the store
	// keeps them, so what the loop caches and an observer hears equals what
	// a reload gives.
	clock := e.now
	e.now = func() time.Time { return clock().UTC() }
	if e.newID == nil {
		e.newID = newRandomID
	}
	if e.leaseTTL == 0 {
		e.leaseTTL = DefaultLeaseTTL
	}
	suffix := newRandomID()[20:] // 48 of the 80 random bits
	if cfg.LeaseOwner != "" {
		e.owner = cfg.LeaseOwner + "/" + suffix
	} else {
		e.owner = suffix
	}
	if e.policyID, err = policyIDOf(cfg.Policy); err != nil {
		return nil, err
	}
	if err := e.registerTools(cfg.Tools); err != nil {
		return nil, err
	}
	return e, nil
}

// checkEngineConfig refuses a configuration without a store or a policy,
// a model configuration without a model or with a negative bound, and bad
// egress rules.
func checkEngineConfig(cfg EngineConfig) error {
	if cfg.Store == nil {
		return &ConfigError{Field: "Config.Store", Reason: "is required"}
	}
	if cfg.Policy == nil {
		return &ConfigError{Field: "Config.Policy", Reason: "is required"}
	}
	if m := cfg.Model; m != nil {
		if m.Model == nil {
			return &ConfigError{Field: "Config.Model.Model", Reason: "is required when Config.Model is set"}
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"Config.Model.CallTimeout", int64(m.CallTimeout)}, {"Config.Model.MaxRetries", int64(m.MaxRetries)},
			{"Config.Model.Backoff", int64(m.Backoff)}, {"Config.Model.MaxRetryAfter", int64(m.MaxRetryAfter)}} {
			if f.v < 0 {
				return &ConfigError{Field: f.name, Reason: fmt.Sprintf("must not be negative, got %d", f.v)}
			}
		}
	}
	return cfg.Egress.check(cfg.Disclosure)
}

// policyIDOf is the id an IdentifiedPolicy gives, checked, or "".
func policyIDOf(p Policy) (string, error) {
	ip, ok := p.(IdentifiedPolicy)
	if !ok {
		return "", nil
	}
	id := ip.PolicyID()
	if len(id) > 256 || !utf8.ValidString(id) || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return "", &ConfigError{Field: "PolicyID()", Reason: "must be at most 256 bytes of UTF-8 without control characters"}
	}
	return id, nil
}

// registerTools compiles and registers each tool once, then lists their
// specs and the JSON list of their hashes in name order.
func (e *engine) registerTools(tools []Tool) error {
	for i, t := range tools {
		if t == nil {
			return &ConfigError{Field: fmt.Sprintf("Config.Tools[%d]", i), Reason: "is nil"}
		}
		spec := t.Spec()
		ts, err := CompileTool(spec)
		if err != nil {
			return err
		}
		if _, dup := e.tools[spec.Name]; dup {
			return &ConfigError{Field: "Config.Tools", Reason: fmt.Sprintf("registers %q twice", spec.Name)}
		}
		h, c, err := specHash(ts.spec)
		if err != nil {
			return err
		}
		_, specOnly := t.(specOnlyTool)
		e.tools[spec.Name] = &regTool{tool: t, spec: ts.spec, schema: ts, hash: h, canonical: c, specOnly: specOnly}
	}
	hashes := make([]string, 0, len(e.tools))
	for _, n := range slices.Sorted(maps.Keys(e.tools)) {
		e.specs = append(e.specs, e.tools[n].spec)
		hashes = append(hashes, e.tools[n].hash)
	}
	e.toolList, _ = json.Marshal(hashes)
	return nil
}

// claim marks a run as executed by this engine; a second concurrent call on
// it is refused.
func (e *engine) claim(runID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active[runID] {
		return &RunLeasedError{RunID: runID, Owner: e.owner}
	}
	e.active[runID] = true
	return nil
}

func (e *engine) unclaim(runID string) {
	e.mu.Lock()
	delete(e.active, runID)
	e.mu.Unlock()
}

// committed is what follows each commit of the engine: in synchronous
// mode, the wait for the checkpoint that folds the last event evs holds,
// then delivery to the observer (which hears committed events whatever
// the wait returned).
func (e *engine) committed(ctx context.Context, evs []Event) error {
	var err error
	if e.awaitCheckpoint != nil && len(evs) > 0 {
		last := evs[0]
		for _, ev := range evs[1:] {
			if ev.Seq > last.Seq {
				last = ev
			}
		}
		err = e.awaitCheckpoint(ctx, last)
	}
	e.deliver(evs)
	return err
}

func (e *engine) deliver(evs []Event) {
	if e.observer == nil {
		return
	}
	for _, ev := range evs {
		e.observer(ev)
	}
}

// Start creates a run with a new id and runs it until it ends, pauses, or ctx
// is cancelled.
func (d *Driver) Start(ctx context.Context, goal string, limits Limits) (Run, error) {
	return d.StartWithID(ctx, d.e.newID(), goal, limits)
}

// StartWithID is Start with a caller-chosen id, which must be new and
// non-empty.
func (d *Driver) StartWithID(ctx context.Context, id, goal string, limits Limits) (Run, error) {
	s, err := d.e.begin(ctx, id, goal, limits)
	if err != nil {
		return Run{}, err
	}
	defer s.close()
	return s.drive(ctx, d.agent)
}

// Resume continues a run: a WAITING run whose approval was granted executes
// the approved request and continues; a RUNNING run whose lease lapsed is
// taken over. A terminal run is refused with ErrRunState. A granted call to
// a tool registered by spec only (SpecOnly) is refused with ErrNoToolBody,
// changing nothing: only the caller holding its body runs it.
func (d *Driver) Resume(ctx context.Context, runID string) (Run, error) {
	s, v, err := d.e.attach(ctx, runID)
	if err != nil {
		return v.Run, err
	}
	defer s.close()
	switch v.Outcome {
	case VerdictPending, VerdictEnded:
		return v.Run, nil
	case VerdictAllowed:
		if ac := s.cur.allowed; ac.tool.specOnly {
			// Nothing is written before the tool starts: the grant stays
			// for the caller that holds the body.
			return v.Run, fmt.Errorf("%w: step %d calls %q, registered by spec only: its caller attaches (Gate.Attach) and runs it with ExecuteFunc",
				ErrNoToolBody, s.step(s.cur.idx).Index, ac.tool.spec.Name)
		}
		if _, err := s.execute(ctx); err != nil {
			return s.run, err
		}
	}
	return s.drive(ctx, d.agent)
}

// Cancel cancels a run on the driver's clock.
func (d *Driver) Cancel(ctx context.Context, runID, by, note string) (Run, error) {
	return d.e.operator().Cancel(ctx, runID, by, note)
}

func (e *engine) operator() Operator {
	return Operator{Store: e.store, Observer: e.observer, Now: e.now}
}
