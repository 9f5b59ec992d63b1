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

var (
	runCols = append(append(textCols(colWhole, "id", "goal", "status", "reason", "reason_detail", "limits_json"),
		col{"step_count", colInt}), append(textCols(colWhole, "created_at", "started_at", "finished_at", "result_json"),
		append(intCols("model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "estimated_cost_micros", "active_ns"),
			append(textCols(colWhole, "lease_owner", "lease_expires_at"), col{"generation", colInt})...)...)...)
	runAt     = colIndex(runCols)
	selectRun = "SELECT " + selectCols(runCols) + " FROM runs"
)

func intCols(names ...string) []col { return textCols(colInt, names...) }

func scanRun(s scanner) (agentrt.Run, error) {
	r, err := scanOne(s, runCols, runAt, "run")
	if err != nil {
		return agentrt.Run{}, err
	}
	return decodeRun(r), nil
}

// decodeRun decodes a run row read whole (runCols) or by page
// (runPageCols).
func decodeRun(r *row) agentrt.Run {
	run := agentrt.Run{
		ID: r.str("id"), Goal: r.str("goal"), Status: agentrt.RunStatus(r.str("status")),
		Reason: agentrt.TerminalReason(r.str("reason")), ReasonDetail: r.str("reason_detail"),
		StepCount: r.int("step_count"), CreatedAt: r.time("created_at"), StartedAt: r.time("started_at"),
		FinishedAt: r.time("finished_at"), ModelCalls: r.int("model_calls"),
		Usage: agentrt.Usage{InputTokens: r.int64("input_tokens"), OutputTokens: r.int64("output_tokens"),
			CachedInputTokens: r.int64("cached_input_tokens")},
		EstimatedCost: agentrt.Micros(r.int64("estimated_cost_micros")), ActiveTime: time.Duration(r.int64("active_ns")),
		LeaseOwner: r.str("lease_owner"), LeaseExpiresAt: r.time("lease_expires_at"), Generation: r.int64("generation"),
	}
	page := r.cols[r.i("goal")].kind == colHead
	if limits, size, ok := r.raw("limits_json"); !ok || (page && size > agentrt.MaxPageText) {
		if !page {
			r.note("limits (%s) not read", tooBig(size))
		}
	} else if err := json.Unmarshal([]byte(limits), &run.Limits); err != nil {
		if !page {
			r.note("limits: %v", err)
		}
		run.Limits = agentrt.Limits{}
	}
	result, size, ok := r.raw("result_json")
	switch {
	case !ok && page:
		run.Result = capJSON(nil, size)
	case !ok:
		r.note("result (%s) not read", tooBig(size))
	case page && size > 0:
		run.Result = capJSON([]byte(result), size)
		if !json.Valid(run.Result) {
			run.Result = nil
			r.note("result: not valid JSON")
		}
	case result != "":
		if json.Valid([]byte(result)) {
			run.Result = json.RawMessage(result)
		} else {
			r.note("result: not valid JSON")
		}
	}
	if !run.Status.Valid() {
		r.note("status %q is unknown", truncate(string(run.Status), 64))
	}
	run.DecodeError = r.decodeError()
	return run
}

var (
	stepCols = append(append(textCols(colWhole, "id", "run_id"), col{"idx", colInt}),
		textCols(colWhole, "status", "decision_json", "policy_json", "observation_json", "started_at", "finished_at", "spec_hash", "policy_id")...)
	stepAt     = colIndex(stepCols)
	selectStep = "SELECT " + selectCols(stepCols) + " FROM steps"
)

func scanStep(s scanner) (agentrt.Step, error) {
	r := newRow(stepCols, stepAt)
	if err := r.scan(s); err != nil {
		return agentrt.Step{}, err
	}
	st := agentrt.Step{ID: r.str("id"), RunID: r.str("run_id"), Index: r.int("idx"), Status: agentrt.StepStatus(r.str("status")),
		SpecHash: r.str("spec_hash"), PolicyID: r.str("policy_id")}
	dec, pol, obs := r.str("decision_json"), r.str("policy_json"), r.str("observation_json")
	decodeStep(&st, r, dec, pol, obs)
	return st, nil
}

// decodeStep decodes a step's JSON columns and times and sets DecodeError
// from everything r noted.
func decodeStep(st *agentrt.Step, r *row, dec, pol, obs string) {
	decodeColumn(r, "decision", dec, &st.Decision)
	decodeColumn(r, "policy", pol, &st.Policy)
	decodeColumn(r, "observation", obs, &st.Observation)
	st.StartedAt = r.time("started_at")
	st.FinishedAt = r.time("finished_at")
	switch st.Status {
	case agentrt.StepDeciding, agentrt.StepAwaitingApproval, agentrt.StepExecuting, agentrt.StepDone, agentrt.StepFailed, agentrt.StepInterrupted:
	default:
		r.note("status %q is unknown", truncate(string(st.Status), 64))
	}
	st.DecodeError = r.decodeError()
}

// decodeColumn sets *dst to the JSON text of a column, named what in the
// note r keeps when it will not decode (*dst is then left alone, as it is
// when text is empty).
func decodeColumn[T any](r *row, what, text string, dst **T) {
	if text == "" {
		return
	}
	v := new(T)
	if err := json.Unmarshal([]byte(text), v); err != nil {
		r.note("%s: %v", what, err)
		return
	}
	*dst = v
}

func scanSteps(rows *sql.Rows, err error) ([]agentrt.Step, error) {
	return scanRows(rows, err, scanStep)
}

var (
	approvalCols = textCols(colWhole, "id", "run_id", "step_id", "kind", "capability_json", "presentation_json", "request_json", "hash", "status",
		"created_at", "expires_at", "decided_at", "decided_by", "note", "approver_id", "credential_id", "signature_json",
		"requirement_json", "policy_version")
	approvalAt     = colIndex(approvalCols)
	selectApproval = "SELECT " + selectCols(approvalCols) + " FROM approvals"
)

func scanApproval(s scanner) (agentrt.Approval, error) {
	r, err := scanOne(s, approvalCols, approvalAt, "approval")
	if err != nil {
		return agentrt.Approval{}, err
	}
	a := agentrt.Approval{ID: r.str("id"), RunID: r.str("run_id"), StepID: r.str("step_id"), Kind: r.str("kind"),
		Hash: r.str("hash"), Status: agentrt.ApprovalStatus(r.str("status")), DecidedBy: r.str("decided_by"), Note: r.str("note"),
		ApproverID: r.str("approver_id"), CredentialID: r.str("credential_id"), PolicyVersion: r.str("policy_version")}
	if rq := r.str("requirement_json"); rq != "" {
		a.Requirement = new(agentrt.Requirement)
		if err := json.Unmarshal([]byte(rq), a.Requirement); err != nil {
			r.note("requirement: %v", err)
			a.Requirement = nil
		}
	}
	if sig := r.str("signature_json"); sig != "" {
		a.Signature = new(agentrt.DecisionSignature)
		if err := json.Unmarshal([]byte(sig), a.Signature); err != nil {
			r.note("signature: %v", err)
			a.Signature = nil
		}
	}
	for _, f := range []struct {
		name, col string
		dst       *json.RawMessage
	}{{"capability", "capability_json", &a.Capability}, {"presentation", "presentation_json", &a.Presentation}} {
		s, size, ok := r.raw(f.col)
		switch {
		case !ok:
			r.note("%s (%s) not read", f.name, tooBig(size))
		case s == "" || !json.Valid([]byte(s)):
			r.note("%s: not valid JSON", f.name)
		default:
			*f.dst = json.RawMessage(s)
		}
	}
	if req, size, ok := r.raw("request_json"); !ok {
		r.note("request (%s) not read", tooBig(size))
	} else if err := json.Unmarshal([]byte(req), &a.Request); err != nil {
		r.note("request: %v", err)
		a.Request = agentrt.ToolRequest{}
	}
	a.CreatedAt, a.ExpiresAt, a.DecidedAt = r.time("created_at"), r.time("expires_at"), r.time("decided_at")
	a.DecodeError = r.decodeError()
	return a, nil
}

func scanApprovals(rows *sql.Rows, err error) ([]agentrt.Approval, error) {
	return scanRows(rows, err, scanApproval)
}

var (
	eventCols = append([]col{{"seq", colInt}}, textCols(colWhole, "run_id", "step_id", "at", "type", "payload_json")...)
	eventAt   = colIndex(eventCols)
)

// scanEvents reads events whole. Event has no DecodeError: a payload too
// big to read is replaced by a JSON object giving its size.
func scanEvents(rows *sql.Rows, err error) ([]agentrt.Event, error) {
	r := newRow(eventCols, eventAt)
	return scanRows(rows, err, func(s scanner) (agentrt.Event, error) {
		if err := r.scan(s); err != nil {
			return agentrt.Event{}, err
		}
		e := agentrt.Event{Seq: r.int64("seq"), RunID: r.str("run_id"), StepID: r.str("step_id"), At: r.time("at"), Type: agentrt.EventType(r.str("type"))}
		if p, size, ok := r.raw("payload_json"); ok {
			e.Payload = json.RawMessage(p)
		} else {
			e.Payload = capJSON(nil, size)
		}
		return e, nil
	})
}

// GetRun reads one run.
func (s *Store) GetRun(ctx context.Context, id string) (agentrt.Run, error) {
	r, err := scanRun(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectRun+" WHERE id = ?"), id))
	return notFoundAs(r, err, "run %s", id)
}

// ListRuns reads every run, newest first.
func (s *Store) ListRuns(ctx context.Context) ([]agentrt.Run, error) {
	rows, err := s.rdb.QueryContext(ctx, selectRun+" ORDER BY rowid DESC")
	return scanRows(rows, err, scanRun)
}

// ListSteps reads a run's steps in index order.
func (s *Store) ListSteps(ctx context.Context, runID string) ([]agentrt.Step, error) {
	return scanSteps(s.rdb.QueryContext(ctx, s.d.Rebind(selectStep+" WHERE run_id = ? ORDER BY idx"), runID))
}

// RequestKeyQuery is StepsByRequestKey's read (unbound): the backends'
// tests check that it uses the index. The index on request_key is partial
// (it holds only keys that are not empty), and a planner proves that a
// query may use it only from the query's own terms, not from the value
// bound: without the second term every lookup, one per Gate.Call, scans
// every step.
var RequestKeyQuery = selectStep + " WHERE request_key = ? AND request_key <> '' ORDER BY started_at DESC, id DESC LIMIT ?"

// StepsByRequestKey reads at most limit steps recorded under key, of any
// run, newest first.
func (s *Store) StepsByRequestKey(ctx context.Context, key string, limit int) ([]agentrt.Step, error) {
	if key == "" || limit <= 0 {
		return nil, nil
	}
	return scanSteps(s.queryHot(ctx, RequestKeyQuery, key, limit))
}

// ListApprovals reads a run's approvals in creation order.
func (s *Store) ListApprovals(ctx context.Context, runID string) ([]agentrt.Approval, error) {
	return scanApprovals(s.queryHot(ctx, selectApproval+" WHERE run_id = ? ORDER BY rowid", runID))
}

// GetApproval reads one approval of a run, whole.
func (s *Store) GetApproval(ctx context.Context, runID, approvalID string) (agentrt.Approval, error) {
	a, err := scanApproval(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectApproval+" WHERE id = ? AND run_id = ?"), approvalID, runID))
	return notFoundAs(a, err, "approval %s of run %s", approvalID, runID)
}

// ListEvents reads a run's events in seq order ("" = all runs).
func (s *Store) ListEvents(ctx context.Context, runID string) ([]agentrt.Event, error) {
	q := "SELECT " + selectCols(eventCols) + " FROM events"
	var args []any
	if runID != "" {
		q += " WHERE run_id = ?"
		args = append(args, runID)
	}
	return scanEvents(s.rdb.QueryContext(ctx, s.d.Rebind(q+" ORDER BY seq"), args...))
}

var (
	modelCallCols = append(append(textCols(colWhole, "id", "run_id", "step_id"), col{"attempt", colInt}),
		append(textCols(colWhole, "status", "model"), append(intCols("input_tokens", "output_tokens", "cached_input_tokens", "cost_micros", "latency_ns"),
			textCols(colWhole, "error", "dispatched_at", "completed_at")...)...)...)
	modelCallAt = colIndex(modelCallCols)
)

// ListModelCalls reads a run's model attempts in order. ModelCall has no
// DecodeError: a column that will not decode is read as its zero value.
func (s *Store) ListModelCalls(ctx context.Context, runID string) ([]agentrt.ModelCall, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+selectCols(modelCallCols)+" FROM model_calls WHERE run_id = ? ORDER BY rowid"), runID)
	r := newRow(modelCallCols, modelCallAt)
	return scanRows(rows, err, func(sc scanner) (agentrt.ModelCall, error) {
		if err := r.scan(sc); err != nil {
			return agentrt.ModelCall{}, err
		}
		return agentrt.ModelCall{ID: r.str("id"), RunID: r.str("run_id"), StepID: r.str("step_id"), Attempt: r.int("attempt"),
			Status: agentrt.ModelCallStatus(r.str("status")), Model: r.str("model"),
			Usage: agentrt.Usage{InputTokens: r.int64("input_tokens"), OutputTokens: r.int64("output_tokens"), CachedInputTokens: r.int64("cached_input_tokens")},
			Cost:  agentrt.Micros(r.int64("cost_micros")), Latency: time.Duration(r.int64("latency_ns")), Error: r.str("error"),
			DispatchedAt: r.time("dispatched_at"), CompletedAt: r.time("completed_at")}, nil
	})
}

// GetSpec reads a stored tool spec by hash.
func (s *Store) GetSpec(ctx context.Context, hash string) (json.RawMessage, error) {
	var spec sql.NullString
	var size sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, s.d.Rebind(fmt.Sprintf("SELECT CASE WHEN octet_length(spec_json) <= %d THEN spec_json END, octet_length(spec_json) FROM tool_specs WHERE hash = ?",
		agentrt.MaxStoredValue)), hash).Scan(&spec, &size)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: tool spec %s", agentrt.ErrNotFound, truncate(hash, 80))
	}
	if err == nil && !spec.Valid && size.Valid {
		return nil, fmt.Errorf("agentrt: tool spec %s not read: %s", truncate(hash, 80), tooBig(size.Int64))
	}
	return json.RawMessage(spec.String), err
}

// RenewLease extends a held lease.
func (s *Store) RenewLease(ctx context.Context, p agentrt.LeaseRenewal) error {
	if s.lease == nil {
		return ErrReadOnly
	}
	expr, arg := s.d.leaseExpiry(p.ExpiresAt, p.TTL)
	res, err := s.lease.ExecContext(ctx, s.d.Rebind(`UPDATE runs SET lease_expires_at = `+expr+`
		WHERE id = ? AND status = ? AND lease_owner = ? AND generation = ?`),
		arg, p.RunID, string(agentrt.RunRunning), p.Owner, p.Generation)
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

// capText turns a capped column into text: the head, and when the head is
// shorter than the value, a marker saying how long the value is.
func capText(head []byte, length int64) string {
	if int64(len(head)) >= length {
		return strings.ToValidUTF8(string(head), "\uFFFD")
	}
	// Do not end on a partial rune.
	for k := len(head) - 1; k >= 0 && k >= len(head)-utf8.UTFMax; k-- {
		if utf8.RuneStart(head[k]) {
			if !utf8.FullRune(head[k:]) {
				head = head[:k]
			}
			break
		}
	}
	return fmt.Sprintf("%s…[truncated: %d bytes]", strings.ToValidUTF8(string(head), "\uFFFD"), length)
}

// capJSON keeps a JSON column that fits and replaces one that does not with a
// small object that is still JSON.
func capJSON(head []byte, length int64) json.RawMessage {
	if length <= agentrt.MaxPageText && int64(len(head)) >= length {
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
