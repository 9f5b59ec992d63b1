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

// Config configures a Driver. Store, Agent and Policy are required.
type Config struct {
	// Store is where runs are recorded (sqlite.Open).
	Store Store
	// Agent decides each step.
	Agent Agent
	// Policy judges every validated request.
	Policy Policy
	// Tools the agent may request; names must be unique.
	Tools []Tool
	// Observer hears each event after its commit; nil hears nothing.
	Observer Observer
	// Model, when set, is wrapped in the accounting caller handed to the
	// agent as StepInput.Model. Nil for scripted agents.
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
	// added, so two drivers given one name are two owners.
	LeaseOwner string
	// PinnedKeys, when set, are the only approver keys a signed grant may
	// be signed with (LoadPinnedKeys reads them from an owner-only file
	// outside the database), so that whoever can write the database cannot
	// enroll a key of their own and sign with it. Nil trusts every key
	// enrolled in the database.
	PinnedKeys *PinnedKeys
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
