package index

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

	"github.com/agentrt/agentrt/internal/files"

	_ "modernc.org/sqlite" // the SQLite driver, as the core's store uses it
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// SchemaVersion is the index schema this build writes and reads.
const SchemaVersion = 2

// ErrSchema marks an index whose schema this build does not know.
var ErrSchema = errors.New("proxy: index schema version mismatch")

// SchemaError names an index written by a newer build, or one whose
// schema holds what the migrations never create.
type SchemaError struct {
	Path   string
	Index  int // the file's version; -1 when the schema is not the migrations'
	Build  int
	Reason string
}

func (e *SchemaError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("proxy: refusing index %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("proxy: refusing index %s: it is at schema version %d and this build knows %d; use a newer agentrt-proxy", e.Path, e.Index, e.Build)
}

// Is matches ErrSchema.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// Tx is one update's view of the index: the statements a caller runs in
// one transaction with Update.
type Tx struct{ tx *sql.Tx }

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

// Open opens the index at path, creating it owner-only when it does
// not exist and applying the missing migrations. It refuses a symbolic
// link, a file another account owns or others can write, a file holding a
// trigger or a view, and a file at a newer schema version, before it
// writes anything.
func Open(path string) (*Index, error) {
	if err := files.CheckPrivate(path, true); err != nil {
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
		if err := files.CheckPrivate(p, p != path); err != nil {
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
		if err := files.CheckPrivate(p, true); err != nil {
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
		if v == SchemaVersion {
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
			return 0, &SchemaError{Path: ix.path, Index: -1, Build: SchemaVersion, Reason: fmt.Sprintf("it holds a %s (%q), which the proxy never creates", typ, name)}
		case strings.HasPrefix(name, "sqlite_autoindex_proxy_calls"):
		case !known[name]:
			rows.Close()
			return 0, &SchemaError{Path: ix.path, Index: -1, Build: SchemaVersion, Reason: fmt.Sprintf("it holds %s %q, which the proxy never creates", typ, name)}
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
	if int(v.Int64) > SchemaVersion {
		return 0, &SchemaError{Path: ix.path, Index: int(v.Int64), Build: SchemaVersion}
	}
	return int(v.Int64), nil
}

// Update runs fn in a write transaction, possibly shared with other
// updates that reached the writer together; an error from fn rolls back
// only fn's writes. fn may run more than once and must do nothing outside
// tx that it cannot repeat.
func (ix *Index) Update(ctx context.Context, fn func(*Tx) error) error {
	req := &ixReq{ctx: ctx, fn: func(tx *sql.Tx) error { return fn(&Tx{tx}) }, done: make(chan error, 1)}
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

// ReadSessionRuns reads a session's newest run ids (every session's when
// session is empty) from the index at path, read-only: the file is held
// to the trusted-file rule, and nothing is migrated or written.
func ReadSessionRuns(ctx context.Context, path, session string, limit int) ([]string, error) {
	if err := files.CheckPrivate(path, false); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", indexDSN(path, false))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ix := &Index{path: path, r: db}
	return ix.SessionRuns(ctx, session, limit)
}
