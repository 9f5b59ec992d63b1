package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrt "github.com/agentrt/agentrt"
)

// Page reads serve front ends over files that may be hostile: every text
// column is read capped at MaxPageText and only when it fits MaxStoredValue,
// every integer only when stored as one, only the page is decoded, and
// totals come from COUNT. A step's JSON columns over MaxPageText are not
// copied out at all: a page reads the fields it prints of them from the
// printed-fields columns beside them (fields.go).

// headCols turns a full read's columns into a page's: text cut to
// MaxPageText, except the names given, which are read whole only when they
// fit MaxPageText.
func headCols(cols []col, small ...string) []col {
	out := make([]col, len(cols))
	for i, c := range cols {
		switch {
		case c.kind == colInt:
		case slices.Contains(small, c.name):
			c.kind = colSmall
		default:
			c.kind = colHead
		}
		out[i] = c
	}
	return out
}

var (
	runPageCols   = headCols(runCols)
	runPageAt     = colIndex(runPageCols)
	selectRunPage = "SELECT " + selectCols(runPageCols) + " FROM runs"
)

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

// countedPage counts the rows of table that where selects and queries
// one page of them: selected (a SELECT of table) with where, order and
// the page's LIMIT and OFFSET. The caller scans and closes the rows.
func (s *Store) countedPage(ctx context.Context, table, selected, where, order string, args []any, limit, offset int) (*sql.Rows, int, error) {
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM "+table+where, args...)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(selected+where+order+" LIMIT ? OFFSET ?"), append(args, limit, offset)...)
	return rows, total, err
}

// ListRunsPage reads one page of runs, newest first.
func (s *Store) ListRunsPage(ctx context.Context, limit, offset int) ([]agentrt.Run, int, error) {
	return s.ListRunsByStatusPage(ctx, "", limit, offset)
}

// ListRunsByStatusPage is ListRunsPage of the runs in one status; status ""
// is every run.
func (s *Store) ListRunsByStatusPage(ctx context.Context, status agentrt.RunStatus, limit, offset int) ([]agentrt.Run, int, error) {
	if status != "" && !status.Valid() {
		return nil, 0, fmt.Errorf("agentrt: %q is not a run status", string(status))
	}
	where, args := "", []any{}
	if status != "" {
		where, args = " WHERE status = ?", []any{string(status)}
	}
	rows, total, err := s.countedPage(ctx, "runs", selectRunPage, where, " ORDER BY rowid DESC", args, limit, offset)
	r := newRow(runPageCols, runPageAt)
	out, err := scanRows(rows, err, func(sc scanner) (agentrt.Run, error) {
		if err := r.scan(sc); err != nil {
			return agentrt.Run{}, err
		}
		return decodeRun(r), nil
	})
	return out, total, err
}

// GetRunCapped reads one run with its text columns capped.
func (s *Store) GetRunCapped(ctx context.Context, id string) (agentrt.Run, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(selectRunPage+" WHERE id = ?"), id)
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
	r := newRow(runPageCols, runPageAt)
	if err := r.scan(rows); err != nil {
		return agentrt.Run{}, err
	}
	return decodeRun(r), nil
}

var (
	stepPageCols = headCols(stepCols, "decision_json", "policy_json", "observation_json")
	stepPageAt   = colIndex(stepPageCols)
	// A JSON column over MaxPageText is read by its size and the fields a
	// page prints (fields.go), never loaded.
	selectStepPage = "SELECT " + selectCols(stepPageCols) + ", " +
		pageFields("decision_fields", "decision_json", decisionFields...) + ", " +
		pageFields("policy_fields", "policy_json", policyFields...) + ", " +
		pageFields("observation_fields", "observation_json", observationFields...) + " FROM steps"
)

// ListStepsPage reads one page of a run's steps. A decision, policy or
// observation column over the cap is read by its size and the fields a page
// prints, as the writer recorded them or else extracted by SQLite, and
// DecodeError says it was not read whole.
func (s *Store) ListStepsPage(ctx context.Context, runID string, limit, offset int) ([]agentrt.Step, int, error) {
	rows, total, err := s.countedPage(ctx, "steps", selectStepPage, " WHERE run_id = ?", " ORDER BY idx", []any{runID}, limit, offset)
	r := newRow(stepPageCols, stepPageAt)
	out, err := scanRows(rows, err, func(sc scanner) (agentrt.Step, error) { return scanStepPage(sc, r) })
	return out, total, err
}

// scanStepPage decodes a step of a page into r, which it reuses: the
// JSON columns small enough whole, the others from their printed fields.
func scanStepPage(sc scanner, r *row) (agentrt.Step, error) {
	var decF, polF, obsF sql.NullString
	if err := r.scan(sc, &decF, &polF, &obsF); err != nil {
		return agentrt.Step{}, err
	}
	st := agentrt.Step{ID: r.str("id"), RunID: r.str("run_id"), Index: r.int("idx"),
		Status: agentrt.StepStatus(r.str("status")), SpecHash: r.str("spec_hash"), PolicyID: r.str("policy_id")}
	var over []string
	small := func(name, column string, fields sql.NullString, want, n int) ([]string, string) {
		v, size, ok := r.raw(column)
		if ok && size <= agentrt.MaxPageText {
			return nil, v
		}
		f, read := decodeFields(fields, want, n)
		switch {
		case size > agentrt.MaxStoredValue:
			over = append(over, fmt.Sprintf("%s (%s) not read", name, tooBig(size)))
		case !read:
			over = append(over, fmt.Sprintf("%s (%d bytes) not read whole: not valid JSON", name, size))
		default:
			over = append(over, fmt.Sprintf("%s (%d bytes) not read whole", name, size))
		}
		return f, ""
	}
	decS, polS, obsS := "", "", ""
	if f, v := small("decision", "decision_json", decF, len(decisionFields), agentrt.MaxPageText); f != nil {
		st.Decision = &agentrt.Decision{Kind: agentrt.DecisionKind(f[0]), Tool: f[1], Reason: f[2], Message: f[3]}
	} else {
		decS = v
	}
	if f, v := small("policy", "policy_json", polF, len(policyFields), agentrt.MaxPageText); f != nil {
		st.Policy = &agentrt.PolicyDecision{Outcome: agentrt.PolicyOutcome(f[0]), Reason: f[1], Kind: f[2]}
	} else {
		polS = v
	}
	if f, v := small("observation", "observation_json", obsF, len(observationFields), agentrt.MaxPageText); f != nil {
		st.Observation = &agentrt.Observation{Kind: agentrt.ObservationKind(f[0]), Summary: f[1], ContentHash: f[2]}
	} else {
		obsS = v
	}
	r.bad = append(over, r.bad...)
	decodeStep(&st, r, decS, polS, obsS)
	return st, nil
}

var (
	approvalPageCols   = headCols(approvalCols)
	approvalPageAt     = colIndex(approvalPageCols)
	selectApprovalPage = "SELECT " + selectCols(approvalPageCols) + " FROM approvals"
)

// ListApprovalsPage reads one page of a run's approvals (status "" = all).
// An oversized request is replaced by its identity; to decide, read the
// approval whole with GetApproval, because the decision binds to the hash.
func (s *Store) ListApprovalsPage(ctx context.Context, runID string, status agentrt.ApprovalStatus, limit, offset int) ([]agentrt.Approval, int, error) {
	where := " WHERE run_id = ?"
	args := []any{runID}
	if status != "" {
		where += " AND status = ?"
		args = append(args, string(status))
	}
	rows, total, err := s.countedPage(ctx, "approvals", selectApprovalPage, where, " ORDER BY rowid", args, limit, offset)
	out, err := scanApprovalPage(rows, err)
	return out, total, err
}

// ListWaitingApprovals reads one page of every run's pending approvals,
// oldest first: the inbox. The approvals_waiting index serves both the
// count and the page.
func (s *Store) ListWaitingApprovals(ctx context.Context, limit, offset int) ([]agentrt.Approval, int, error) {
	rows, total, err := s.countedPage(ctx, "approvals", selectApprovalPage, " WHERE status = ?", " ORDER BY created_at, rowid",
		[]any{string(agentrt.ApprovalPending)}, limit, offset)
	out, err := scanApprovalPage(rows, err)
	return out, total, err
}

// scanApprovalPage decodes a page of approvals read with approvalPageCols;
// err is the query's.
func scanApprovalPage(rows *sql.Rows, err error) ([]agentrt.Approval, error) {
	p := newRow(approvalPageCols, approvalPageAt)
	return scanRows(rows, err, func(sc scanner) (agentrt.Approval, error) {
		if err := p.scan(sc); err != nil {
			return agentrt.Approval{}, err
		}
		a := agentrt.Approval{ID: p.str("id"), RunID: p.str("run_id"), StepID: p.str("step_id"), Kind: p.str("kind"),
			Hash: p.str("hash"), Status: agentrt.ApprovalStatus(p.str("status")), CreatedAt: p.time("created_at"),
			ExpiresAt: p.time("expires_at"), DecidedAt: p.time("decided_at"), DecidedBy: p.str("decided_by"), Note: p.str("note"),
			ApproverID: p.str("approver_id"), CredentialID: p.str("credential_id")}
		bad := p.bad
		c := pageText(p, "capability_json")
		a.Capability = capJSON(c.head, c.length)
		pr := pageText(p, "presentation_json")
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
		rq := pageText(p, "request_json")
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
		return a, nil
	})
}

var (
	eventPageCols = headCols(eventCols)
	eventPageAt   = colIndex(eventPageCols)
)

// ListEventsPage reads one page of a run's events in seq order ("" = all runs).
func (s *Store) ListEventsPage(ctx context.Context, runID string, limit, offset int) ([]agentrt.Event, int, error) {
	where := ""
	var args []any
	if runID != "" {
		where = " WHERE run_id = ?"
		args = append(args, runID)
	}
	rows, total, err := s.countedPage(ctx, "events", "SELECT "+selectCols(eventPageCols)+" FROM events", where, " ORDER BY seq", args, limit, offset)
	p := newRow(eventPageCols, eventPageAt)
	out, err := scanRows(rows, err, func(sc scanner) (agentrt.Event, error) {
		if err := p.scan(sc); err != nil {
			return agentrt.Event{}, err
		}
		e := agentrt.Event{Seq: p.int64("seq"), RunID: p.str("run_id"), StepID: p.str("step_id"), At: p.time("at"), Type: agentrt.EventType(p.str("type"))}
		pl := pageText(p, "payload_json")
		e.Payload = capJSON(pl.head, pl.length)
		if !json.Valid(e.Payload) {
			b, _ := json.Marshal(map[string]any{"invalid_payload": true, "text": capText(pl.head, pl.length)})
			e.Payload = b
		}
		return e, nil
	})
	return out, total, err
}

// cappedText is a colHead column as read: its head and its size.
type cappedText struct {
	head   []byte
	length int64
}

func (c cappedText) Over() bool { return c.length > int64(len(c.head)) }

func pageText(r *row, name string) cappedText {
	s, size, _ := r.raw(name)
	return cappedText{[]byte(s), size}
}
