package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Dialect names what differs between SQL engines.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Numbered placeholders ($1, $2, ...) instead of ?.
	Numbered bool
	// InsertIgnore turns "INSERT INTO t" into an insert that ignores a
	// conflicting primary key.
	InsertIgnorePrefix string // e.g. "INSERT OR IGNORE INTO"
	InsertIgnoreSuffix string // e.g. " ON CONFLICT DO NOTHING"
	// Begin starts a write transaction that takes the write lock at once.
	Begin string
	// HeadQuery reads the highest seq in use and the highest ever used,
	// where the store assigns seqs (SeqFromDatabase unset).
	HeadQuery string
	// SeqFromDatabase says the database assigns events' seqs (a sequence):
	// writers in many processes take them without waiting on each other,
	// so seqs may have gaps and become visible out of order across runs.
	SeqFromDatabase bool
	// Busy reports whether err means the database was locked.
	Busy func(error) bool

	// SharedWriters says other processes write the same database at once
	// (Postgres): the highest seq is never trusted from memory.
	SharedWriters bool
	// DatabaseClock says lease times are kept on the database's clock:
	// lease expiries are written as the database's now plus a TTL, lapses
	// are judged against it, and Update hands out a Tx that implements
	// agentrt.DatabaseClock.
	DatabaseClock bool
	// ClaimLock ends a claim's select: " FOR UPDATE SKIP LOCKED" where
	// claimers from many processes must not wait on each other.
	ClaimLock string
	// ByteOrder, when set, is the collation clause that makes text compare
	// byte by byte (Postgres: ` COLLATE "C"`, as a database's default
	// collation may order "a-b" after "a."); empty where it already does.
	ByteOrder string
	// Translate, when set, rewrites a query written in the shared SQL for
	// the engine, after placeholders; its results are cached per query.
	Translate func(string) string
	// ExecBatch, when set, pipelines a write transaction's statements
	// (pipeline.go).
	ExecBatch ExecBatch
}

// translated caches Translate's work: queries are few and repeat.
var translated sync.Map // dialect name + "\x00" + query -> string

// Rebind rewrites ? placeholders for the dialect, and translates the query
// where the dialect says how.
func (d Dialect) Rebind(q string) string {
	if !d.Numbered && d.Translate == nil {
		return q
	}
	key := d.Name + "\x00" + q
	if v, ok := translated.Load(key); ok {
		return v.(string)
	}
	out := d.numbered(q)
	if d.Translate != nil {
		out = d.Translate(out)
	}
	translated.Store(key, out)
	return out
}

func (d Dialect) numbered(q string) string {
	if !d.Numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// Store implements agentrt.Store over database/sql.
type Store struct {
	db    *sql.DB // writer: one connection
	rdb   *sql.DB // readers
	lease *sql.DB // lease renewals (may equal db)
	d     Dialect
	path  string

	// The writer's one connection, held for the store's life so prepared
	// statements stay bound to it across transactions. Only the group
	// commit leader uses it.
	wconn  *sql.Conn
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	// Reads every gate call makes, prepared once on the readers (each
	// connection prepares a statement the first time it runs it), so a
	// call does not parse a long SELECT again: queryHot.
	hotMu sync.Mutex
	hot   map[string]*sql.Stmt

	// group commit
	mu      sync.Mutex
	cond    *sync.Cond
	writing bool
	queue   []*request

	readOnly bool
	closeFn  func() error

	// The highest seq as of this store's last commit, the run heads its
	// commits left (runHeads), and buffers of events and of where each
	// Update's events are; only the group commit leader touches them.
	headKnown bool
	// Runs' keys as committed (keyCache).
	keys     keyCache
	headSeq  int64
	runHeads map[string]runHead
	evbuf    []agentrt.Event
	spans    [][2]int
	// A transaction's run heads and their undo log, kept between
	// transactions (empty between them).
	txHeads map[string]runHead
	undoBuf []headUndo
	// The pipelined writes of the open transaction, its buffers kept
	// between transactions.
	pipe pipeState

	stats struct {
		sync.Mutex
		Stats
	}
}

// Stats counts the writer's work: Commits is synced transactions, Updates
// the Update calls they carried (more Updates than Commits is group commit
// at work).
type Stats struct {
	Commits int64
	Updates int64
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	s.stats.Lock()
	defer s.stats.Unlock()
	return s.stats.Stats
}

// Options configure New.
type Options struct {
	Dialect  Dialect
	Writer   *sql.DB // nil for a read-only store
	Reader   *sql.DB // required
	Lease    *sql.DB // nil: use Writer
	Path     string  // for messages
	ReadOnly bool
	Close    func() error // closes the handles
}

// New wraps open handles.
func New(o Options) *Store {
	s := &Store{db: o.Writer, rdb: o.Reader, lease: o.Lease, d: o.Dialect, path: o.Path, readOnly: o.ReadOnly, closeFn: o.Close, stmts: map[string]*sql.Stmt{}}
	if s.lease == nil {
		s.lease = s.db
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// ErrReadOnly is returned by writes on a store opened read-only.
var ErrReadOnly = errors.New("agentrt: store is read-only")

// Close closes the handles.
func (s *Store) Close() error {
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	if s.wconn != nil {
		s.wconn.Close()
		s.wconn = nil
	}
	s.stmtMu.Unlock()
	s.hotMu.Lock()
	for _, st := range s.hot {
		st.Close()
	}
	s.hot = nil
	s.hotMu.Unlock()
	if s.closeFn != nil {
		return s.closeFn()
	}
	return nil
}

// DB returns the writer handle (the reader handle for a read-only store).
func (s *Store) DB() *sql.DB {
	if s.db != nil {
		return s.db
	}
	return s.rdb
}

// stmt returns a prepared writer statement for q, bound to the writer's
// connection.
func (s *Store) stmt(q string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(context.Background(), s.d.Rebind(q))
	if err != nil {
		return nil, err
	}
	s.stmts[q] = st
	return st, nil
}

// queryHot runs the read q (unbound) on the readers as a statement
// prepared once for the store's life.
func (s *Store) queryHot(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s.hotMu.Lock()
	st, ok := s.hot[q]
	if !ok {
		var err error
		if st, err = s.rdb.PrepareContext(ctx, s.d.Rebind(q)); err != nil {
			s.hotMu.Unlock()
			return nil, err
		}
		if s.hot == nil {
			s.hot = map[string]*sql.Stmt{}
		}
		s.hot[q] = st
	}
	s.hotMu.Unlock()
	return st.QueryContext(ctx, args...)
}

type request struct {
	fn       func(agentrt.Tx) error
	events   []agentrt.Event
	err      error
	panicked any
	done     bool
}

// Update runs fn in a write transaction. Concurrent Updates that reach the
// writer together share one transaction, each in its own savepoint; a lone
// Update pays for no savepoint and waits on no timer.
func (s *Store) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	return s.Enqueue(fn)()
}

// Enqueue puts fn in the writer's queue before it returns, behind every
// write already queued, and returns the wait that commits it (taking the
// writer's turn if no one has it) and returns what Update would. Batches
// run their writes in queue order, and a batch commits before the next
// begins, so writes queued one after another are applied in that order.
func (s *Store) Enqueue(fn func(agentrt.Tx) error) func() ([]agentrt.Event, error) {
	if s.db == nil || s.readOnly {
		return func() ([]agentrt.Event, error) { return nil, ErrReadOnly }
	}
	r := &request{fn: fn}
	s.mu.Lock()
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	return func() ([]agentrt.Event, error) { return s.await(r) }
}

// await waits for r's batch to commit, running the writer when it is free.
func (s *Store) await(r *request) ([]agentrt.Event, error) {
	s.mu.Lock()
	for !r.done {
		if s.writing {
			s.cond.Wait()
			continue
		}
		s.writing = true
		s.mu.Unlock()
		// The batch is taken once the transaction holds its locks: the
		// Updates that arrived while it waited for them (on Postgres, for
		// another process's turn on the chain head) ride in it too.
		o, err := s.begin()
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		s.commit(batch, o, err)
		s.mu.Lock()
		for _, b := range batch {
			b.done = true
		}
		s.writing = false
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.events, r.err
}

// commit runs a batch in one transaction. It uses a background context: a
// write the engine decided to make is not abandoned because a caller gave up.
//
// A batch first runs without savepoints: each is two more statements per
// Update, and a compare-and-set rarely fails. If one Update's fn fails, the
// whole transaction is rolled back and the batch runs again with each
// Update in its own savepoint, so that Update's writes are undone and no
// other's are.
//
// Where the dialect pipelines (ExecBatch), the first attempt sends its
// writes together; if one of them failed, the attempt is void and the
// batch runs again with every statement executed where it is made: a
// shared batch with savepoints, a lone Update as it is.
//
// o is the transaction begin opened for the first attempt (or err, why it
// could not); an attempt after it opens its own.
func (s *Store) commit(batch []*request, o opened, err error) {
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		s.checkWriter()
		return
	}
	shared := len(batch) > 1
	pipelined := s.d.ExecBatch != nil
	// The first attempt runs without savepoints, pipelined where the
	// dialect can; a later one, if it must, isolates and does neither.
	// One runs again also when its events' insert failed: another process
	// appended to one of its runs since the head it chained onto (a
	// conflict of two writers of one run, which a later attempt, reading
	// the heads afresh, resolves).
	ok := s.runBatch(batch, false, pipelined, o)
	for attempt := 1; !ok; attempt++ {
		if attempt == maxAttempts {
			for _, r := range batch {
				r.err = errors.New("agentrt: the batch's events could not be chained: other writers kept moving its runs' heads")
			}
			break
		}
		ok = s.runBatch(batch, shared, false, opened{})
	}
	for _, r := range batch {
		if r.err != nil {
			s.checkWriter()
			return
		}
	}
}

// checkWriter drops the writer's connection, and the statements prepared
// on it, when it no longer answers (a database restart, a server that ended
// the session), so the next batch opens a fresh one. It runs only after a
// batch failed, so the happy path pays nothing for it.
func (s *Store) checkWriter() (dropped bool) {
	if s.wconn == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := s.wconn.PingContext(ctx)
	cancel()
	if err == nil {
		return false
	}
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.wconn.Close()
	s.wconn = nil
	s.stmtMu.Unlock()
	s.headKnown = false
	clear(s.runHeads)
	return true
}

// maxAttempts bounds how many times a batch runs before it fails.
const maxAttempts = 8

// runBatch runs batch in one transaction and commits it. It returns false
// only when nothing was kept and the batch must run again: without
// savepoints, an fn of a shared batch failed (it runs again with them), or
// a pipelined write failed (it runs again unpipelined).
func (s *Store) runBatch(batch []*request, savepoints, pipelined bool, o opened) bool {
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil && r.panicked == nil {
				r.err = err
			}
			r.events = nil
		}
	}
	if !o.begun {
		var err error
		if o, err = s.begin(); err != nil {
			fail(err)
			return true
		}
	}
	exec := s.execW
	abort := func(err error) {
		exec("ROLLBACK")
		fail(err)
	}
	if s.txHeads == nil {
		s.txHeads = make(map[string]runHead, 8)
	}
	t := &tx{s: s, events: s.evbuf[:0], headRead: s.headKnown, headSeq: s.headSeq, memKnown: s.headKnown, memSeq: s.headSeq,
		heads: s.txHeads, undo: s.undoBuf[:0]}
	if pipelined {
		s.pipe.reset()
		t.pipe = &s.pipe
	}
	// again undoes the attempt for a second run; false is runBatch's answer.
	again := func() bool {
		exec("ROLLBACK")
		for _, b := range batch {
			b.err, b.panicked, b.events = nil, nil, nil
		}
		return false
	}
	var handed agentrt.Tx = t
	if s.d.DatabaseClock {
		handed = clockTx{t}
	}
	shared := len(batch) > 1
	t.queue = shared && !savepoints || s.d.SeqFromDatabase
	spans := s.spans[:0]
	s.headKnown = false // until this transaction's outcome is known
	defer func() {
		// Keep the buffers for the next commit; take copied what callers keep.
		clear(t.events)
		s.evbuf = t.events[:0]
		s.spans = spans[:0]
		clear(t.heads)
		clear(t.undo)
		s.undoBuf = t.undo[:0]
		s.pipe.reset()
	}()
	for i, r := range batch {
		if savepoints {
			if err := exec(fmt.Sprintf("SAVEPOINT sp%d", i)); err != nil {
				abort(fmt.Errorf("agentrt: savepoint: %w", err))
				return true
			}
		}
		mark := t.mark()
		r.panicked, r.err = runFn(r.fn, handed)
		if r.err == nil && r.panicked == nil {
			r.err = t.proveLive()
		}
		if !shared && (r.err != nil || r.panicked != nil) {
			// Whether the fn failed on its own or on a write it could
			// not yet see fail, only its writes' results say.
			t.flushPending()
		}
		if t.pipe != nil && t.pipe.voided != nil {
			return again()
		}
		if r.err != nil || r.panicked != nil {
			t.reset(mark)
			if !shared {
				exec("ROLLBACK")
				return true
			}
			if !savepoints {
				// Undo everything and run the batch again, isolated.
				return again()
			}
			if err := exec(fmt.Sprintf("ROLLBACK TO sp%d", i)); err != nil {
				abort(fmt.Errorf("agentrt: rollback to savepoint: %w", err))
				return true
			}
		}
		if savepoints {
			if err := exec(fmt.Sprintf("RELEASE sp%d", i)); err != nil {
				abort(fmt.Errorf("agentrt: release savepoint: %w", err))
				return true
			}
		}
		if r.err == nil && r.panicked == nil {
			spans = append(spans, [2]int{mark.events, len(t.events)})
		} else {
			spans = append(spans, [2]int{})
		}
	}
	if t.queue {
		if err := t.flushEvents(); err != nil {
			// Where a conflict on a run's head failed it, the heads this
			// store remembers are what is out of date.
			clear(s.runHeads)
			return again()
		}
	}
	if t.flushPending() != nil {
		return again()
	}
	if err := exec("COMMIT"); err != nil {
		abort(fmt.Errorf("agentrt: commit: %w", err))
		return true
	}
	for i, r := range batch {
		if r.err == nil && r.panicked == nil {
			r.events = t.taken(spans[i][0], spans[i][1])
		}
	}
	if !s.d.SharedWriters {
		s.headKnown, s.headSeq = t.headRead, t.headSeq
	}
	s.publishHeads(t.heads)
	s.keys.publish(t.published)
	s.stats.Lock()
	s.stats.Commits++
	s.stats.Updates += int64(len(batch))
	s.stats.Unlock()
	return true
}

// opened is a write transaction begun on the writer's connection.
type opened struct {
	begun bool
}

// execW runs a statement without arguments (BEGIN, COMMIT, ROLLBACK,
// savepoints) on the writer's connection, prepared once like every other.
func (s *Store) execW(q string) error {
	st, err := s.stmt(q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(context.Background())
	return err
}

// begin opens a write transaction on the writer's connection, connecting
// again once if the connection died since the last one, and waiting out a
// busy database.
func (s *Store) begin() (opened, error) {
	ctx := context.Background()
	if s.wconn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return opened{}, fmt.Errorf("agentrt: writer connection: %w", err)
		}
		s.wconn = c
	}
	var err error
	reconnected := false
	for attempt := 0; ; attempt++ {
		err = s.execW(s.d.Begin)
		if err != nil && !reconnected && s.checkWriter() {
			// The connection died since the last batch (a database
			// restart): nothing was begun, so begin again on a new one.
			reconnected = true
			c, cerr := s.db.Conn(ctx)
			if cerr != nil {
				return opened{}, fmt.Errorf("agentrt: writer connection: %w", cerr)
			}
			s.wconn = c
			continue
		}
		if err == nil || s.d.Busy == nil || !s.d.Busy(err) || attempt > 50 {
			break
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
	if err != nil {
		return opened{}, fmt.Errorf("agentrt: begin transaction: %w", err)
	}
	return opened{begun: true}, nil
}

func runFn(fn func(agentrt.Tx) error, t agentrt.Tx) (p any, err error) {
	defer func() {
		if v := recover(); v != nil {
			p = v
		}
	}()
	return nil, fn(t)
}
