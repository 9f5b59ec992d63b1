package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	agentrt "github.com/agentrt/agentrt"
)

// The follower's read: events after a seq, in seq order, which is commit
// order because every append takes seq = head + 1 under the write lock.
// It serves a loop that may run for months over a growing table, so it is
// bounded three ways: by a row limit, by the bytes of payload one page may
// hold, and by MaxStoredValue for any one payload. It never counts.

// afterTextCap bounds the short text columns (ids, time, type) a page reads.
const afterTextCap = 1024

// afterPageBytes is how much payload one page may carry before it ends
// early; a page always holds at least one event.
const afterPageBytes = agentrt.MaxStoredValue

// afterHead is how much of an oversized payload the stand-in keeps.
const afterHead = 512

// The SQL is written to run unchanged on SQLite and Postgres: substr and
// octet_length on text are in both.
var eventsAfterSelect = fmt.Sprintf(`SELECT seq, substr(run_id, 1, %[1]d), substr(step_id, 1, %[1]d), substr(at, 1, 64),
	substr(type, 1, %[1]d),
	CASE WHEN octet_length(payload_json) > %[2]d THEN substr(payload_json, 1, %[3]d) ELSE payload_json END,
	octet_length(payload_json)
	FROM events`, afterTextCap, agentrt.MaxStoredValue, afterHead)

// ListEventsAfter reads at most limit events with seq > after, in seq
// order, of one run or, when runID is "", of every run. A page may end
// early to stay within its byte budget, so only an empty page means the
// reader has caught up. A payload longer than agentrt.MaxStoredValue is not
// loaded: it reads as {"truncated":true,"length":N,"head":"..."}.
func (s *Store) ListEventsAfter(ctx context.Context, runID string, after int64, limit int) ([]agentrt.Event, error) {
	if after < 0 || limit <= 0 {
		return nil, fmt.Errorf("agentrt: reading events after a seq needs after >= 0 and limit > 0, got after %d limit %d", after, limit)
	}
	q := eventsAfterSelect + " WHERE seq > ?"
	args := []any{after}
	if runID != "" {
		q += " AND run_id = ?"
		args = append(args, runID)
	}
	return s.eventsPage(ctx, q, args, limit)
}

// ListStepEvents reads at most limit events of one step of one run with
// seq > after, in seq order, bounded as ListEventsAfter is: what a resume
// needs of a long run's history without loading the rest of it.
func (s *Store) ListStepEvents(ctx context.Context, runID, stepID string, after int64, limit int) ([]agentrt.Event, error) {
	if runID == "" || stepID == "" || after < 0 || limit <= 0 {
		return nil, fmt.Errorf("agentrt: reading a step's events needs a run, a step, after >= 0 and limit > 0, got run %q step %q after %d limit %d", runID, stepID, after, limit)
	}
	return s.eventsPage(ctx, eventsAfterSelect+" WHERE run_id = ? AND step_id = ? AND seq > ?", []any{runID, stepID, after}, limit)
}

// ListStepsEvents reads at most limit events of type typ of the named
// steps of one run, in seq order, bounded as ListEventsAfter is.
func (s *Store) ListStepsEvents(ctx context.Context, runID string, stepIDs []string, typ agentrt.EventType, limit int) ([]agentrt.Event, error) {
	if runID == "" || typ == "" || limit <= 0 {
		return nil, fmt.Errorf("agentrt: reading steps' events needs a run, a type and limit > 0, got run %q type %q limit %d", runID, typ, limit)
	}
	if len(stepIDs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(stepIDs)+2)
	args = append(args, runID, string(typ))
	for _, id := range stepIDs {
		args = append(args, id)
	}
	return s.eventsPage(ctx, eventsAfterSelect+" WHERE run_id = ? AND type = ? AND step_id IN ("+placeholders(len(stepIDs))+")", args, limit)
}

// eventsPage runs q (eventsAfterSelect and its WHERE) in seq order under
// the page bounds.
func (s *Store) eventsPage(ctx context.Context, q string, args []any, limit int) ([]agentrt.Event, error) {
	return s.page(ctx, q, " ORDER BY seq", args, limit)
}

// page runs q (eventsAfterSelect and its WHERE) in the order given under
// the page bounds.
func (s *Store) page(ctx context.Context, q, order string, args []any, limit int) ([]agentrt.Event, error) {
	q += order + " LIMIT ?"
	args = append(args, limit)
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]agentrt.Event, 0, min(limit, 1024))
	var budget int64
	for rows.Next() {
		var e agentrt.Event
		var stepID sql.NullString
		var at, typ string
		var payload []byte
		var length int64
		if err := rows.Scan(&e.Seq, &e.RunID, &stepID, &at, &typ, &payload, &length); err != nil {
			return nil, err
		}
		e.StepID = stepID.String
		e.At, _ = parseTime(at)
		e.Type = agentrt.EventType(typ)
		if length > agentrt.MaxStoredValue {
			e.Payload = oversized(payload, length)
		} else {
			e.Payload = payload
		}
		out = append(out, e)
		if budget += length; budget >= afterPageBytes {
			break
		}
	}
	return out, rows.Err()
}

// oversized is the stand-in for a payload too long to load. It is still
// JSON, so every consumer can print or map it.
func oversized(head []byte, length int64) json.RawMessage {
	b, _ := json.Marshal(struct {
		Truncated bool   `json:"truncated"`
		Length    int64  `json:"length"`
		Head      string `json:"head"`
	}{true, length, strings.ToValidUTF8(string(head), "\uFFFD")})
	return b
}

// settledPostgres reads, in the order their transactions became safe, the
// events whose transaction ended before every one still running: the
// integrator's watermark (checkpoints.go). A transaction still running,
// whatever seq it took, has an xid at or above the snapshot's xmin, or
// takes one later that is higher still, so nothing can appear before a
// position once it is read. Events written before migration 9 share its
// xid, so among them the order is seq order.
var settledPostgres = eventsAfterSelect + `
WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) AND (xid, seq) > ((?::text)::xid8, ?::bigint)`

// ListEventsSettled reads at most limit events after the event at seq
// after (0: from the beginning) in an order that never places a committed
// event behind one already read, of one run or (runID "") of all: what a
// follower that must not skip reads. On SQLite that is ListEventsAfter:
// seqs are assigned in commit order. On PostgreSQL seqs become visible out
// of commit order across transactions, so it reads only events below the
// integrator's watermark, ordered by transaction id and then seq; the
// event at after must exist there, or the read is an error.
func (s *Store) ListEventsSettled(ctx context.Context, runID string, after int64, limit int) ([]agentrt.Event, error) {
	if !s.d.SharedWriters {
		return s.ListEventsAfter(ctx, runID, after, limit)
	}
	if after < 0 || limit <= 0 {
		return nil, fmt.Errorf("agentrt: reading settled events needs after >= 0 and limit > 0, got after %d limit %d", after, limit)
	}
	xid := "0"
	if after > 0 {
		err := s.rdb.QueryRowContext(ctx, s.d.Rebind("SELECT xid::text FROM events WHERE seq = ?"), after).Scan(&xid)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("agentrt: the event at seq %d, where the read resumes, is not in the store", after)
		}
		if err != nil {
			return nil, err
		}
	}
	q := settledPostgres
	args := []any{xid, after}
	if runID != "" {
		q += " AND run_id = ?"
		args = append(args, runID)
	}
	return s.page(ctx, q, " ORDER BY xid, seq", args, limit)
}
