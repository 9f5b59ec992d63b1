package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	agentrt "github.com/agentrt/agentrt"
)

const runCols = `id, goal, status, reason, reason_detail, limits_json, step_count, created_at, started_at,
	finished_at, result_json, model_calls, input_tokens, output_tokens, cached_input_tokens,
	estimated_cost_micros, active_ns, lease_owner, lease_expires_at, generation`

const selectRun = "SELECT " + runCols + " FROM runs"

type scanner interface{ Scan(dest ...any) error }

func scanRun(r scanner) (agentrt.Run, error) {
	var run agentrt.Run
	var status, reason, limits, created, started, finished, result, leaseExp string
	var active int64
	err := r.Scan(&run.ID, &run.Goal, &status, &reason, &run.ReasonDetail, &limits, &run.StepCount,
		&created, &started, &finished, &result, &run.ModelCalls, &run.Usage.InputTokens,
		&run.Usage.OutputTokens, &run.Usage.CachedInputTokens, &run.EstimatedCost, &active,
		&run.LeaseOwner, &leaseExp, &run.Generation)
	if errors.Is(err, sql.ErrNoRows) {
		return run, fmt.Errorf("%w: run", agentrt.ErrNotFound)
	}
	if err != nil {
		return run, err
	}
	run.Status = agentrt.RunStatus(status)
	run.Reason = agentrt.TerminalReason(reason)
	run.ActiveTime = time.Duration(active)
	var bad []string
	if err := json.Unmarshal([]byte(limits), &run.Limits); err != nil {
		bad = append(bad, "limits: "+err.Error())
		run.Limits = agentrt.Limits{}
	}
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"created_at", created, &run.CreatedAt}, {"started_at", started, &run.StartedAt}, {"finished_at", finished, &run.FinishedAt}, {"lease_expires_at", leaseExp, &run.LeaseExpiresAt}} {
		t, err := parseTime(f.s)
		if err != nil {
			bad = append(bad, f.name+": "+err.Error())
		}
		*f.t = t
	}
	if result != "" {
		if json.Valid([]byte(result)) {
			run.Result = json.RawMessage(result)
		} else {
			bad = append(bad, "result: not valid JSON")
		}
	}
	if !run.Status.Valid() {
		bad = append(bad, fmt.Sprintf("status %q is unknown", truncate(status, 64)))
	}
	if len(bad) > 0 {
		run.DecodeError = strings.Join(bad, "; ")
	}
	return run, nil
}

const stepCols = `id, run_id, idx, status, decision_json, policy_json, observation_json, started_at, finished_at, spec_hash, policy_id`

const selectStep = "SELECT " + stepCols + " FROM steps"

func scanStep(r scanner) (agentrt.Step, error) {
	var st agentrt.Step
	var status, dec, pol, obs, started, finished string
	if err := r.Scan(&st.ID, &st.RunID, &st.Index, &status, &dec, &pol, &obs, &started, &finished, &st.SpecHash, &st.PolicyID); err != nil {
		return st, err
	}
	st.Status = agentrt.StepStatus(status)
	decodeStep(&st, dec, pol, obs, started, finished)
	return st, nil
}

// DecodeStepColumns decodes a step's stored column text the way a full read
// does; the engine's cache uses it so its view equals a fresh load.
func decodeStep(st *agentrt.Step, dec, pol, obs, started, finished string) {
	var bad []string
	if dec != "" {
		d := new(agentrt.Decision)
		if err := json.Unmarshal([]byte(dec), d); err != nil {
			bad = append(bad, "decision: "+err.Error())
		} else {
			st.Decision = d
		}
	}
	if pol != "" {
		p := new(agentrt.PolicyDecision)
		if err := json.Unmarshal([]byte(pol), p); err != nil {
			bad = append(bad, "policy: "+err.Error())
		} else {
			st.Policy = p
		}
	}
	if obs != "" {
		o := new(agentrt.Observation)
		if err := json.Unmarshal([]byte(obs), o); err != nil {
			bad = append(bad, "observation: "+err.Error())
		} else {
			st.Observation = o
		}
	}
	var err error
	if st.StartedAt, err = parseTime(started); err != nil {
		bad = append(bad, "started_at: "+err.Error())
	}
	if st.FinishedAt, err = parseTime(finished); err != nil {
		bad = append(bad, "finished_at: "+err.Error())
	}
	switch st.Status {
	case agentrt.StepDeciding, agentrt.StepAwaitingApproval, agentrt.StepExecuting, agentrt.StepDone, agentrt.StepFailed, agentrt.StepInterrupted:
	default:
		bad = append(bad, fmt.Sprintf("status %q is unknown", truncate(string(st.Status), 64)))
	}
	if len(bad) > 0 {
		st.DecodeError = strings.Join(bad, "; ")
	}
}

func scanSteps(rows *sql.Rows) ([]agentrt.Step, error) {
	defer rows.Close()
	var out []agentrt.Step
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

const approvalCols = `id, run_id, step_id, kind, capability_json, presentation_json, request_json, hash, status,
	created_at, expires_at, decided_at, decided_by, note`

const selectApproval = "SELECT " + approvalCols + " FROM approvals"

func scanApproval(r scanner) (agentrt.Approval, error) {
	var a agentrt.Approval
	var capab, pres, req, status, created, expires, decided string
	err := r.Scan(&a.ID, &a.RunID, &a.StepID, &a.Kind, &capab, &pres, &req, &a.Hash, &status, &created, &expires, &decided, &a.DecidedBy, &a.Note)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: approval", agentrt.ErrNotFound)
	}
	if err != nil {
		return a, err
	}
	a.Status = agentrt.ApprovalStatus(status)
	var bad []string
	for _, f := range []struct {
		name string
		s    string
		dst  *json.RawMessage
	}{{"capability", capab, &a.Capability}, {"presentation", pres, &a.Presentation}} {
		if f.s == "" || !json.Valid([]byte(f.s)) {
			bad = append(bad, f.name+": not valid JSON")
			continue
		}
		*f.dst = json.RawMessage(f.s)
	}
	if err := json.Unmarshal([]byte(req), &a.Request); err != nil {
		bad = append(bad, "request: "+err.Error())
		a.Request = agentrt.ToolRequest{}
	}
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"created_at", created, &a.CreatedAt}, {"expires_at", expires, &a.ExpiresAt}, {"decided_at", decided, &a.DecidedAt}} {
		t, err := parseTime(f.s)
		if err != nil {
			bad = append(bad, f.name+": "+err.Error())
		}
		*f.t = t
	}
	if len(bad) > 0 {
		a.DecodeError = strings.Join(bad, "; ")
	}
	return a, nil
}

func scanApprovals(rows *sql.Rows) ([]agentrt.Approval, error) {
	defer rows.Close()
	var out []agentrt.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

const eventCols = "seq, run_id, step_id, at, type, payload_json"

func scanEvents(rows *sql.Rows) ([]agentrt.Event, error) {
	defer rows.Close()
	var out []agentrt.Event
	for rows.Next() {
		var e agentrt.Event
		var at, typ, payload string
		if err := rows.Scan(&e.Seq, &e.RunID, &e.StepID, &at, &typ, &payload); err != nil {
			return nil, err
		}
		e.At, _ = parseTime(at)
		e.Type = agentrt.EventType(typ)
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// GetRun reads one run.
func (s *Store) GetRun(ctx context.Context, id string) (agentrt.Run, error) {
	r, err := scanRun(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectRun+" WHERE id = ?"), id))
	if errors.Is(err, agentrt.ErrNotFound) {
		return r, fmt.Errorf("%w: run %s", agentrt.ErrNotFound, id)
	}
	return r, err
}

// ListRuns reads every run, newest first.
func (s *Store) ListRuns(ctx context.Context) ([]agentrt.Run, error) {
	rows, err := s.rdb.QueryContext(ctx, selectRun+" ORDER BY rowid DESC")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []agentrt.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ListSteps reads a run's steps in index order.
func (s *Store) ListSteps(ctx context.Context, runID string) ([]agentrt.Step, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(selectStep+" WHERE run_id = ? ORDER BY idx"), runID)
	if err != nil {
		return nil, err
	}
	return scanSteps(rows)
}

// ListApprovals reads a run's approvals in creation order.
func (s *Store) ListApprovals(ctx context.Context, runID string) ([]agentrt.Approval, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(selectApproval+" WHERE run_id = ? ORDER BY rowid"), runID)
	if err != nil {
		return nil, err
	}
	return scanApprovals(rows)
}

// GetApproval reads one approval of a run, whole.
func (s *Store) GetApproval(ctx context.Context, runID, approvalID string) (agentrt.Approval, error) {
	a, err := scanApproval(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectApproval+" WHERE id = ? AND run_id = ?"), approvalID, runID))
	if errors.Is(err, agentrt.ErrNotFound) {
		return a, fmt.Errorf("%w: approval %s of run %s", agentrt.ErrNotFound, approvalID, runID)
	}
	return a, err
}

// ListEvents reads a run's events in seq order ("" = all runs).
func (s *Store) ListEvents(ctx context.Context, runID string) ([]agentrt.Event, error) {
	q := "SELECT " + eventCols + " FROM events"
	var args []any
	if runID != "" {
		q += " WHERE run_id = ?"
		args = append(args, runID)
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q+" ORDER BY seq"), args...)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

// ListModelCalls reads a run's model attempts in order.
func (s *Store) ListModelCalls(ctx context.Context, runID string) ([]agentrt.ModelCall, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(`SELECT id, run_id, step_id, attempt, status, model, input_tokens,
		output_tokens, cached_input_tokens, cost_micros, latency_ns, error, dispatched_at, completed_at
		FROM model_calls WHERE run_id = ? ORDER BY rowid`), runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []agentrt.ModelCall
	for rows.Next() {
		var c agentrt.ModelCall
		var status, disp, comp string
		var lat int64
		if err := rows.Scan(&c.ID, &c.RunID, &c.StepID, &c.Attempt, &status, &c.Model, &c.Usage.InputTokens,
			&c.Usage.OutputTokens, &c.Usage.CachedInputTokens, &c.Cost, &lat, &c.Error, &disp, &comp); err != nil {
			return nil, err
		}
		c.Status = agentrt.ModelCallStatus(status)
		c.Latency = time.Duration(lat)
		c.DispatchedAt, _ = parseTime(disp)
		c.CompletedAt, _ = parseTime(comp)
		out = append(out, c)
	}
	return out, rows.Err()
}

// GetSpec reads a stored tool spec by hash.
func (s *Store) GetSpec(ctx context.Context, hash string) (json.RawMessage, error) {
	var spec string
	err := s.rdb.QueryRowContext(ctx, s.d.Rebind("SELECT spec_json FROM tool_specs WHERE hash = ?"), hash).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: tool spec %s", agentrt.ErrNotFound, truncate(hash, 80))
	}
	return json.RawMessage(spec), err
}

// RenewLease extends a held lease.
func (s *Store) RenewLease(ctx context.Context, runID, owner string, generation int64, expiresAt time.Time) error {
	if s.lease == nil {
		return ErrReadOnly
	}
	res, err := s.lease.ExecContext(ctx, s.d.Rebind(`UPDATE runs SET lease_expires_at = ?
		WHERE id = ? AND status = ? AND lease_owner = ? AND generation = ?`),
		timeText(expiresAt), runID, string(agentrt.RunRunning), owner, generation)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return agentrt.ErrLeaseLost
	}
	return nil
}

// capText turns a capped column into text: the head plus a marker saying
// how much was cut.
func capText(head []byte, length int64) string {
	s := strings.ToValidUTF8(string(head), "\uFFFD")
	if length <= agentrt.MaxPageText {
		return s
	}
	// Do not end on a partial rune.
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return fmt.Sprintf("%s…[truncated: %d bytes]", s, length)
}

// capJSON keeps a JSON column that fits and replaces one that does not with a
// small object that is still JSON.
func capJSON(head []byte, length int64) json.RawMessage {
	if length <= agentrt.MaxPageText {
		if length == 0 {
			return nil
		}
		return json.RawMessage(head)
	}
	h := head
	if len(h) > 512 {
		h = h[:512]
	}
	b, _ := json.Marshal(struct {
		Truncated bool   `json:"truncated"`
		Length    int64  `json:"length"`
		Head      string `json:"head"`
	}{true, length, strings.ToValidUTF8(string(h), "\uFFFD")})
	return b
}

func capped(col string) string {
	return fmt.Sprintf("substr(CAST(%s AS BLOB), 1, %d), length(CAST(%s AS BLOB))", col, agentrt.MaxPageText, col)
}
