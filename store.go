package agentrt

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxPageText caps every text column a page read returns, in bytes.
const MaxPageText = 64 << 10

// MaxStoredValue is the hard bound on any one stored value a read will load,
// in bytes: above anything agentrt writes, so a larger value can only come
// from a crafted or damaged file. Reads report such a value by its size as
// not read whole; verification reports it as a break.
const MaxStoredValue = 16 << 20

// Store is the storage seam between the engine and a backend. It is
// implemented by the sqlite and postgres packages and exercised by
// storetest.Exercise. It is not a user extension point: its methods may change
// between minor versions as the engine needs.
type Store interface {
	StoreReader
	// Update runs fn in one write transaction and commits it. fn may run
	// inside a transaction shared with other concurrent Updates (group
	// commit): an error from fn rolls back only fn's writes. To do that the
	// store may run a batch again (then with a savepoint per Update), so fn
	// may be called more than once and must do nothing outside tx that it
	// cannot repeat. Update returns the events fn appended, for delivery to
	// observers after the commit; on error nothing fn wrote is kept.
	Update(ctx context.Context, fn func(Tx) error) ([]Event, error)
	// RenewLease extends the lease of a RUNNING run held by p.Owner at
	// p.Generation, outside any transaction, on a connection of its own
	// where the backend has one. Zero rows affected is ErrLeaseLost.
	RenewLease(ctx context.Context, p LeaseRenewal) error
	Close() error
}

// LeaseRenewal names a lease and its new term. A store that keeps lease
// time on the database's clock (DatabaseClock) writes the database's now
// plus TTL and ignores ExpiresAt; any other writes ExpiresAt.
type LeaseRenewal struct {
	RunID      string
	Owner      string
	Generation int64
	ExpiresAt  time.Time
	TTL        time.Duration
}

// DatabaseClock is an optional capability of a Store, and of the Tx its
// Update hands out, whose lease times are kept on the database's clock
// rather than each worker's: Postgres, where workers on many hosts share
// one database and their clocks need not agree. Such a store writes every
// lease expiry as its own now plus a TTL (RunUpdate.LeaseTTL,
// LeaseRenewal.TTL) and judges lapses against it; the engine compares
// stored expiries only with DatabaseNow. A worker still stops trusting a
// lease by its own clock, counted from before the write that took it.
type DatabaseClock interface {
	// DatabaseNow returns the database's time: inside a Tx, the
	// transaction's (one time for all it writes).
	DatabaseNow(ctx context.Context) (time.Time, error)
}

// Enqueuer is an optional capability of a Store: Enqueue puts a write in
// the writer's queue before it returns and hands back the wait that
// commits it, with what Update would return. Writes queued one after
// another are applied in that order, sharing a commit where they meet. A
// gate queues a step's opening with its session's lock held and waits
// without it, so siblings opening at once share commits and still take
// their indexes in order.
type Enqueuer interface {
	Enqueue(fn func(Tx) error) func() ([]Event, error)
}

// Waker is an optional capability of a Store whose database can tell idle
// workers that a commit, by any process, may have made a run claimable: a
// run enqueued, a lease released, an approval decided (Postgres, with
// LISTEN/NOTIFY). A worker claims on each wakeup as on a poll; polling
// stays the fallback, so a missed or late wakeup only costs time.
type Waker interface {
	// Wakeups returns a channel that receives, coalesced, after each such
	// commit until ctx is done. An error means wakeups are unavailable and
	// the caller polls.
	Wakeups(ctx context.Context) (<-chan struct{}, error)
}

// RunIDFinder is an optional capability of a Store that can find runs by
// the start of their id, so a person may type the short id a trail prints
// (sqlite, postgres). Front ends resolve through view.ResolveRunID.
type RunIDFinder interface {
	// RunIDsByPrefix returns at most limit ids of runs that begin with
	// prefix, in byte order, read from the primary key's index. An empty
	// prefix or a limit below 1 is an error.
	RunIDsByPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
}

// StoreReader holds the read methods a front end uses. Full reads decode
// every row; a row that will not decode carries DecodeError rather than
// failing the read. Page reads are bounded for possibly hostile files.
type StoreReader interface {
	GetRun(ctx context.Context, id string) (Run, error)
	ListRuns(ctx context.Context) ([]Run, error)
	ListSteps(ctx context.Context, runID string) ([]Step, error)
	ListApprovals(ctx context.Context, runID string) ([]Approval, error)
	GetApproval(ctx context.Context, runID, approvalID string) (Approval, error)
	ListEvents(ctx context.Context, runID string) ([]Event, error)
	ListModelCalls(ctx context.Context, runID string) ([]ModelCall, error)
	GetSpec(ctx context.Context, hash string) (json.RawMessage, error)

	// Page reads return one page, every text column capped at MaxPageText,
	// and the total from COUNT.
	ListRunsPage(ctx context.Context, limit, offset int) ([]Run, int, error)
	// ListRunsByStatusPage is ListRunsPage of one status (status "" is every
	// run); a status that is not a RunStatus is an error.
	ListRunsByStatusPage(ctx context.Context, status RunStatus, limit, offset int) ([]Run, int, error)
	GetRunCapped(ctx context.Context, id string) (Run, error)
	ListStepsPage(ctx context.Context, runID string, limit, offset int) ([]Step, int, error)
	ListApprovalsPage(ctx context.Context, runID string, status ApprovalStatus, limit, offset int) ([]Approval, int, error)
	ListEventsPage(ctx context.Context, runID string, limit, offset int) ([]Event, int, error)
	// ListEventsAfter reads at most limit events with seq > after, in commit
	// order, of one run or (runID "") of all: a follower's read. It never counts,
	// a page may end early to bound its bytes (only an empty page means
	// caught up), and a payload over MaxStoredValue reads as a stand-in.
	ListEventsAfter(ctx context.Context, runID string, after int64, limit int) ([]Event, error)
	// ListStepEvents reads at most limit events of one step with seq > after,
	// in commit order, under the same bounds: a resume's read of what the
	// chain recorded for the step it continues, whatever the run's length.
	ListStepEvents(ctx context.Context, runID, stepID string, after int64, limit int) ([]Event, error)
	// ListStepsEvents reads at most limit events of type typ of any of the
	// named steps of one run, in commit order, under the same bounds: what
	// a page listing many steps needs of their events, in one read.
	ListStepsEvents(ctx context.Context, runID string, stepIDs []string, typ EventType, limit int) ([]Event, error)

	// StepsByRequestKey reads at most limit steps, of any run, whose tool
	// call was recorded under the request key (RequestKey), newest first:
	// a restarted caller's look-up of an identical request's earlier
	// answer. Steps recorded before keys were (schema version 8) have none.
	StepsByRequestKey(ctx context.Context, key string, limit int) ([]Step, error)

	// VerifyEvents checks the hash chain from seq from to seq to (from < 1:
	// the first; to < 1: the head) and reports the first event that does not
	// chain. It writes nothing.
	VerifyEvents(ctx context.Context, from, to int64) (VerifyReport, error)
	// ChainHead returns the newest event's seq and hash (0, "" when empty).
	ChainHead(ctx context.Context) (int64, string, error)
	// EventHash returns the stored hash of the event at seq.
	EventHash(ctx context.Context, seq int64) (string, error)

	// ListWaitingApprovals reads one page of the pending approvals of
	// every run, oldest first, columns capped as other page reads, and the
	// total: the inbox. Decide from a GetApproval read, not from a page.
	ListWaitingApprovals(ctx context.Context, limit, offset int) ([]Approval, int, error)
	// ListApprovers reads every approver ever enrolled, removed ones
	// included, in enrollment order.
	ListApprovers(ctx context.Context) ([]EnrolledApprover, error)
	// GetApprover reads one approver by id.
	GetApprover(ctx context.Context, id string) (EnrolledApprover, error)
}

// Tx is one write transaction (or savepoint) handed to Update's fn. Writes
// that change state are compare-and-set: a mismatch returns ErrRunState and
// writes nothing.
type Tx interface {
	RunGet(id string) (Run, error)
	RunInsert(r Run) error
	// RunUpdate applies p if the run matches p's expectations.
	RunUpdate(p RunUpdate) error
	StepInsert(s Step) error
	StepUpdate(p StepUpdate) error
	StepList(runID string) ([]Step, error)
	ApprovalInsert(a Approval) error
	ApprovalGet(runID, id string) (Approval, error)
	ApprovalList(runID string) ([]Approval, error)
	ApprovalDecide(p ApprovalDecide) error
	ModelCallInsert(c ModelCall) error
	ModelCallFinish(p ModelCallFinish) error
	// SpecPut stores a spec's canonical JSON under its hash if absent.
	SpecPut(hash string, canonical []byte) error
	// EventAppend appends an event to its run's chain and returns it, with
	// its seq where the store assigns seqs itself (SQLite); where the
	// database numbers events (Postgres) the seq is zero here, and the
	// events Update returns, once committed, carry it.
	EventAppend(e Event) (Event, error)
	// ApproverInsert enrolls an approver. A name an unremoved approver
	// holds, or a credential already enrolled, is ErrApproverExists.
	ApproverInsert(a EnrolledApprover) error
	ApproverGet(id string) (EnrolledApprover, error)
	// ApproverByName reads the unremoved approver with the name.
	ApproverByName(name string) (EnrolledApprover, error)
	// ApproverRemove marks an unremoved approver removed; one already
	// removed is ErrRunState.
	ApproverRemove(p ApproverRemove) error
	// ApproverSetAccess sets an unremoved approver's roles and scope; a
	// removed one is ErrRunState.
	ApproverSetAccess(p ApproverSetAccess) error
	// ApproverList reads every approver, removed ones included, in
	// enrollment order.
	ApproverList() ([]EnrolledApprover, error)
	// VoteInsert records a vote; a second vote by the same approver on
	// the same approval is ErrAlreadyVoted and writes nothing.
	VoteInsert(v Vote) error
	// VoteList reads an approval's votes in the order they were cast.
	VoteList(approvalID string) ([]Vote, error)
	InviteInsert(i ApproverInvite) error
	// InviteGet reads an invitation by the SHA-256 of its token.
	InviteGet(tokenHash string) (ApproverInvite, error)
	// InviteUse marks an unused invitation used by an approver; one
	// already used is ErrRunState.
	InviteUse(p InviteUse) error
	// RunClaim leases up to p.Limit runnable runs to p.Owner, oldest first,
	// bumping each one's generation, and returns them as they were before:
	// ENQUEUED runs, RUNNING runs whose lease is free or lapsed, and
	// WAITING runs with a step awaiting approval and none pending (or, with
	// ApprovalsNow, one pending past its expiry). Rows
	// another transaction holds are skipped, not waited on.
	RunClaim(p RunClaim) ([]Run, error)

	// BudgetInsert stores a new budget; a name an unretired budget holds
	// is *BudgetError.
	BudgetInsert(b Budget) error
	// BudgetUpdate is a compare-and-set on an unretired budget at
	// p.Version.
	BudgetUpdate(p BudgetUpdate) error
	BudgetGet(id string) (Budget, error)
	// BudgetByName reads the unretired budget with the name.
	BudgetByName(name string) (Budget, error)
	// BudgetListActive reads the unretired budgets, ordered by id: the
	// fields a reservation needs (id, name, scope, window, ceilings and
	// version).
	BudgetListActive() ([]Budget, error)
	// BudgetReserve holds r.Reserved in r's window of b if the window's
	// reserved, settled and uncertain amounts plus r stay within b's
	// ceilings, in one conditional statement, and records r; a window
	// without room is *BudgetError and nothing is written.
	BudgetReserve(r BudgetReservation, b Budget) error
	// BudgetSettle moves a reservation on from p.From by compare-and-set
	// (another status is ErrRunState), and p.Reserved between its
	// window's columns.
	BudgetSettle(p BudgetSettlement) error
	// ReservationList reads a call's reservations.
	ReservationList(callID string) ([]BudgetReservation, error)
	// PriceVersionPut stores v if its id is absent and reports whether it
	// did; an id stored with other content is ErrTamperedRecord.
	PriceVersionPut(v PriceVersion) (bool, error)
}

// ApproverRemove is a compare-and-set on an approver: it must not be
// removed yet.
type ApproverRemove struct {
	ID        string
	RemovedAt time.Time
	RemovedBy string
}

// ApproverSetAccess replaces an unremoved approver's roles and scope.
type ApproverSetAccess struct {
	ID     string
	Access ApproverAccess
}

// InviteUse is a compare-and-set on an invitation: it must be unused.
type InviteUse struct {
	ID         string
	UsedAt     time.Time
	ApproverID string
}

// RunClaim asks for runnable work. A lease lapses by Now, or by the
// database's clock in a DatabaseClock store; a claim's lease runs until
// Now+TTL, or the database's now plus TTL.
type RunClaim struct {
	Owner string
	Limit int
	Now   time.Time
	TTL   time.Duration
	// ApprovalsNow, when set, also makes runnable a WAITING run whose
	// pending approval expired by then (the engine's clock, Config.Now,
	// which approval expiries are written and judged on), so a worker
	// records the expiry rather than the run waiting forever.
	ApprovalsNow time.Time
	// Skip names runs the claimer will not take (runs it refused to
	// resume, such as a tampered grant); they are left as they are.
	Skip []string
}

// RunUpdate is a compare-and-set on a run row. Expectations: the status is
// one of From; when CheckLease, the lease owner is Owner and the generation is
// Generation. Changes: each Set field applies when its flag or value is set.
type RunUpdate struct {
	ID         string
	From       []RunStatus
	CheckLease bool
	Owner      string
	Generation int64
	// CheckStepCount requires the stored step count to equal StepCount (a
	// step claim).
	CheckStepCount bool
	StepCount      int

	Status       RunStatus // "" keeps the status
	Reason       TerminalReason
	ReasonDetail string
	Result       json.RawMessage
	StartedAt    time.Time
	FinishedAt   time.Time
	// SetLease writes LeaseOwner/LeaseExpiresAt (empty owner releases).
	// With a LeaseOwner, a DatabaseClock store writes its own now plus
	// LeaseTTL instead of LeaseExpiresAt.
	SetLease       bool
	LeaseOwner     string
	LeaseExpiresAt time.Time
	LeaseTTL       time.Duration
	// BumpGeneration increments the fencing generation.
	BumpGeneration bool
	// IncStepCount adds one to step_count.
	IncStepCount bool
	AddActive    time.Duration
	AddCalls     int
	AddUsage     Usage
	AddCost      Micros
}

// StepUpdate is a compare-and-set on a step row: its status must be one of
// From. Nil pointers and zero values leave columns unchanged.
type StepUpdate struct {
	ID          string
	From        []StepStatus
	Status      StepStatus
	Decision    *Decision
	Policy      *PolicyDecision
	Observation *Observation
	// ClearOutcome empties observation, finished_at and policy_id.
	ClearOutcome bool
	StartedAt    time.Time
	FinishedAt   time.Time
	SpecHash     string
	PolicyID     string
	// RequestKey, when set, records the step's request key (RequestKey).
	RequestKey string
	// Fence, when its RunID is set, also requires the run RUNNING under
	// this lease owner and fencing generation, in the same statement.
	Fence RunFence
	// Encoded, when set, holds the JSON of Decision, Policy or Observation
	// already encoded by the caller (outside the transaction), in that
	// order; an entry for a nil field is ignored.
	Encoded [3][]byte
}

// RunFence names the lease a write must still hold.
type RunFence struct {
	RunID      string
	Owner      string
	Generation int64
}

// ApprovalDecide is a compare-and-set on an approval: status must be From
// and, when Hash is set, the stored hash must equal it.
type ApprovalDecide struct {
	ID        string
	RunID     string
	From      ApprovalStatus
	Hash      string
	Status    ApprovalStatus
	DecidedAt time.Time
	DecidedBy string
	Note      string
	// Signature, when set, is recorded with the approver and credential
	// it names.
	Signature *DecisionSignature
}

// ModelCallFinish records an attempt's outcome; the row must be dispatched.
type ModelCallFinish struct {
	ID          string
	Status      ModelCallStatus
	Usage       Usage
	Cost        Micros
	Latency     time.Duration
	Error       string
	CompletedAt time.Time
}

// VerifyReport is what VerifyEvents found.
type VerifyReport struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Checked int64 `json:"checked"`
	// Last is the seq of the last event checked intact, and Hash its hash;
	// both are zero when none was. Before a break, Last is the event just
	// before it, not To.
	Last  int64       `json:"last"`
	Hash  string      `json:"hash"`
	Break *ChainBreak `json:"break,omitempty"`
	// Erased counts the events checked whose payloads were erased (their
	// content removed, their digest kept), and ErasedRuns names the runs
	// they belong to, at most MaxReportedRuns of them; ErasedRunCount is
	// how many runs there are.
	Erased         int64    `json:"erased,omitempty"`
	ErasedRuns     []string `json:"erased_runs,omitempty"`
	ErasedRunCount int      `json:"erased_run_count,omitempty"`
}

// MaxReportedRuns bounds the runs a VerifyReport names.
const MaxReportedRuns = 1000

// Intact reports whether no break was found.
func (r VerifyReport) Intact() bool { return r.Break == nil }

// ChainBreak names the first event that does not chain.
type ChainBreak struct {
	Seq      int64  `json:"seq"`
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	Detail   string `json:"detail"`
}

// stored returns v as a fresh load of its stored JSON would: the cache holds
// exactly what the store holds. Decisions, policy decisions and
// observations are normalised directly (raw JSON compacted and HTML-escaped,
// invalid UTF-8 in strings replaced byte by byte, as encoding/json writes
// them); other types go through an encode and decode.
func stored[T any](v *T) (*T, error) {
	if v == nil {
		return nil, nil
	}
	switch x := any(v).(type) {
	case *Decision:
		d := *x
		d.Tool, d.Reason, d.Message = jsonString(d.Tool), jsonString(d.Reason), jsonString(d.Message)
		d.CallID = jsonString(d.CallID)
		d.InvalidArgs, d.InvalidResult = jsonString(d.InvalidArgs), jsonString(d.InvalidResult)
		d.Kind = DecisionKind(jsonString(string(d.Kind)))
		d.Args, d.Result = storedRaw(d.Args), storedRaw(d.Result)
		return any(&d).(*T), nil
	case *PolicyDecision:
		p := *x
		p.Reason, p.Kind = jsonString(p.Reason), jsonString(p.Kind)
		p.Outcome = PolicyOutcome(jsonString(string(p.Outcome)))
		p.Capability, p.Presentation = storedRaw(p.Capability), storedRaw(p.Presentation)
		p.Requirement = storedRequirement(p.Requirement)
		return any(&p).(*T), nil
	case *Observation:
		o := *x
		o.Summary, o.ContentHash = jsonString(o.Summary), jsonString(o.ContentHash)
		o.Kind = ObservationKind(jsonString(string(o.Kind)))
		o.Content = storedRaw(o.Content)
		o.FailureClass, o.FailureMessage = FailureClass(jsonString(string(o.FailureClass))), jsonString(o.FailureMessage)
		if o.Blocks != nil {
			o.Blocks = append([]ResultBlock(nil), o.Blocks...)
		}
		return any(&o).(*T), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &JSONError{What: "record", Reason: "will not encode: " + err.Error()}
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// jsonString is s as it decodes after encoding/json wrote it: each byte of
// invalid UTF-8 becomes U+FFFD.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// storedRaw is raw JSON as encoding/json stores a RawMessage: compacted,
// with <, >, & and U+2028/U+2029 escaped. The input is valid JSON (checked
// where it entered). The result never shares memory with the input.
func storedRaw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return r
	}
	clean := true
	for i, c := range r {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&':
			clean = false
		case 0xE2:
			if i+2 < len(r) && r[i+1] == 0x80 && r[i+2]&^1 == 0xA8 {
				clean = false
			}
		}
		if !clean {
			break
		}
	}
	if clean {
		return append(json.RawMessage(nil), r...)
	}
	const hexd = "0123456789abcdef"
	out := make(json.RawMessage, 0, len(r)+16)
	inStr, esc := false, false
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !inStr {
			switch c {
			case ' ', '\t', '\n', '\r':
				continue
			case '"':
				inStr = true
			}
			out = append(out, c)
			continue
		}
		switch {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '"':
			inStr = false
		case c == '<' || c == '>' || c == '&':
			out = append(out, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xF])
			continue
		case c == 0xE2 && i+2 < len(r) && r[i+1] == 0x80 && r[i+2]&^1 == 0xA8:
			out = append(out, '\\', 'u', '2', '0', '2', hexd[r[i+2]&0xF])
			i += 2
			continue
		}
		out = append(out, c)
	}
	return out
}

// storedRequirement is a copy of r with its strings as the store gives
// them back.
func storedRequirement(r *Requirement) *Requirement {
	c := copyRequirement(r)
	if c == nil {
		return nil
	}
	each := func(xs []string) {
		for i := range xs {
			xs[i] = jsonString(xs[i])
		}
	}
	for i := range c.Stages {
		st := &c.Stages[i]
		st.Quantifier = Quantifier(jsonString(string(st.Quantifier)))
		each(st.Roles)
		each(st.Approvers)
		each(st.Exclude)
	}
	return c
}
