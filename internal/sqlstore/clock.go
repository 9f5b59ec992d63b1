package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Lease time comes from one of two clocks. SQLite has one writer process
// and takes the engine's: expiries arrive as times, and lapses are judged
// against a time the caller passes. A DatabaseClock dialect (Postgres) takes
// the database's: an expiry is written as now() plus a TTL and a lapse is
// judged against now(), so workers on hosts whose clocks disagree still
// agree on who holds a run.

// pgTimeText formats a timestamptz the way timeText does (RFC 3339 in UTC),
// to microseconds, so lease columns hold one format whichever clock wrote
// them.
const pgTimeText = `to_char((%s) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// leaseExpiry is the SQL for a lease expiry and its one argument.
func (d Dialect) leaseExpiry(at time.Time, ttl time.Duration) (string, any) {
	if d.DatabaseClock {
		return fmt.Sprintf(pgTimeText, "now() + make_interval(secs => CAST(? AS double precision))"), ttl.Seconds()
	}
	return "?", timeText(at)
}

// leaseLapsed is the SQL that holds when a run's lease is free or lapsed,
// and its arguments.
func (d Dialect) leaseLapsed(now time.Time) (string, []any) {
	if d.DatabaseClock {
		return "(lease_owner = '' OR lease_expires_at = '' OR CAST(lease_expires_at AS timestamptz) <= now())", nil
	}
	// julianday reads RFC 3339 with any number of fraction digits; the text
	// itself does not sort by time.
	return "(lease_owner = '' OR lease_expires_at = '' OR julianday(lease_expires_at) <= julianday(?))", []any{timeText(now)}
}

// clockTx is the Tx a DatabaseClock dialect's Update hands out.
type clockTx struct{ *tx }

// DatabaseNow returns the transaction's time on the database's clock: one
// time for everything the transaction writes.
func (t clockTx) DatabaseNow(context.Context) (time.Time, error) {
	if t.dbNow.IsZero() {
		if err := t.queryRow("SELECT now()").Scan(&t.dbNow); err != nil {
			return time.Time{}, err
		}
		t.dbNow = t.dbNow.UTC()
	}
	return t.dbNow, nil
}

// ClockNow reads the database's clock outside a transaction.
func (s *Store) ClockNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.rdb.QueryRowContext(ctx, "SELECT now()").Scan(&now); err != nil {
		return time.Time{}, err
	}
	return now.UTC(), nil
}

// RunClaim takes up to p.Limit runnable runs for p.Owner, oldest first. A
// run is runnable when its lease is free or lapsed and it is ENQUEUED,
// RUNNING (abandoned: its holder crashed, was cut off or let go), or
// WAITING with a step awaiting approval and no approval pending (the
// decision was made). Each is leased to p.Owner with its generation bumped,
// which fences out whoever held it; the runs are returned as they were
// before the claim. Postgres skips rows another transaction holds (FOR
// UPDATE SKIP LOCKED), so claimers never wait on each other, and locks
// only rows still claimable (lockClaimable).
func (t *tx) RunClaim(p agentrt.RunClaim) ([]agentrt.Run, error) {
	if p.Owner == "" || p.Limit <= 0 {
		return nil, fmt.Errorf("agentrt: a claim needs an owner and a limit > 0")
	}
	lapsed, args := t.s.d.leaseLapsed(p.Now)
	// A waiting run is runnable once its approval is decided, or, with
	// ApprovalsNow, once its pending approval has expired: the worker then
	// records the expiry and ends the run instead of it waiting forever.
	decided := `NOT EXISTS (SELECT 1 FROM approvals WHERE approvals.run_id = runs.id AND approvals.status = ?)`
	dargs := []any{string(agentrt.ApprovalPending)}
	if !p.ApprovalsNow.IsZero() {
		expired := "julianday(approvals.expires_at) <= julianday(?)"
		if t.s.d.DatabaseClock {
			expired = "CAST(approvals.expires_at AS timestamptz) <= CAST(? AS timestamptz)"
		}
		decided = `(` + decided + ` OR EXISTS (SELECT 1 FROM approvals WHERE approvals.run_id = runs.id AND approvals.status = ?
			AND approvals.expires_at <> '' AND ` + expired + `))`
		dargs = append(dargs, string(agentrt.ApprovalPending), timeText(p.ApprovalsNow))
	}
	// The runs to skip go as one JSON array, however many there are: a
	// placeholder each would pass the database's limit on them (32766 on
	// SQLite) and fail every claim.
	skip := ""
	var skipJSON []byte
	if len(p.Skip) > 0 {
		skip = "AND id NOT IN (SELECT value FROM json_each(?)) "
		if t.s.d.Name == "postgres" {
			skip = "AND id NOT IN (SELECT value FROM jsonb_array_elements_text(CAST(? AS jsonb))) "
		}
		var err error
		if skipJSON, err = json.Marshal(p.Skip); err != nil {
			return nil, err
		}
	}
	q := `SELECT id FROM runs WHERE ` + lapsed + ` AND (status = ? OR status = ? OR (status = ?
		AND EXISTS (SELECT 1 FROM steps WHERE steps.run_id = runs.id AND steps.status = ?)
		AND ` + decided + `))
		` + skip
	args = append(args, string(agentrt.RunEnqueued), string(agentrt.RunRunning), string(agentrt.RunWaiting),
		string(agentrt.StepAwaitingApproval))
	args = append(args, dargs...)
	if skip != "" {
		args = append(args, string(skipJSON))
	}
	var ids []string
	var err error
	if t.s.d.ClaimLock == "" {
		rows, qerr := t.query(q+`ORDER BY rowid LIMIT ?`, append(args, p.Limit)...)
		ids, err = scanRows(rows, qerr, scanString)
	} else {
		ids, err = t.lockClaimable(q, args, p.Limit)
	}
	if err != nil {
		return nil, err
	}
	out := make([]agentrt.Run, 0, len(ids))
	for _, id := range ids {
		run, err := t.RunGet(id)
		if err != nil {
			return nil, err
		}
		if err := t.RunUpdate(agentrt.RunUpdate{ID: id, From: []agentrt.RunStatus{run.Status}, CheckLease: true,
			Owner: run.LeaseOwner, Generation: run.Generation, SetLease: true, LeaseOwner: p.Owner,
			LeaseExpiresAt: p.Now.Add(p.TTL), LeaseTTL: p.TTL, BumpGeneration: true}); err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// lockClaimable returns and locks up to limit of the runs the claim query
// q (its WHERE ended, args its arguments) finds, oldest first, skipping
// rows another transaction holds. One locking statement would do, but in
// READ COMMITTED a row that another claimer's commit changed while that
// statement ran is locked in its new version before the recheck drops it,
// and the lock lasts until this claim commits, through its WAL flush: the
// run's new owner waits for it to start the run. So the candidates are
// read without locks, and those still claimable are locked by primary key
// in a second, short statement whose snapshot already holds every claim
// committed before it began. Claimers in other processes read the same
// oldest runs at once, so the candidates are claimSurplus times the limit:
// the lock takes the next ones where another claimer holds the first.
func (t *tx) lockClaimable(q string, args []any, limit int) ([]string, error) {
	rows, err := t.query(q+`ORDER BY rowid LIMIT ?`, append(slices.Clip(args), limit*claimSurplus)...)
	cands, err := scanRows(rows, err, scanString)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	list, err := json.Marshal(cands)
	if err != nil {
		return nil, err
	}
	in := "AND id IN (SELECT value FROM json_each(?)) "
	if t.s.d.Name == "postgres" {
		in = "AND id IN (SELECT value FROM jsonb_array_elements_text(CAST(? AS jsonb))) "
	}
	rows, err = t.query(q+in+`ORDER BY rowid LIMIT ?`+t.s.d.ClaimLock, append(slices.Clip(args), string(list), limit)...)
	return scanRows(rows, err, scanString)
}

// claimSurplus is how many candidates a locking claim reads for each run
// it may take (lockClaimable).
const claimSurplus = 4

// pgBlob rewrites the one SQLite-only cast the shared column lists use, a
// text column read as bytes, for Postgres.
func pgBlob(q string) string {
	const open, close = "CAST(", " AS BLOB)"
	for {
		j := strings.Index(q, close)
		if j < 0 {
			return q
		}
		i := strings.LastIndex(q[:j], open)
		if i < 0 {
			return q
		}
		q = q[:i] + "convert_to(" + q[i+len(open):j] + ", 'UTF8')" + q[j+len(close):]
	}
}

// PostgresTranslate is the Translate a Postgres dialect uses.
func PostgresTranslate(q string) string { return pgBlob(q) }
