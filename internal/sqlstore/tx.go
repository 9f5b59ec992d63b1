package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	agentrt "github.com/agentrt/agentrt"
)

// tx is the agentrt.Tx handed to an Update's fn.
type tx struct {
	s *Store

	events []agentrt.Event
	// chain head, read once per transaction
	headRead bool
	headSeq  int64
	headHash string
}

type txMark struct {
	events   int
	headRead bool
	headSeq  int64
	headHash string
}

func (t *tx) mark() txMark {
	return txMark{events: len(t.events), headRead: t.headRead, headSeq: t.headSeq, headHash: t.headHash}
}

func (t *tx) reset(m txMark) {
	t.events = t.events[:m.events]
	t.headRead, t.headSeq, t.headHash = m.headRead, m.headSeq, m.headHash
}

func (t *tx) take(m txMark) []agentrt.Event {
	if len(t.events) == m.events {
		return nil
	}
	out := make([]agentrt.Event, len(t.events)-m.events)
	copy(out, t.events[m.events:])
	return out
}

func (t *tx) exec(q string, args ...any) (sql.Result, error) {
	st, err := t.s.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

func (t *tx) query(q string, args ...any) (*sql.Rows, error) {
	st, err := t.s.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (t *tx) queryRow(q string, args ...any) scanner {
	st, err := t.s.stmt(q)
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
	_, err = t.exec(`INSERT INTO runs (id, goal, status, reason, reason_detail, limits_json, step_count,
		created_at, started_at, finished_at, result_json, lease_owner, lease_expires_at, generation)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Goal, string(r.Status), string(r.Reason), r.ReasonDetail, limits, r.StepCount,
		timeText(r.CreatedAt), timeText(r.StartedAt), timeText(r.FinishedAt), string(r.Result),
		r.LeaseOwner, timeText(r.LeaseExpiresAt), r.Generation)
	if err != nil && isConstraint(err) {
		return fmt.Errorf("%w: run %s already exists", agentrt.ErrRunState, r.ID)
	}
	return err
}

func isConstraint(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE") || strings.Contains(s, "unique") || strings.Contains(s, "constraint")
}

func (t *tx) RunUpdate(p agentrt.RunUpdate) error {
	var set []string
	var args []any
	add := func(col string, v any) {
		set = append(set, col)
		args = append(args, v)
	}
	addSat := func(col string, v int64) {
		set = append(set, col+" = "+satAdd(col))
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
		add("started_at = ?", timeText(p.StartedAt))
	}
	if !p.FinishedAt.IsZero() {
		add("finished_at = ?", timeText(p.FinishedAt))
	}
	if p.SetLease {
		add("lease_owner = ?", p.LeaseOwner)
		add("lease_expires_at = ?", timeText(p.LeaseExpiresAt))
	}
	if p.BumpGeneration {
		set = append(set, "generation = generation + 1")
	}
	if p.IncStepCount {
		set = append(set, "step_count = step_count + 1")
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
	if len(set) == 0 {
		return errors.New("agentrt: empty run update")
	}
	q := "UPDATE runs SET " + strings.Join(set, ", ") + " WHERE id = ?"
	args = append(args, p.ID)
	if len(p.From) > 0 {
		q += " AND status IN (" + placeholders(len(p.From)) + ")"
		for _, f := range p.From {
			args = append(args, string(f))
		}
	}
	if p.CheckLease {
		q += " AND lease_owner = ? AND generation = ?"
		args = append(args, p.Owner, p.Generation)
	}
	if p.CheckStepCount {
		q += " AND step_count = ?"
		args = append(args, p.StepCount)
	}
	res, err := t.exec(q, args...)
	if err != nil {
		return err
	}
	return oneRow(res, "run", p.ID)
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
	if n != 1 {
		return fmt.Errorf("%w: %s %s did not match the expected state", agentrt.ErrRunState, what, id)
	}
	return nil
}

func (t *tx) StepInsert(st agentrt.Step) error {
	dec, pol, obs, err := encodeStepCols(st.Decision, st.Policy, st.Observation)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO steps (id, run_id, idx, status, decision_json, policy_json, observation_json,
		started_at, finished_at, spec_hash, policy_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.ID, st.RunID, st.Index, string(st.Status), dec, pol, obs,
		timeText(st.StartedAt), timeText(st.FinishedAt), st.SpecHash, st.PolicyID)
	if err != nil && isConstraint(err) {
		return fmt.Errorf("%w: step %d of run %s already exists", agentrt.ErrRunState, st.Index, st.RunID)
	}
	return err
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
	var set []string
	var args []any
	add := func(col string, v any) {
		set = append(set, col)
		args = append(args, v)
	}
	dec, pol, obs, err := encodeStepCols(p.Decision, p.Policy, p.Observation)
	if err != nil {
		return err
	}
	if p.Status != "" {
		add("status = ?", string(p.Status))
	}
	if p.Decision != nil {
		add("decision_json = ?", dec)
	}
	if p.Policy != nil {
		add("policy_json = ?", pol)
	}
	if p.ClearOutcome {
		set = append(set, "observation_json = ''", "finished_at = ''", "policy_id = ''")
	}
	if p.Observation != nil {
		add("observation_json = ?", obs)
	}
	if !p.StartedAt.IsZero() {
		add("started_at = ?", timeText(p.StartedAt))
	}
	if !p.FinishedAt.IsZero() {
		add("finished_at = ?", timeText(p.FinishedAt))
	}
	if p.SpecHash != "" {
		add("spec_hash = ?", p.SpecHash)
	}
	if p.PolicyID != "" {
		add("policy_id = ?", p.PolicyID)
	}
	if len(set) == 0 {
		return errors.New("agentrt: empty step update")
	}
	q := "UPDATE steps SET " + strings.Join(set, ", ") + " WHERE id = ?"
	args = append(args, p.ID)
	if len(p.From) > 0 {
		q += " AND status IN (" + placeholders(len(p.From)) + ")"
		for _, f := range p.From {
			args = append(args, string(f))
		}
	}
	res, err := t.exec(q, args...)
	if err != nil {
		return err
	}
	return oneRow(res, "step", p.ID)
}

func (t *tx) StepList(runID string) ([]agentrt.Step, error) {
	rows, err := t.query(selectStep+" WHERE run_id = ? ORDER BY idx", runID)
	if err != nil {
		return nil, err
	}
	return scanSteps(rows)
}

func (t *tx) ApprovalInsert(a agentrt.Approval) error {
	req, err := encodeJSON(a.Request)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO approvals (id, run_id, step_id, kind, capability_json, presentation_json,
		request_json, hash, status, created_at, expires_at, decided_at, decided_by, note)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.RunID, a.StepID, a.Kind, string(a.Capability), string(a.Presentation), req, a.Hash,
		string(a.Status), timeText(a.CreatedAt), timeText(a.ExpiresAt), timeText(a.DecidedAt), a.DecidedBy, a.Note)
	return err
}

func (t *tx) ApprovalGet(runID, id string) (agentrt.Approval, error) {
	return scanApproval(t.queryRow(selectApproval+" WHERE id = ? AND run_id = ?", id, runID))
}

func (t *tx) ApprovalList(runID string) ([]agentrt.Approval, error) {
	rows, err := t.query(selectApproval+" WHERE run_id = ? ORDER BY rowid", runID)
	if err != nil {
		return nil, err
	}
	return scanApprovals(rows)
}

func (t *tx) ApprovalDecide(p agentrt.ApprovalDecide) error {
	q := `UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, note = ?
		WHERE id = ? AND run_id = ? AND status = ?`
	args := []any{string(p.Status), timeText(p.DecidedAt), p.DecidedBy, p.Note, p.ID, p.RunID, string(p.From)}
	if p.Hash != "" {
		q += " AND hash = ?"
		args = append(args, p.Hash)
	}
	res, err := t.exec(q, args...)
	if err != nil {
		return err
	}
	return oneRow(res, "approval", p.ID)
}

func (t *tx) ModelCallInsert(c agentrt.ModelCall) error {
	_, err := t.exec(`INSERT INTO model_calls (id, run_id, step_id, attempt, status, model, input_tokens,
		output_tokens, cached_input_tokens, cost_micros, latency_ns, error, dispatched_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.RunID, c.StepID, c.Attempt, string(c.Status), c.Model, c.Usage.InputTokens,
		c.Usage.OutputTokens, c.Usage.CachedInputTokens, int64(c.Cost), int64(c.Latency), c.Error,
		timeText(c.DispatchedAt), timeText(c.CompletedAt))
	return err
}

func (t *tx) ModelCallFinish(p agentrt.ModelCallFinish) error {
	res, err := t.exec(`UPDATE model_calls SET status = ?, input_tokens = ?, output_tokens = ?,
		cached_input_tokens = ?, cost_micros = ?, latency_ns = ?, error = ?, completed_at = ?
		WHERE id = ? AND status = ?`,
		string(p.Status), p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CachedInputTokens,
		int64(p.Cost), int64(p.Latency), p.Error, timeText(p.CompletedAt), p.ID, string(agentrt.ModelDispatched))
	if err != nil {
		return err
	}
	return oneRow(res, "model call", p.ID)
}

func (t *tx) SpecPut(hash string, canonical []byte) error {
	_, err := t.exec(t.s.d.InsertIgnorePrefix+" tool_specs (hash, spec_json) VALUES (?, ?)"+t.s.d.InsertIgnoreSuffix, hash, string(canonical))
	return err
}
