package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Page reads serve front ends over files that may be hostile: every text
// column is read capped at MaxPageText, every integer is cast, only the page
// is decoded, and totals come from COUNT.

type colKind int

const (
	colText colKind = iota
	colInt
)

type pageCol struct {
	name string
	kind colKind
}

type pageRow struct {
	text map[string]cappedText
	ints map[string]int64
}

type cappedText struct {
	head   []byte
	length int64
}

func (c cappedText) String() string { return capText(c.head, c.length) }
func (c cappedText) Over() bool     { return c.length > agentrt.MaxPageText }

func pageSelect(cols []pageCol) string {
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		switch c.kind {
		case colText:
			parts = append(parts, capped(c.name))
		case colInt:
			parts = append(parts, fmt.Sprintf("CAST(%s AS INTEGER)", c.name))
		}
	}
	return strings.Join(parts, ", ")
}

func scanPageRow(rows *sql.Rows, cols []pageCol, extra ...any) (pageRow, error) {
	dest := make([]any, 0, 2*len(cols))
	texts := make([]cappedText, len(cols))
	ints := make([]sql.NullInt64, len(cols))
	lens := make([]sql.NullInt64, len(cols))
	for i, c := range cols {
		switch c.kind {
		case colText:
			dest = append(dest, &texts[i].head, &lens[i])
		case colInt:
			dest = append(dest, &ints[i])
		}
	}
	dest = append(dest, extra...)
	if err := rows.Scan(dest...); err != nil {
		return pageRow{}, err
	}
	pr := pageRow{text: map[string]cappedText{}, ints: map[string]int64{}}
	for i, c := range cols {
		switch c.kind {
		case colText:
			texts[i].length = lens[i].Int64
			pr.text[c.name] = texts[i]
		case colInt:
			pr.ints[c.name] = ints[i].Int64
		}
	}
	return pr, nil
}

func (p pageRow) s(name string) string { return p.text[name].String() }

func (p pageRow) t(name string) time.Time {
	t, _ := parseTime(p.text[name].String())
	return t
}

var runPageCols = []pageCol{
	{"id", colText}, {"goal", colText}, {"status", colText}, {"reason", colText}, {"reason_detail", colText},
	{"limits_json", colText}, {"step_count", colInt}, {"created_at", colText}, {"started_at", colText},
	{"finished_at", colText}, {"result_json", colText}, {"model_calls", colInt}, {"input_tokens", colInt},
	{"output_tokens", colInt}, {"cached_input_tokens", colInt}, {"estimated_cost_micros", colInt},
	{"active_ns", colInt}, {"lease_owner", colText}, {"lease_expires_at", colText}, {"generation", colInt},
}

func runFromPage(p pageRow) agentrt.Run {
	r := agentrt.Run{
		ID: p.s("id"), Goal: p.s("goal"), Status: agentrt.RunStatus(p.s("status")),
		Reason: agentrt.TerminalReason(p.s("reason")), ReasonDetail: p.s("reason_detail"),
		StepCount: int(p.ints["step_count"]), CreatedAt: p.t("created_at"), StartedAt: p.t("started_at"),
		FinishedAt: p.t("finished_at"), ModelCalls: int(p.ints["model_calls"]),
		Usage: agentrt.Usage{InputTokens: p.ints["input_tokens"], OutputTokens: p.ints["output_tokens"],
			CachedInputTokens: p.ints["cached_input_tokens"]},
		EstimatedCost: agentrt.Micros(p.ints["estimated_cost_micros"]), ActiveTime: time.Duration(p.ints["active_ns"]),
		LeaseOwner: p.s("lease_owner"), LeaseExpiresAt: p.t("lease_expires_at"), Generation: p.ints["generation"],
	}
	if l := p.text["limits_json"]; !l.Over() {
		if err := json.Unmarshal(l.head, &r.Limits); err != nil {
			r.Limits = agentrt.Limits{}
		}
	}
	if res := p.text["result_json"]; res.length > 0 {
		r.Result = capJSON(res.head, res.length)
		if !json.Valid(r.Result) {
			r.Result = nil
			r.DecodeError = "result: not valid JSON"
		}
	}
	return r
}

func (s *Store) count(ctx context.Context, q string, args ...any) (int, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, s.d.Rebind(q), args...).Scan(&n)
	return n, err
}

func checkPage(limit, offset int) error {
	if limit <= 0 || offset < 0 {
		return fmt.Errorf("agentrt: a page needs limit > 0 and offset >= 0, got limit %d offset %d", limit, offset)
	}
	return nil
}

// ListRunsPage reads one page of runs, newest first.
func (s *Store) ListRunsPage(ctx context.Context, limit, offset int) ([]agentrt.Run, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM runs")
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+pageSelect(runPageCols)+" FROM runs ORDER BY rowid DESC LIMIT ? OFFSET ?"), limit, offset)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []agentrt.Run
	for rows.Next() {
		p, err := scanPageRow(rows, runPageCols)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, runFromPage(p))
	}
	return out, total, rows.Err()
}

// GetRunCapped reads one run with its text columns capped.
func (s *Store) GetRunCapped(ctx context.Context, id string) (agentrt.Run, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+pageSelect(runPageCols)+" FROM runs WHERE id = ?"), id)
	if err != nil {
		return agentrt.Run{}, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return agentrt.Run{}, err
		}
		return agentrt.Run{}, fmt.Errorf("%w: run %s", agentrt.ErrNotFound, truncate(id, 80))
	}
	p, err := scanPageRow(rows, runPageCols)
	if err != nil {
		return agentrt.Run{}, err
	}
	return runFromPage(p), nil
}

var stepPageCols = []pageCol{
	{"id", colText}, {"run_id", colText}, {"idx", colInt}, {"status", colText}, {"decision_json", colText},
	{"policy_json", colText}, {"observation_json", colText}, {"started_at", colText}, {"finished_at", colText},
	{"spec_hash", colText}, {"policy_id", colText},
}

// ListStepsPage reads one page of a run's steps. A decision, policy or
// observation column over the cap is replaced by its identifying fields and
// DecodeError says it was not read whole.
func (s *Store) ListStepsPage(ctx context.Context, runID string, limit, offset int) ([]agentrt.Step, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM steps WHERE run_id = ?", runID)
	if err != nil {
		return nil, 0, err
	}
	// Identifying fields of oversized columns, read by SQLite without
	// handing the whole value to Go.
	ident := `, CASE WHEN length(CAST(decision_json AS BLOB)) > ` + fmt.Sprint(agentrt.MaxPageText) + ` THEN substr(json_extract(decision_json, '$.kind'), 1, 64) || ' ' || substr(COALESCE(json_extract(decision_json, '$.tool'), ''), 1, 256) ELSE '' END`
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+pageSelect(stepPageCols)+ident+" FROM steps WHERE run_id = ? ORDER BY idx LIMIT ? OFFSET ?"), runID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []agentrt.Step
	for rows.Next() {
		var decIdent sql.NullString
		p, err := scanPageRow(rows, stepPageCols, &decIdent)
		if err != nil {
			return nil, 0, err
		}
		st := agentrt.Step{ID: p.s("id"), RunID: p.s("run_id"), Index: int(p.ints["idx"]),
			Status: agentrt.StepStatus(p.s("status")), SpecHash: p.s("spec_hash"), PolicyID: p.s("policy_id")}
		var over []string
		dec, pol, obs := p.text["decision_json"], p.text["policy_json"], p.text["observation_json"]
		decS, polS, obsS := string(dec.head), string(pol.head), string(obs.head)
		if dec.Over() {
			over = append(over, fmt.Sprintf("decision (%d bytes) not read whole", dec.length))
			kind, tool, _ := strings.Cut(decIdent.String, " ")
			d, _ := json.Marshal(agentrt.Decision{Kind: agentrt.DecisionKind(kind), Tool: tool})
			decS = string(d)
		}
		if pol.Over() {
			over = append(over, fmt.Sprintf("policy (%d bytes) not read whole", pol.length))
			polS = ""
		}
		if obs.Over() {
			over = append(over, fmt.Sprintf("observation (%d bytes) not read whole", obs.length))
			o, _ := json.Marshal(agentrt.Observation{Kind: agentrt.ObsToolResult, Summary: "[not read whole]"})
			obsS = string(o)
		}
		decodeStep(&st, decS, polS, obsS, p.s("started_at"), p.s("finished_at"))
		if len(over) > 0 {
			msg := strings.Join(over, "; ")
			if st.DecodeError != "" {
				msg += "; " + st.DecodeError
			}
			st.DecodeError = msg
		}
		out = append(out, st)
	}
	return out, total, rows.Err()
}

var approvalPageCols = []pageCol{
	{"id", colText}, {"run_id", colText}, {"step_id", colText}, {"kind", colText}, {"capability_json", colText},
	{"presentation_json", colText}, {"request_json", colText}, {"hash", colText}, {"status", colText},
	{"created_at", colText}, {"expires_at", colText}, {"decided_at", colText}, {"decided_by", colText}, {"note", colText},
}

// ListApprovalsPage reads one page of a run's approvals (status "" = all).
// An oversized request is replaced by its identity; to decide, read the
// approval whole with GetApproval, because the decision binds to the hash.
func (s *Store) ListApprovalsPage(ctx context.Context, runID string, status agentrt.ApprovalStatus, limit, offset int) ([]agentrt.Approval, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	where := " WHERE run_id = ?"
	args := []any{runID}
	if status != "" {
		where += " AND status = ?"
		args = append(args, string(status))
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM approvals"+where, args...)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+pageSelect(approvalPageCols)+" FROM approvals"+where+" ORDER BY rowid LIMIT ? OFFSET ?"), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []agentrt.Approval
	for rows.Next() {
		p, err := scanPageRow(rows, approvalPageCols)
		if err != nil {
			return nil, 0, err
		}
		a := agentrt.Approval{ID: p.s("id"), RunID: p.s("run_id"), StepID: p.s("step_id"), Kind: p.s("kind"),
			Hash: p.s("hash"), Status: agentrt.ApprovalStatus(p.s("status")), CreatedAt: p.t("created_at"),
			ExpiresAt: p.t("expires_at"), DecidedAt: p.t("decided_at"), DecidedBy: p.s("decided_by"), Note: p.s("note")}
		var bad []string
		c := p.text["capability_json"]
		a.Capability = capJSON(c.head, c.length)
		pr := p.text["presentation_json"]
		a.Presentation = capJSON(pr.head, pr.length)
		// A stand-in is never mistaken for the value: DecodeError says so.
		if c.Over() {
			bad = append(bad, fmt.Sprintf("capability (%d bytes) not read whole", c.length))
		}
		if pr.Over() {
			bad = append(bad, fmt.Sprintf("presentation (%d bytes) not read whole", pr.length))
		}
		for _, v := range []struct {
			n string
			r json.RawMessage
		}{{"capability", a.Capability}, {"presentation", a.Presentation}} {
			if len(v.r) > 0 && !json.Valid(v.r) {
				bad = append(bad, v.n+": not valid JSON")
			}
		}
		rq := p.text["request_json"]
		if rq.Over() {
			bad = append(bad, fmt.Sprintf("request (%d bytes) not read whole", rq.length))
			a.Request = agentrt.ToolRequest{RunID: a.RunID, StepID: a.StepID}
			a.Request.Args, _ = json.Marshal(map[string]any{"truncated": true, "length": rq.length})
		} else if err := json.Unmarshal(rq.head, &a.Request); err != nil {
			bad = append(bad, "request: "+err.Error())
			a.Request = agentrt.ToolRequest{}
		}
		if len(bad) > 0 {
			a.DecodeError = strings.Join(bad, "; ")
		}
		out = append(out, a)
	}
	return out, total, rows.Err()
}

var eventPageCols = []pageCol{
	{"seq", colInt}, {"run_id", colText}, {"step_id", colText}, {"at", colText}, {"type", colText}, {"payload_json", colText},
}

// ListEventsPage reads one page of a run's events in seq order ("" = all runs).
func (s *Store) ListEventsPage(ctx context.Context, runID string, limit, offset int) ([]agentrt.Event, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	where := ""
	var args []any
	if runID != "" {
		where = " WHERE run_id = ?"
		args = append(args, runID)
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM events"+where, args...)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+pageSelect(eventPageCols)+" FROM events"+where+" ORDER BY seq LIMIT ? OFFSET ?"), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []agentrt.Event
	for rows.Next() {
		p, err := scanPageRow(rows, eventPageCols)
		if err != nil {
			return nil, 0, err
		}
		e := agentrt.Event{Seq: p.ints["seq"], RunID: p.s("run_id"), StepID: p.s("step_id"), At: p.t("at"), Type: agentrt.EventType(p.s("type"))}
		pl := p.text["payload_json"]
		e.Payload = capJSON(pl.head, pl.length)
		if !json.Valid(e.Payload) {
			b, _ := json.Marshal(map[string]any{"invalid_payload": true, "text": capText(pl.head, pl.length)})
			e.Payload = b
		}
		out = append(out, e)
	}
	return out, total, rows.Err()
}
