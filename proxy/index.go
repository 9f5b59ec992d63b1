package proxy

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"

	_ "modernc.org/sqlite" // the SQLite driver, as the core's store uses it
)

// The index is the proxy's own SQLite file beside the runs database. The
// core's store refuses any schema but its migrations', so the proxy's table
// cannot live in the runs database; a file of its own keeps both
// guarantees: the runs database stays exactly the core's, and the index is
// held to the same rules (owner-only, no symbolic link, no trigger or view,
// trusted_schema off, defensive mode, synced commits, forward-only
// migrations with a newer file refused).

//go:embed migrations/*.sql
var migrationFS embed.FS

// IndexSchemaVersion is the index schema this build writes and reads.
const IndexSchemaVersion = 2

// ErrIndexSchema marks an index whose schema this build does not know.
var ErrIndexSchema = errors.New("proxy: index schema version mismatch")

// IndexSchemaError names an index written by a newer build, or one whose
// schema holds what the migrations never create.
type IndexSchemaError struct {
	Path   string
	Index  int // the file's version; -1 when the schema is not the migrations'
	Build  int
	Reason string
}

func (e *IndexSchemaError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("proxy: refusing index %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("proxy: refusing index %s: it is at schema version %d and this build knows %d; use a newer agentrt-proxy", e.Path, e.Index, e.Build)
}

// Is matches ErrIndexSchema.
func (e *IndexSchemaError) Is(target error) bool { return target == ErrIndexSchema }

// rowState is where an index row is.
type rowState string

const (
	// stateBegun: the row is claimed; its run may not exist yet, or is
	// RUNNING. Entered by a claim; left when the run waits or ends.
	stateBegun rowState = "begun"
	// stateWaiting: the run waits on approval_id (blocking when it asks
	// about an unknown outcome). Left when the approval is decided, expires
	// or is collected.
	stateWaiting rowState = "waiting"
	// stateDone: the outcome is settled. The row stays open while it
	// answers identical calls (open_until), and a row whose outcome stays
	// unknown stays open until it is asked again.
	stateDone rowState = "done"
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

// row is one index row.
type row struct {
	ID          int64
	Session     string
	Key         string
	Tool        string
	SideEffect  agentrt.SideEffect
	RunID       string
	CreatedAt   time.Time
	Open        bool
	State       rowState
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

type scanner interface{ Scan(dest ...any) error }

func scanRow(s scanner) (*row, error) {
	var r row
	var created, settled, until, closed int64
	var open, blocking int
	var se, state, outcome string
	if err := s.Scan(&r.ID, &r.Session, &r.Key, &r.Tool, &se, &r.RunID, &created, &open, &state, &r.ApprovalID, &blocking,
		&r.UnknownOf, &r.Interrupted, &outcome, &r.Detail, &settled, &until, &closed); err != nil {
		return nil, err
	}
	r.SideEffect, r.State, r.Outcome = agentrt.SideEffect(se), rowState(state), CallOutcome(outcome)
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

// errStale is a compare-and-set on a row that another call (or process)
// changed first; the caller matches the call again.
var errStale = errors.New("proxy: the index row changed")

// Index is the proxy's table of calls. Writes go through one writer that
// commits concurrent updates together (each in a savepoint of its own), so
// many host calls at once pay for few synced commits.
type Index struct {
	path string
	w    *sql.DB
	r    *sql.DB

	reqs      chan *ixReq
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

type ixReq struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error
}

func indexDSN(path string, writer bool) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	prefix := "file:"
	if strings.HasPrefix(path, "/") {
		prefix = "file://"
	}
	q := []string{"_pragma=busy_timeout(10000)", "_pragma=trusted_schema(0)", "_defensive=1"}
	if writer {
		// secure_delete zeroes what a write frees, so text the sweep of
		// erased runs clears (erased.go) leaves no copy in the file.
		q = append(q, "mode=rw", "_pragma=synchronous(FULL)", "_pragma=secure_delete(1)", "_txlock=immediate")
	} else {
		q = append(q, "mode=ro", "_pragma=query_only(1)")
	}
	return prefix + esc + "?" + strings.Join(q, "&")
}

// OpenIndex opens the index at path, creating it owner-only when it does
// not exist and applying the missing migrations. It refuses a symbolic
// link, a file another account owns or others can write, a file holding a
// trigger or a view, and a file at a newer schema version, before it
// writes anything.
func OpenIndex(path string) (*Index, error) {
	if err := checkPrivate(path, true); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("proxy: cannot create the index %s: %w", path, err)
		}
		if err == nil {
			if err := f.Chmod(0o600); err != nil {
				f.Close()
				return nil, err
			}
			f.Close()
		}
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := checkPrivate(p, p != path); err != nil {
			return nil, err
		}
	}
	w, err := sql.Open("sqlite", indexDSN(path, true))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	ix := &Index{path: path, w: w, reqs: make(chan *ixReq, 256), quit: make(chan struct{}), done: make(chan struct{})}
	if err := ix.migrate(context.Background()); err != nil {
		w.Close()
		return nil, err
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := checkPrivate(p, true); err != nil {
			w.Close()
			return nil, err
		}
	}
	r, err := sql.Open("sqlite", indexDSN(path, false))
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	ix.r = r
	go ix.writer()
	return ix, nil
}

// Path is the index file.
func (ix *Index) Path() string { return ix.path }

// Close stops the writer once queued updates are done and closes the file.
func (ix *Index) Close() error {
	var err error
	ix.closeOnce.Do(func() {
		close(ix.quit)
		<-ix.done
		err = errors.Join(ix.w.Close(), ix.r.Close())
	})
	return err
}

type migration struct {
	version int
	name    string
	sql     string
}

func indexMigrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("proxy: migration %s is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate checks the schema and applies the missing migrations, each in its
// own transaction, under the write lock.
func (ix *Index) migrate(ctx context.Context) error {
	ms, err := indexMigrations()
	if err != nil {
		return err
	}
	// Refuse before writing anything: switching to WAL writes the header.
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	_, err = ix.version(ctx, tx)
	tx.Rollback()
	if err != nil {
		return err
	}
	if _, err := ix.w.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("proxy: index %s: %w", ix.path, err)
	}
	for {
		tx, err := ix.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		v, err := ix.version(ctx, tx)
		if err != nil {
			tx.Rollback()
			return err
		}
		if v == IndexSchemaVersion {
			return tx.Rollback()
		}
		var next *migration
		for i := range ms {
			if ms[i].version == v+1 {
				next = &ms[i]
			}
		}
		if next == nil {
			tx.Rollback()
			return fmt.Errorf("proxy: index %s: no migration from version %d", ix.path, v)
		}
		if v == 0 {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE proxy_schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
				tx.Rollback()
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, next.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("proxy: index migration %s: %w", next.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO proxy_schema_migrations (version, applied_at) VALUES (?, ?)`, next.version, time.Now().UnixNano()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}

// version reads the schema version, refusing a file that holds a trigger
// or a view (SQL its author could make the proxy run), a table the
// migrations never create, or a version newer than this build's.
func (ix *Index) version(ctx context.Context, tx *sql.Tx) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT type, name FROM sqlite_schema`)
	if err != nil {
		return 0, err
	}
	known := map[string]bool{"proxy_calls": true, "proxy_schema_migrations": true, "proxy_calls_open": true,
		"proxy_calls_blocking": true, "proxy_calls_recent": true, "proxy_refusals": true}
	hasTable := false
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return 0, err
		}
		switch {
		case typ == "trigger" || typ == "view":
			rows.Close()
			return 0, &IndexSchemaError{Path: ix.path, Index: -1, Build: IndexSchemaVersion, Reason: fmt.Sprintf("it holds a %s (%q), which the proxy never creates", typ, name)}
		case strings.HasPrefix(name, "sqlite_autoindex_proxy_calls"):
		case !known[name]:
			rows.Close()
			return 0, &IndexSchemaError{Path: ix.path, Index: -1, Build: IndexSchemaVersion, Reason: fmt.Sprintf("it holds %s %q, which the proxy never creates", typ, name)}
		}
		if name == "proxy_schema_migrations" {
			hasTable = true
		}
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if !hasTable {
		return 0, nil
	}
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM proxy_schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	if int(v.Int64) > IndexSchemaVersion {
		return 0, &IndexSchemaError{Path: ix.path, Index: int(v.Int64), Build: IndexSchemaVersion}
	}
	return int(v.Int64), nil
}

// update runs fn in a write transaction, possibly shared with other
// updates that reached the writer together; an error from fn rolls back
// only fn's writes. fn may run more than once and must do nothing outside
// tx that it cannot repeat.
func (ix *Index) update(ctx context.Context, fn func(*sql.Tx) error) error {
	req := &ixReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case ix.reqs <- req:
	case <-ix.quit:
		return errors.New("proxy: the index is closed")
	}
	return <-req.done
}

// maxBatch bounds how many updates share one commit.
const maxBatch = 128

func (ix *Index) writer() {
	defer close(ix.done)
	for {
		var first *ixReq
		select {
		case first = <-ix.reqs:
		case <-ix.quit:
			for {
				select {
				case r := <-ix.reqs:
					ix.commit([]*ixReq{r})
				default:
					return
				}
			}
		}
		batch := []*ixReq{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-ix.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		ix.commit(batch)
	}
}

// commit runs a batch in one transaction, each update in a savepoint.
func (ix *Index) commit(batch []*ixReq) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	finish := func(err error) {
		for i, r := range batch {
			if errs[i] == nil {
				errs[i] = err
			}
			r.done <- errs[i]
		}
	}
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		finish(fmt.Errorf("proxy: index %s: %w", ix.path, err))
		return
	}
	if len(batch) == 1 {
		errs[0] = batch[0].fn(tx)
		if errs[0] != nil {
			tx.Rollback()
			finish(nil)
			return
		}
		finish(tx.Commit())
		return
	}
	for i, r := range batch {
		if r.ctx.Err() != nil {
			errs[i] = r.ctx.Err()
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT u"); err != nil {
			tx.Rollback()
			finish(err)
			return
		}
		if errs[i] = r.fn(tx); errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO u"); err != nil {
				tx.Rollback()
				finish(err)
				return
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE u"); err != nil {
			tx.Rollback()
			finish(err)
			return
		}
	}
	finish(tx.Commit())
}

// openRow is the open row of a session and key, or nil.
func openRow(tx *sql.Tx, session, key string) (*row, error) {
	r, err := scanRow(tx.QueryRow(`SELECT `+rowColumns+` FROM proxy_calls WHERE session = ? AND request_key = ? AND open = 1`, session, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

func insertRow(tx *sql.Tx, r *row) error {
	res, err := tx.Exec(`INSERT INTO proxy_calls (session, request_key, tool, side_effect, run_id, created_at, open, state, approval_id,
		blocking, unknown_of, interrupted, outcome, detail, settled_at, open_until, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Session, r.Key, r.Tool, string(r.SideEffect), r.RunID, nanos(r.CreatedAt), boolInt(r.Open), string(r.State), r.ApprovalID,
		boolInt(r.Blocking), r.UnknownOf, r.Interrupted, string(r.Outcome), r.Detail, nanos(r.SettledAt), nanos(r.OpenUntil), nanos(r.ClosedAt))
	if err != nil {
		return err
	}
	r.ID, err = res.LastInsertId()
	return err
}

// casRow writes every mutable column of r if the stored row is still open
// in state from (a compare-and-set); zero rows is errStale.
func casRow(tx *sql.Tx, r *row, from rowState) error {
	res, err := tx.Exec(`UPDATE proxy_calls SET open = ?, state = ?, approval_id = ?, blocking = ?, outcome = ?, detail = ?,
		settled_at = ?, open_until = ?, closed_at = ? WHERE id = ? AND open = 1 AND state = ?`,
		boolInt(r.Open), string(r.State), r.ApprovalID, boolInt(r.Blocking), string(r.Outcome), r.Detail,
		nanos(r.SettledAt), nanos(r.OpenUntil), nanos(r.ClosedAt), r.ID, string(from))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errStale
	}
	return nil
}

// set applies change to a copy of r and writes it with a compare-and-set on
// r's state, returning the new row.
func (ix *Index) set(ctx context.Context, r *row, change func(*row)) (*row, error) {
	n := *r
	change(&n)
	err := ix.update(ctx, func(tx *sql.Tx) error { return casRow(tx, &n, r.State) })
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// replace closes old (a compare-and-set on its state) and inserts next as
// the open row of the same key, in one transaction.
func (ix *Index) replace(ctx context.Context, old *row, next *row, now time.Time) error {
	closed := *old
	closed.Open, closed.ClosedAt, closed.Blocking = false, now, false
	if closed.State != stateDone {
		closed.State = stateDone
	}
	if closed.Outcome == "" {
		closed.Outcome = OutcomeNotExecuted
	}
	if closed.SettledAt.IsZero() {
		closed.SettledAt = now
	}
	return ix.update(ctx, func(tx *sql.Tx) error {
		if err := casRow(tx, &closed, old.State); err != nil {
			return err
		}
		return insertRow(tx, next)
	})
}

// insertClosed records a call that matches nothing (arguments the runtime
// refused as JSON), under a key of its own.
func (ix *Index) insertClosed(ctx context.Context, r *row) error {
	return ix.update(ctx, func(tx *sql.Tx) error { return insertRow(tx, r) })
}

// insertLater queues a closed row without waiting for its commit; Close
// commits what is queued.
func (ix *Index) insertLater(r *row) {
	req := &ixReq{ctx: context.Background(), fn: func(tx *sql.Tx) error { return insertRow(tx, r) }, done: make(chan error, 1)}
	select {
	case ix.reqs <- req:
	case <-ix.quit:
	}
}

// recent lists the session's rows created at or after since, newest first,
// at most limit.
func (ix *Index) recent(ctx context.Context, session string, since time.Time, limit int) ([]*row, error) {
	rows, err := ix.r.QueryContext(ctx, `SELECT `+rowColumns+` FROM proxy_calls WHERE session = ? AND created_at >= ? ORDER BY created_at DESC, id DESC LIMIT ?`,
		session, nanos(since), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// sessionRuns lists the run ids of a session's rows (or every session's
// when session is empty), newest first, at most limit.
func (ix *Index) sessionRuns(ctx context.Context, session string, limit int) ([]string, error) {
	q := `SELECT run_id FROM proxy_calls ORDER BY created_at DESC, id DESC LIMIT ?`
	args := []any{limit}
	if session != "" {
		q = `SELECT run_id FROM proxy_calls WHERE session = ? ORDER BY created_at DESC, id DESC LIMIT ?`
		args = []any{session, limit}
	}
	rows, err := ix.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
