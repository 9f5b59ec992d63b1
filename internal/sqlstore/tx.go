package sqlstore

import (
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"
	"unsafe"

	agentrt "github.com/agentrt/agentrt"
)

// tx is the agentrt.Tx handed to an Update's fn.
type tx struct {
	s *Store

	events []agentrt.Event
	// The highest seq, where the store assigns seqs (SQLite): remembered
	// from the store's last commit or read in this transaction;
	// headTrusted means checked under this transaction's write lock.
	// memSeq is what the store remembered (memKnown: anything). In queue
	// mode (an optimistic batch, or every transaction where the database
	// assigns seqs) event rows wait in rows for one insert.
	headRead    bool
	headTrusted bool
	headSeq     int64
	memKnown    bool
	memSeq      int64
	queue       bool
	rows        []eventRow
	// The run heads this transaction moved, and how to undo each move.
	heads map[string]runHead
	undo  []headUndo

	// pipe, on a pipelined attempt (the dialect's ExecBatch): writes wait
	// there and reach the server together, in one round trip, before the
	// transaction's next read and before its commit (pipeline.go).
	pipe *pipeState

	// What this transaction read or made of runs' salts (saltFor).
	salts map[string]runKey
	// The request's runs whose cached keys it used (unproven) and whose
	// live status it compared (live: a RunUpdate from live statuses under
	// the lease, or a fenced StepUpdate); see proveLive. published are
	// the keys the store keeps after commit (keyCache).
	unproven, live       []string
	published            []publishedKey
	unprovenBuf, liveBuf [2]string // most requests touch one run
	// The first run's entry of salts, kept out of the map.
	salt1ID string
	salt1   runKey

	// The database's time for this transaction, once read (DatabaseClock).
	dbNow time.Time

	// The last time formatted: a transaction writes one time to many rows.
	lastTime time.Time
	lastText string
}

// timeText formats t, reusing the text of the last time formatted.
func (t *tx) timeText(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	if t.lastText != "" && at.Equal(t.lastTime) {
		return t.lastText
	}
	t.lastTime, t.lastText = at, timeText(at)
	return t.lastText
}

type txMark struct {
	events      int
	rows        int
	undo        int
	headRead    bool
	headTrusted bool
	headSeq     int64
}

func (t *tx) mark() txMark {
	return txMark{events: len(t.events), rows: len(t.rows), undo: len(t.undo), headRead: t.headRead, headTrusted: t.headTrusted, headSeq: t.headSeq}
}

func (t *tx) reset(m txMark) {
	t.events = t.events[:m.events]
	t.rows = t.rows[:m.rows]
	t.undoHeads(m.undo)
	t.headRead, t.headTrusted, t.headSeq = m.headRead, m.headTrusted, m.headSeq
	clear(t.salts)
	t.salt1ID = ""
	t.unproven, t.live = t.unproven[:0], t.live[:0]
	t.published = t.published[:0]
}

// taken copies the events of one Update, from index from to to, for its
// caller to keep.
func (t *tx) taken(from, to int) []agentrt.Event {
	if from == to {
		return nil
	}
	out := make([]agentrt.Event, to-from)
	copy(out, t.events[from:to])
	return out
}

// prepared sends the writes the transaction holds back, then returns q's
// statement prepared on the writer's connection: every read and write of
// the transaction goes through it, so each sees the writes before it.
func (t *tx) prepared(q string) (*sql.Stmt, error) {
	if err := t.flushPending(); err != nil {
		return nil, err
	}
	return t.s.stmt(q)
}

func (t *tx) exec(q string, args ...any) (sql.Result, error) {
	st, err := t.prepared(q)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

func (t *tx) query(q string, args ...any) (*sql.Rows, error) {
	st, err := t.prepared(q)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (t *tx) queryRow(q string, args ...any) scanner {
	st, err := t.prepared(q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRow(args...)
}

func (t *tx) RunGet(id string) (agentrt.Run, error) {
	return scanRun(t.queryRow(selectRun+" WHERE id = ?", id))
}

func (t *tx) RunInsert(r agentrt.Run) error {
	limits, err := encodeJSON(r.Limits)
	if err != nil {
		return err
	}
	err = t.write(`INSERT INTO runs (id, goal, status, reason, reason_detail, limits_json, step_count,
		created_at, started_at, finished_at, result_json, lease_owner, lease_expires_at, generation)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, outcome{dup: dupRun, id: r.ID},
		r.ID, r.Goal, string(r.Status), string(r.Reason), r.ReasonDetail, limits, r.StepCount,
		t.timeText(r.CreatedAt), t.timeText(r.StartedAt), t.timeText(r.FinishedAt), string(r.Result),
		r.LeaseOwner, t.timeText(r.LeaseExpiresAt), r.Generation)
	if err != nil {
		return err
	}
	// A run inserted here has no event yet: its first needs no lookup.
	if _, ok := t.heads[r.ID]; !ok {
		t.setHead(r.ID, runHead{})
	}
	return t.insertSalt(r.ID)
}

func isConstraint(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE") || strings.Contains(s, "unique") || strings.Contains(s, "constraint")
}

// queries caches the SQL text of dynamic updates by the shape of the
// update. A plain map: looking up string(key) does not allocate.
var queries = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

func queryFor(key []byte) (string, bool) {
	queries.RLock()
	q, ok := queries.m[string(key)]
	queries.RUnlock()
	return q, ok
}

func storeQuery(key []byte, q string) {
	queries.Lock()
	queries.m[string(key)] = q
	queries.Unlock()
}

func (t *tx) RunUpdate(p agentrt.RunUpdate) error {
	// The shape of the statement, one byte per optional clause.
	var keyBuf [24]byte
	key := append(keyBuf[:0], t.s.d.Name[0], 'r',
		flag(p.Status != ""), flag(p.Reason != ""), flag(len(p.Result) > 0), flag(!p.StartedAt.IsZero()),
		flag(!p.FinishedAt.IsZero()), flag(p.SetLease), flag(p.SetLease && p.LeaseOwner != ""), flag(p.BumpGeneration), flag(p.IncStepCount),
		flag(p.AddActive > 0), flag(p.AddCalls > 0), flag(p.AddUsage.InputTokens > 0), flag(p.AddUsage.OutputTokens > 0),
		flag(p.AddUsage.CachedInputTokens > 0), flag(p.AddCost > 0), byte('0'+len(p.From)), flag(p.CheckLease), flag(p.CheckStepCount))
	args := make([]any, 0, 16)
	cachedQ, cached := queryFor(key)
	var set []string // built only the first time a shape is seen
	cols := func(col string) {
		if !cached {
			set = append(set, col)
		}
	}
	add := func(col string, v any) {
		cols(col)
		args = append(args, v)
	}
	addSat := func(col string, v int64) {
		cols(col + " = " + satAdd(col))
		args = append(args, v, v)
	}
	if p.Status != "" {
		add("status = ?", string(p.Status))
	}
	if p.Reason != "" {
		add("reason = ?", string(p.Reason))
		add("reason_detail = ?", p.ReasonDetail)
	}
	if len(p.Result) > 0 {
		add("result_json = ?", string(p.Result))
	}
	if !p.StartedAt.IsZero() {
		add("started_at = ?", t.timeText(p.StartedAt))
	}
	if !p.FinishedAt.IsZero() {
		add("finished_at = ?", t.timeText(p.FinishedAt))
	}
	if p.SetLease {
		add("lease_owner = ?", p.LeaseOwner)
		if p.LeaseOwner != "" && t.s.d.DatabaseClock {
			expr, arg := t.s.d.leaseExpiry(p.LeaseExpiresAt, p.LeaseTTL)
			add("lease_expires_at = "+expr, arg)
		} else {
			add("lease_expires_at = ?", t.timeText(p.LeaseExpiresAt))
		}
	}
	if p.BumpGeneration {
		cols("generation = generation + 1")
	}
	if p.IncStepCount {
		cols("step_count = step_count + 1")
	}
	if p.AddActive > 0 {
		addSat("active_ns", int64(p.AddActive))
	}
	if p.AddCalls > 0 {
		addSat("model_calls", int64(p.AddCalls))
	}
	if p.AddUsage.InputTokens > 0 {
		addSat("input_tokens", p.AddUsage.InputTokens)
	}
	if p.AddUsage.OutputTokens > 0 {
		addSat("output_tokens", p.AddUsage.OutputTokens)
	}
	if p.AddUsage.CachedInputTokens > 0 {
		addSat("cached_input_tokens", p.AddUsage.CachedInputTokens)
	}
	if p.AddCost > 0 {
		addSat("estimated_cost_micros", int64(p.AddCost))
	}
	if !cached && len(set) == 0 {
		return errors.New("agentrt: empty run update")
	}
	args = append(args, p.ID)
	for _, f := range p.From {
		args = append(args, string(f))
	}
	if p.CheckLease {
		args = append(args, p.Owner, p.Generation)
	}
	if p.CheckStepCount {
		args = append(args, p.StepCount)
	}
	var q string
	if cached {
		q = cachedQ
	} else {
		var conds []string
		if p.CheckLease {
			conds = append(conds, "lease_owner = ? AND generation = ?")
		}
		if p.CheckStepCount {
			conds = append(conds, "step_count = ?")
		}
		q = casUpdate("runs", set, len(p.From), conds...)
		storeQuery(key, q)
	}
	if err := t.write(q, outcome{one: "run", id: p.ID}, args...); err != nil {
		return err
	}
	if p.CheckLease && liveOnly(p.From) {
		t.proven(p.ID)
	}
	return nil
}

// casUpdate is a compare-and-set UPDATE of one row of table by id: set
// are its assignments, from how many statuses it may move from (none: any),
// conds further conditions, each a placeholder group the caller's
// arguments follow in order.
func casUpdate(table string, set []string, from int, conds ...string) string {
	q := "UPDATE " + table + " SET " + strings.Join(set, ", ") + " WHERE id = ?"
	if from > 0 {
		q += " AND status IN (" + placeholders(from) + ")"
	}
	for _, c := range conds {
		q += " AND " + c
	}
	return q
}

// liveOnly reports whether from names statuses, none of them terminal.
func liveOnly(from []agentrt.RunStatus) bool {
	for _, s := range from {
		if s.Terminal() {
			return false
		}
	}
	return len(from) > 0
}

func flag(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// satAdd adds a non-negative parameter to col, saturating at the int64 maximum.
func satAdd(col string) string {
	return "CASE WHEN " + col + " > 9223372036854775807 - ? THEN 9223372036854775807 ELSE " + col + " + ? END"
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func oneRow(res sql.Result, what, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	return outcome{one: what, id: id}.check(n, nil)
}

func (t *tx) StepInsert(st agentrt.Step) error {
	dec, pol, obs, err := encodeStepCols(st.Decision, st.Policy, st.Observation)
	if err != nil {
		return err
	}
	return t.write(`INSERT INTO steps (id, run_id, idx, status, started_at, finished_at, spec_hash, policy_id,
		decision_fields, policy_fields, observation_fields, decision_json, policy_json, observation_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, outcome{dup: dupStep, id: st.RunID, idx: st.Index},
		st.ID, st.RunID, st.Index, string(st.Status), t.timeText(st.StartedAt), t.timeText(st.FinishedAt), st.SpecHash, st.PolicyID,
		decisionFieldsOf(st.Decision, dec), policyFieldsOf(st.Policy, pol), observationFieldsOf(st.Observation, obs), dec, pol, obs)
}

// pre drops a value whose JSON the caller encoded already.
func pre[T any](v *T, encoded []byte) *T {
	if encoded != nil {
		return nil
	}
	return v
}

// use prefers the caller's encoding, which it shares: the engine never
// writes to bytes it has handed to a write.
func use(col string, encoded []byte) string {
	if len(encoded) > 0 {
		return unsafe.String(&encoded[0], len(encoded))
	}
	return col
}

func encodeStepCols(d *agentrt.Decision, p *agentrt.PolicyDecision, o *agentrt.Observation) (dec, pol, obs string, err error) {
	if d != nil {
		if dec, err = encodeJSON(d); err != nil {
			return
		}
	}
	if p != nil {
		if pol, err = encodeJSON(p); err != nil {
			return
		}
	}
	if o != nil {
		if obs, err = encodeJSON(o); err != nil {
			return
		}
	}
	return
}

func (t *tx) StepUpdate(p agentrt.StepUpdate) error {
	dec, pol, obs, err := encodeStepCols(pre(p.Decision, p.Encoded[0]), pre(p.Policy, p.Encoded[1]), pre(p.Observation, p.Encoded[2]))
	if err != nil {
		return err
	}
	dec, pol, obs = use(dec, p.Encoded[0]), use(pol, p.Encoded[1]), use(obs, p.Encoded[2])
	var keyBuf [16]byte
	key := append(keyBuf[:0], t.s.d.Name[0], 's', flag(p.Status != ""), flag(p.Decision != nil), flag(p.Policy != nil),
		flag(p.ClearOutcome), flag(p.Observation != nil), flag(!p.StartedAt.IsZero()), flag(!p.FinishedAt.IsZero()),
		flag(p.SpecHash != ""), flag(p.PolicyID != ""), byte('0'+len(p.From)), flag(p.Fence.RunID != ""), flag(p.RequestKey != ""))
	cachedQ, cached := queryFor(key)
	var set []string
	args := make([]any, 0, 16)
	add := func(col string, v any) {
		if !cached {
			set = append(set, col)
		}
		args = append(args, v)
	}
	if p.Status != "" {
		add("status = ?", string(p.Status))
	}
	// A JSON column and the fields a page prints of it change together.
	if p.Decision != nil {
		add("decision_json = ?", dec)
		add("decision_fields = ?", decisionFieldsOf(p.Decision, dec))
	}
	if p.Policy != nil {
		add("policy_json = ?", pol)
		add("policy_fields = ?", policyFieldsOf(p.Policy, pol))
	}
	if p.ClearOutcome && !cached {
		set = append(set, "observation_json = ''", "observation_fields = NULL", "finished_at = ''", "policy_id = ''")
	}
	if p.Observation != nil {
		add("observation_json = ?", obs)
		add("observation_fields = ?", observationFieldsOf(p.Observation, obs))
	}
	if !p.StartedAt.IsZero() {
		add("started_at = ?", t.timeText(p.StartedAt))
	}
	if !p.FinishedAt.IsZero() {
		add("finished_at = ?", t.timeText(p.FinishedAt))
	}
	if p.SpecHash != "" {
		add("spec_hash = ?", p.SpecHash)
	}
	if p.PolicyID != "" {
		add("policy_id = ?", p.PolicyID)
	}
	if p.RequestKey != "" {
		add("request_key = ?", p.RequestKey)
	}
	if !cached && len(set) == 0 {
		return errors.New("agentrt: empty step update")
	}
	args = append(args, p.ID)
	for _, f := range p.From {
		args = append(args, string(f))
	}
	if p.Fence.RunID != "" {
		args = append(args, p.Fence.RunID, string(agentrt.RunRunning), p.Fence.Owner, p.Fence.Generation)
	}
	var q string
	if cached {
		q = cachedQ
	} else {
		var conds []string
		if p.Fence.RunID != "" {
			conds = append(conds, "EXISTS (SELECT 1 FROM runs WHERE id = ? AND status = ? AND lease_owner = ? AND generation = ?)")
		}
		q = casUpdate("steps", set, len(p.From), conds...)
		storeQuery(key, q)
	}
	if err := t.write(q, outcome{one: "step", id: p.ID}, args...); err != nil {
		return err
	}
	if p.Fence.RunID != "" {
		// The fence matched only a running run.
		t.proven(p.Fence.RunID)
	}
	return nil
}

func (t *tx) StepList(runID string) ([]agentrt.Step, error) {
	return scanSteps(t.query(selectStep+" WHERE run_id = ? ORDER BY idx", runID))
}

func (t *tx) ApprovalInsert(a agentrt.Approval) error {
	req, err := encodeJSON(a.Request)
	if err != nil {
		return err
	}
	rq := ""
	if a.Requirement != nil {
		if rq, err = encodeJSON(a.Requirement); err != nil {
			return err
		}
	}
	return t.write(`INSERT INTO approvals (id, run_id, step_id, kind, capability_json, presentation_json,
		request_json, hash, status, created_at, expires_at, decided_at, decided_by, note, requirement_json, policy_version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, outcome{},
		a.ID, a.RunID, a.StepID, a.Kind, string(a.Capability), string(a.Presentation), req, a.Hash,
		string(a.Status), t.timeText(a.CreatedAt), t.timeText(a.ExpiresAt), t.timeText(a.DecidedAt), a.DecidedBy, a.Note, rq, a.PolicyVersion)
}

func (t *tx) ApprovalGet(runID, id string) (agentrt.Approval, error) {
	return scanApproval(t.queryRow(selectApproval+" WHERE id = ? AND run_id = ?", id, runID))
}

func (t *tx) ApprovalList(runID string) ([]agentrt.Approval, error) {
	return scanApprovals(t.query(selectApproval+" WHERE run_id = ? ORDER BY rowid", runID))
}

func (t *tx) ApprovalDecide(p agentrt.ApprovalDecide) error {
	q := `UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, note = ?`
	args := []any{string(p.Status), t.timeText(p.DecidedAt), p.DecidedBy, p.Note}
	// A signature is written with the decision it signs and kept by any
	// later change (a grant expiring), so the row keeps what was signed.
	if p.Signature != nil {
		sig, err := encodeJSON(p.Signature)
		if err != nil {
			return err
		}
		q += ", approver_id = ?, credential_id = ?, signature_json = ?"
		args = append(args, p.Signature.ApproverID, p.Signature.CredentialID, sig)
	}
	q += " WHERE id = ? AND run_id = ? AND status = ?"
	args = append(args, p.ID, p.RunID, string(p.From))
	if p.Hash != "" {
		q += " AND hash = ?"
		args = append(args, p.Hash)
	}
	return t.write(q, outcome{one: "approval", id: p.ID}, args...)
}

func (t *tx) ModelCallInsert(c agentrt.ModelCall) error {
	return t.write(`INSERT INTO model_calls (id, run_id, step_id, attempt, status, model, input_tokens,
		output_tokens, cached_input_tokens, cost_micros, latency_ns, error, dispatched_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, outcome{},
		c.ID, c.RunID, c.StepID, c.Attempt, string(c.Status), c.Model, c.Usage.InputTokens,
		c.Usage.OutputTokens, c.Usage.CachedInputTokens, int64(c.Cost), int64(c.Latency), c.Error,
		t.timeText(c.DispatchedAt), t.timeText(c.CompletedAt))
}

func (t *tx) ModelCallFinish(p agentrt.ModelCallFinish) error {
	return t.write(`UPDATE model_calls SET status = ?, input_tokens = ?, output_tokens = ?,
		cached_input_tokens = ?, cost_micros = ?, latency_ns = ?, error = ?, completed_at = ?
		WHERE id = ? AND status = ?`, outcome{one: "model call", id: p.ID},
		string(p.Status), p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CachedInputTokens,
		int64(p.Cost), int64(p.Latency), p.Error, t.timeText(p.CompletedAt), p.ID, string(agentrt.ModelDispatched))
}

func (t *tx) SpecPut(hash string, canonical []byte) error {
	return t.write(t.s.d.InsertIgnorePrefix+" tool_specs (hash, spec_json) VALUES (?, ?)"+t.s.d.InsertIgnoreSuffix, outcome{}, hash, string(canonical))
}
