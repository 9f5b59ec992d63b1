package agentrt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// DefaultLeaseTTL is how long a run's lease lasts without renewal when
// Config.LeaseTTL is zero.
const DefaultLeaseTTL = 30 * time.Second

// EngineConfig is what a Driver, a Gate and a Worker share: the store, the
// policy, the tools, the clocks and the trust placed in approvers. Config,
// GateConfig and WorkerConfig embed it, so a field added here reaches all
// three (TestConfig_EveryEngineFieldReachesDriverGateAndWorker). Store and
// Policy are required; zero means the documented default for every other
// field.
type EngineConfig struct {
	// Store is where runs are recorded (sqlite.Open, postgres.Open).
	Store Store
	// Policy judges every validated request.
	Policy Policy
	// Tools that may be requested; names must be unique.
	Tools []Tool
	// Observer hears each event after its commit; nil hears nothing.
	Observer Observer
	// Model, when set, is wrapped in the accounting caller handed to the
	// agent as StepInput.Model (a Gate's OpenStep.Model). Nil for scripted
	// agents.
	Model *ModelConfig
	// Reconcile, when set, is asked what became of a step a crash cut off.
	Reconcile func(ctx context.Context, view RunView) (Reconciliation, error)
	// Now is the clock recorded times come from; zero means time.Now.
	Now func() time.Time
	// NewID makes run, step and approval ids; zero means 128-bit hex ids: 48 bits of milliseconds, then 80 random bits.
	NewID func() string
	// LeaseTTL is how long a run's lease lasts unrenewed; zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// LeaseOwner names this process in leases; a random suffix is always
	// added, so two engines given one name are two owners.
	LeaseOwner string
	// PinnedKeys, when set, are the only approver keys a grant may be
	// signed with (LoadPinnedKeys reads them from an owner-only file
	// outside the database), so that whoever can write the database cannot
	// enroll a key of their own and sign with it. With pinned keys every
	// grant must be signed by a pinned, unremoved approver: an unsigned
	// grant executes nothing. Nil trusts every key enrolled in the
	// database, and unsigned grants where nothing requires a signature.
	PinnedKeys *PinnedKeys
	// RequireSignedGrant demands a signed grant for every run this engine
	// starts or resumes, whatever the run's own Limits say.
	RequireSignedGrant bool
	// Egress, when set, decides every provider request from its manifest
	// before transport (allowed providers, models and hosts, a byte
	// ceiling on the whole serialized request); a denied request never
	// leaves the process, and both kinds are recorded. Nil allows every
	// request; each is still recorded with its manifest.
	Egress *EgressRules
	// Prices, when set, is the price table model calls are charged at,
	// for the run's cost limits and for shared budgets, loaded as an
	// immutable version named by its canonical hash (NewPriceVersion).
	// Nil uses Model.Prices, versioned the same way; setting both is a
	// ConfigError. A budget with a cost ceiling refuses a model this
	// table does not price.
	Prices PriceTable
	// Disclosure, when set, judges every tool outcome before it is
	// recorded or handed to the model or the host: what it removes or
	// redacts is never stored, and each time it acts a disclosure.applied
	// event says where and by which rule. It may only take away (the
	// engine withholds a result it would widen). Nil records and returns
	// outcomes as tools produced them.
	Disclosure Disclosure
	// AwaitCheckpoint, when set, is called after each of the engine's
	// commits with the last event it wrote, and the engine goes on only
	// when it returns: the synchronous mode, in which a commit waits for
	// the checkpoint that folds it (checkpoint.Integrator.Await), so no
	// event the engine acted on is protected by its run's chain alone. Its
	// error is the step's (the commit stands). Nil goes on at commit; a
	// background integrator folds the events within its interval.
	AwaitCheckpoint func(ctx context.Context, last Event) error
}

// Config configures a Driver: the engine and the agent that decides each
// step. Store, Agent and Policy are required.
type Config struct {
	EngineConfig
	// Agent decides each step.
	Agent Agent
}

// ReconcileOutcome is a consumer's answer about an interrupted step.
type ReconcileOutcome string

const (
	// ReconcileContinue: the agent decides anew.
	ReconcileContinue ReconcileOutcome = "continue"
	// ReconcileCompleted: the run completes with Result.
	ReconcileCompleted ReconcileOutcome = "completed"
	// ReconcileWaiting: re-pause the interrupted call on Pause.
	ReconcileWaiting ReconcileOutcome = "waiting"
	// ReconcileConflict: the run fails with reconcile_conflict.
	ReconcileConflict ReconcileOutcome = "conflict"
)

// Reconciliation is what a consumer's journal says about an interrupted step.
type Reconciliation struct {
	Outcome ReconcileOutcome
	Result  json.RawMessage
	Detail  string
	// Pause must be a require_approval decision for ReconcileWaiting.
	Pause *PolicyDecision
}

// newRandomID makes a 128-bit id: 48 bits of milliseconds since the epoch,
// then 80 random bits. Ids made later sort later (within a millisecond, in
// any order), so new rows land at the end of the id indexes instead of on a
// random page: fewer pages written per commit. 80 random bits keep ids
// unguessable and unique across processes.
func newRandomID() string {
	var b [16]byte
	if _, err := rand.Read(b[6:]); err != nil {
		panic("agentrt: crypto/rand failed: " + err.Error())
	}
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	return hex.EncodeToString(b[:])
}
