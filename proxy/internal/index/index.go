package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/sqlscan"
	"github.com/agentrt/agentrt/trace"

	_ "modernc.org/sqlite" // the SQLite driver, as the core's store uses it
)

// State is where an index row is.
type State string

const (
	// StateBegun: the row is claimed; its run may not exist yet, or is
	// RUNNING. Entered by a claim; left when the run waits or ends.
	StateBegun State = "begun"
	// StateWaiting: the run waits on approval_id (blocking when it asks
	// about an unknown outcome). Left when the approval is decided, expires
	// or is collected.
	StateWaiting State = "waiting"
	// StateDone: the outcome is settled. The row stays open while it
	// answers identical calls (open_until), and a row whose outcome stays
	// unknown stays open until it is asked again.
	StateDone State = "done"
)

// CallOutcome is what came of one proxied call, as the index settles it.
type CallOutcome string

const (
	// OutcomeSucceeded: executed; the server answered with a result.
	OutcomeSucceeded CallOutcome = "succeeded"
	// OutcomeFailed: executed; the server reported a failure.
	OutcomeFailed CallOutcome = "failed"
	// OutcomeUnrecorded: executed; the server's answer could not be
	// recorded. It counts as executed.
	OutcomeUnrecorded CallOutcome = "unrecorded"
	// OutcomeUnknown: it may have executed (cut off, timed out, no
	// answer); an operator is asked in a new run and this row is closed.
	OutcomeUnknown CallOutcome = "unknown"
	// OutcomeDenied: not executed; the policy denied it, or the adapter
	// refused it before it reached the server.
	OutcomeDenied CallOutcome = "denied"
	// OutcomeInvalid: not executed; the arguments were refused.
	OutcomeInvalid CallOutcome = "invalid"
	// OutcomeNotExecuted: not executed; abandoned before the tool started,
	// or moved on by an operator.
	OutcomeNotExecuted CallOutcome = "not_executed"
	// OutcomeRejected: not executed; an operator rejected it.
	OutcomeRejected CallOutcome = "rejected"
	// OutcomeExpired: not executed; no decision (or no collection) in time.
	OutcomeExpired CallOutcome = "expired"
	// OutcomeUnknownRejected: an operator rejected re-running a call whose
	// outcome is unknown. It stays unknown: an identical call is asked
	// again once the repeat window has passed.
	OutcomeUnknownRejected CallOutcome = "unknown_rejected"
	// OutcomeUnknownDenied: the policy denied re-running a call whose
	// outcome is unknown. It stays unknown, as above.
	OutcomeUnknownDenied CallOutcome = "unknown_denied"
)

// Executed reports whether the call reached the server and counts as run.
func (o CallOutcome) Executed() bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeUnrecorded
}

// StaysUnknown reports whether the call's effect is still unknown after an
// operator or the policy refused to run it again.
func (o CallOutcome) StaysUnknown() bool {
	return o == OutcomeUnknownRejected || o == OutcomeUnknownDenied
}

// Row is one index Row.
type Row struct {
	ID          int64
	Session     string
	Key         string
	Tool        string
	SideEffect  agentrt.SideEffect
	RunID       string
	CreatedAt   time.Time
	Open        bool
	State       State
	ApprovalID  string
	Blocking    bool
	UnknownOf   string
	Interrupted string // JSON of the interruption a re-ask asks about
	Outcome     CallOutcome
	Detail      string
	SettledAt   time.Time
	OpenUntil   time.Time
	ClosedAt    time.Time
}

const rowColumns = `id, session, request_key, tool, side_effect, run_id, created_at, open, state, approval_id, blocking,
	unknown_of, interrupted, outcome, detail, settled_at, open_until, closed_at`

func scanRow(s sqlscan.Scanner) (*Row, error) {
	var r Row
	var created, settled, until, closed int64
	var open, blocking int
	var se, state, outcome string
	if err := s.Scan(&r.ID, &r.Session, &r.Key, &r.Tool, &se, &r.RunID, &created, &open, &state, &r.ApprovalID, &blocking,
		&r.UnknownOf, &r.Interrupted, &outcome, &r.Detail, &settled, &until, &closed); err != nil {
		return nil, err
	}
	r.SideEffect, r.State, r.Outcome = agentrt.SideEffect(se), State(state), CallOutcome(outcome)
	r.Open, r.Blocking = open == 1, blocking == 1
	r.CreatedAt, r.SettledAt, r.OpenUntil, r.ClosedAt = fromNanos(created), fromNanos(settled), fromNanos(until), fromNanos(closed)
	return &r, nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ErrStale is a compare-and-set on a row that another call (or process)
// changed first; the caller matches the call again.
var ErrStale = errors.New("proxy: the index row changed")

// OpenRow is the open row of a session and key, or nil.
func (tx *Tx) OpenRow(session, key string) (*Row, error) {
	r, err := scanRow(tx.tx.QueryRow(`SELECT `+rowColumns+` FROM proxy_calls WHERE session = ? AND request_key = ? AND open = 1`, session, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// Insert writes r as a new row and sets its ID.
func (tx *Tx) Insert(r *Row) error {
	res, err := tx.tx.Exec(`INSERT INTO proxy_calls (session, request_key, tool, side_effect, run_id, created_at, open, state, approval_id,
		blocking, unknown_of, interrupted, outcome, detail, settled_at, open_until, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Session, r.Key, r.Tool, string(r.SideEffect), r.RunID, nanos(r.CreatedAt), boolInt(r.Open), string(r.State), r.ApprovalID,
		boolInt(r.Blocking), r.UnknownOf, r.Interrupted, string(r.Outcome), r.Detail, nanos(r.SettledAt), nanos(r.OpenUntil), nanos(r.ClosedAt))
	if err != nil {
		return err
	}
	r.ID, err = res.LastInsertId()
	return err
}

// CAS writes every mutable column of r if the stored row is still open in
// state from (a compare-and-set); zero rows is ErrStale.
func (tx *Tx) CAS(r *Row, from State) error {
	res, err := tx.tx.Exec(`UPDATE proxy_calls SET open = ?, state = ?, approval_id = ?, blocking = ?, outcome = ?, detail = ?,
		settled_at = ?, open_until = ?, closed_at = ? WHERE id = ? AND open = 1 AND state = ?`,
		boolInt(r.Open), string(r.State), r.ApprovalID, boolInt(r.Blocking), string(r.Outcome), r.Detail,
		nanos(r.SettledAt), nanos(r.OpenUntil), nanos(r.ClosedAt), r.ID, string(from))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrStale
	}
	return nil
}

// Set applies change to a copy of r and writes it with a compare-and-set on
// r's state, returning the new row.
func (ix *Index) Set(ctx context.Context, r *Row, change func(*Row)) (*Row, error) {
	n := *r
	change(&n)
	err := ix.Update(ctx, func(tx *Tx) error { return tx.CAS(&n, r.State) })
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// Replace closes old (a compare-and-set on its state) and inserts next as
// the open row of the same key, in one transaction.
func (ix *Index) Replace(ctx context.Context, old *Row, next *Row, now time.Time) error {
	closed := *old
	closed.Open, closed.ClosedAt, closed.Blocking = false, now, false
	if closed.State != StateDone {
		closed.State = StateDone
	}
	if closed.Outcome == "" {
		closed.Outcome = OutcomeNotExecuted
	}
	if closed.SettledAt.IsZero() {
		closed.SettledAt = now
	}
	return ix.Update(ctx, func(tx *Tx) error {
		if err := tx.CAS(&closed, old.State); err != nil {
			return err
		}
		return tx.Insert(next)
	})
}

// InsertClosed records a call that matches nothing (arguments the runtime
// refused as JSON), under a key of its own.
func (ix *Index) InsertClosed(ctx context.Context, r *Row) error {
	return ix.Update(ctx, func(tx *Tx) error { return tx.Insert(r) })
}

// InsertLater queues a closed row without waiting for its commit; Close
// commits what is queued.
func (ix *Index) InsertLater(r *Row) {
	req := &ixReq{ctx: context.Background(), fn: func(tx *sql.Tx) error { return (&Tx{tx}).Insert(r) }, done: make(chan error, 1)}
	select {
	case ix.reqs <- req:
	case <-ix.quit:
	}
}

// Recent lists the session's rows created at or after since, newest first,
// at most limit.
func (ix *Index) Recent(ctx context.Context, session string, since time.Time, limit int) ([]*Row, error) {
	rows, err := ix.r.QueryContext(ctx, `SELECT `+rowColumns+` FROM proxy_calls WHERE session = ? AND created_at >= ? ORDER BY created_at DESC, id DESC LIMIT ?`,
		session, nanos(since), limit)
	return sqlscan.All(rows, err, scanRow)
}

// SessionRuns lists the run ids of a session's rows (or every session's
// when session is empty), newest first, at most limit.
func (ix *Index) SessionRuns(ctx context.Context, session string, limit int) ([]string, error) {
	q := `SELECT run_id FROM proxy_calls ORDER BY created_at DESC, id DESC LIMIT ?`
	args := []any{limit}
	if session != "" {
		q = `SELECT run_id FROM proxy_calls WHERE session = ? ORDER BY created_at DESC, id DESC LIMIT ?`
		args = []any{session, limit}
	}
	rows, err := ix.r.QueryContext(ctx, q, args...)
	return sqlscan.All(rows, err, func(s sqlscan.Scanner) (string, error) {
		var id string
		err := s.Scan(&id)
		return id, err
	})
}

// RecordRefusal keeps one request a server sent that the proxy refused.
func (ix *Index) RecordRefusal(ctx context.Context, session, server, method string, at time.Time) error {
	return ix.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO proxy_refusals (session, server, method, at) VALUES (?, ?, ?, ?)`,
			session, server, trace.Truncate(method, maxMethod), at.UnixNano())
		return err
	})
}

// Unswept lists the ids and run ids of rows after id after that the sweep
// has not cleared, in id order, at most limit.
func (ix *Index) Unswept(ctx context.Context, after int64, limit int) ([]int64, []string, error) {
	rows, err := ix.r.QueryContext(ctx, `SELECT id, run_id FROM proxy_calls WHERE id > ? AND substr(request_key, 1, ?) != ? ORDER BY id LIMIT ?`,
		after, len(ErasedKeyPrefix), ErasedKeyPrefix, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: index %s: %w", ix.path, err)
	}
	defer rows.Close()
	var ids []int64
	var runs []string
	for rows.Next() {
		var id int64
		var run string
		if err := rows.Scan(&id, &run); err != nil {
			return nil, nil, err
		}
		ids, runs = append(ids, id), append(runs, run)
	}
	return ids, runs, rows.Err()
}

// ClearErased blanks the request key and the text of the rows named and
// closes them, in one transaction.
func (ix *Index) ClearErased(ctx context.Context, ids []int64, now time.Time) error {
	return ix.Update(ctx, func(tx *Tx) error {
		for _, id := range ids {
			if _, err := tx.tx.ExecContext(ctx, `UPDATE proxy_calls SET request_key = ? || id, detail = '', open = 0, blocking = 0,
				closed_at = CASE WHEN closed_at = 0 THEN ? ELSE closed_at END WHERE id = ?`, ErasedKeyPrefix, nanos(now), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// BlockingRows are a session's rows of tool whose unknown outcome blocks
// it, other than key's.
func (tx *Tx) BlockingRows(session, tool, key string) ([]*Row, error) {
	rows, err := tx.tx.Query(`SELECT `+rowColumns+` FROM proxy_calls WHERE session = ? AND tool = ? AND blocking = 1 AND request_key <> ?`,
		session, tool, key)
	return sqlscan.All(rows, err, scanRow)
}

// Unblock lets row id's tool run again: its question was approved.
func (tx *Tx) Unblock(id int64) error {
	_, err := tx.tx.Exec(`UPDATE proxy_calls SET blocking = 0 WHERE id = ?`, id)
	return err
}

// ApprovalRef names one approval a row waits on.
type ApprovalRef struct{ Run, Approval string }

// WaitingApprovals are the approvals a session's open rows wait on.
func (tx *Tx) WaitingApprovals(session string) ([]ApprovalRef, error) {
	rows, err := tx.tx.Query(`SELECT run_id, approval_id FROM proxy_calls WHERE session = ? AND open = 1 AND state = ?`, session, string(StateWaiting))
	return sqlscan.All(rows, err, func(s sqlscan.Scanner) (ApprovalRef, error) {
		var r ApprovalRef
		err := s.Scan(&r.Run, &r.Approval)
		return r, err
	})
}

// RunningRows are a session's open rows whose call may be running (begun,
// or waiting on an approval that may have been granted); of tool only,
// and created at or before made, when tool is not empty. A row that does
// not scan ends the list.
func (ix *Index) RunningRows(ctx context.Context, session, tool string, made time.Time) ([]*Row, error) {
	q := `SELECT ` + rowColumns + ` FROM proxy_calls WHERE session = ? AND open = 1 AND state IN (?, ?)`
	args := []any{session, string(StateBegun), string(StateWaiting)}
	if tool != "" {
		q += ` AND tool = ? AND created_at <= ?`
		args = append(args, tool, nanos(made))
	}
	rows, err := ix.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []*Row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			break
		}
		out = append(out, r)
	}
	rows.Close()
	return out, nil
}

// Checkpoint copies the index's write-ahead log into the file and
// truncates it, so no page from before a sweep stays in the log.
func (ix *Index) Checkpoint(ctx context.Context) error {
	var busy, frames, done int
	if err := ix.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done); err != nil {
		return fmt.Errorf("proxy: index %s: %w", ix.path, err)
	}
	if busy != 0 {
		return fmt.Errorf("proxy: index %s: another process is reading it, so its log was not emptied (%d of %d pages copied)", ix.path, done, frames)
	}
	return nil
}

// ErasedKeyPrefix marks a swept row's request key: it holds the row's own
// id, which matches no call and is no digest of anything. ClearErased
// writes it, and Unswept skips the rows that have it.
const ErasedKeyPrefix = "erased:"

// maxMethod bounds a refused method's name as recorded.
const maxMethod = 200
