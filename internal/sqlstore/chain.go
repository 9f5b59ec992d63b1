package sqlstore

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	agentrt "github.com/agentrt/agentrt"
)

// The chains (docs/decisions/0002, 0015): each event's hash is the SHA-256
// of seven netstrings (<length>:<bytes>,): the previous link's hash (""
// before the first), a place in decimal, run id, step id, time, type, and
// the hex SHA-256 of the payload as stored, keyed by the run's salt when
// it has one (SHA-256 of the 64-byte salt and the payload).
//
// Events written since schema version 9 chain within their run: the
// previous link is the run's event before this one and the place is its
// run_seq (1 for the run's first). Events written before it form one
// global chain: the previous link is the event with the next lower seq,
// and the place is the seq; chain_global_end records where it ends.
//
// Hashing the payload's digest rather than its bytes lets erasure replace a
// payload later and keep the chain verifiable; keying it by a salt erased
// with the content keeps the digest from confirming a guess of it.

func appendNetstring[T string | []byte](buf []byte, b T) []byte {
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, ':')
	buf = append(buf, b...)
	return append(buf, ',')
}

// eventHash computes an event's chain hash from its stored fields; place
// is its run_seq, or its seq for an event of the global chain.
func eventHash(prev string, place int64, runID, stepID, at, typ string, payloadDigest *[32]byte) string {
	var out [64]byte
	eventHashInto(&out, prev, place, runID, stepID, at, typ, payloadDigest)
	return string(out[:])
}

// eventHashInto writes the hex chain hash into out; the verifier calls it
// with the bytes it scanned, allocating nothing.
func eventHashInto[T string | []byte](out *[64]byte, prev T, place int64, runID, stepID, at, typ T, payloadDigest *[32]byte) {
	var stack [512]byte
	buf := stack[:0]
	buf = appendNetstring(buf, prev)
	var num [20]byte
	buf = appendNetstring(buf, strconv.AppendInt(num[:0], place, 10))
	buf = appendNetstring(buf, runID)
	buf = appendNetstring(buf, stepID)
	buf = appendNetstring(buf, at)
	buf = appendNetstring(buf, typ)
	var hexd [64]byte
	hex.Encode(hexd[:], payloadDigest[:])
	buf = appendNetstring(buf, hexd[:])
	sum := sha256.Sum256(buf)
	hex.Encode(out[:], sum[:])
}

// runHead is the newest event of one run's chain: its run_seq and hash.
// The zero value is a run with no event in its chain yet.
type runHead struct {
	n    int64
	hash string
}

// headUndo is what an Update changed of the transaction's run heads, so
// undoing the Update (a savepoint rolled back) puts them back.
type headUndo struct {
	run  string
	had  bool
	prev runHead
}

// maxCachedHeads bounds the run heads a store remembers between commits.
const maxCachedHeads = 4096

const selectRunHead = `SELECT run_seq, substr(hash, 1, 128) FROM events WHERE run_id = ? AND run_seq > 0 ORDER BY run_seq DESC LIMIT 1`

// runHeadOf returns the head a new event of run chains onto: what this
// transaction appended, else what the store's own commits left (on
// Postgres another process may have moved it since: the unique index on
// (run_id, run_seq) refuses the insert then, and the batch runs again),
// else the database's.
func (t *tx) runHeadOf(run string) (runHead, error) {
	if h, ok := t.heads[run]; ok {
		return h, nil
	}
	if h, ok := t.s.runHeads[run]; ok {
		return h, nil
	}
	var n sql.NullInt64
	var h sql.NullString
	err := t.queryRow(selectRunHead, run).Scan(&n, &h)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return runHead{}, err
	}
	return runHead{n.Int64, h.String}, nil
}

// setHead moves run's head in the transaction, remembering what it was.
func (t *tx) setHead(run string, h runHead) {
	prev, had := t.heads[run]
	t.undo = append(t.undo, headUndo{run: run, had: had, prev: prev})
	t.heads[run] = h
}

// undoHeads puts the run heads back as they were when undo held n entries.
func (t *tx) undoHeads(n int) {
	for i := len(t.undo) - 1; i >= n; i-- {
		u := t.undo[i]
		if u.had {
			t.heads[u.run] = u.prev
		} else {
			delete(t.heads, u.run)
		}
	}
	t.undo = t.undo[:n]
}

// publishHeads keeps the committed transaction's run heads for the next.
func (s *Store) publishHeads(heads map[string]runHead) {
	if len(heads) == 0 {
		return
	}
	if s.runHeads == nil || len(s.runHeads)+len(heads) > maxCachedHeads {
		s.runHeads = make(map[string]runHead, len(heads))
	}
	for run, h := range heads {
		s.runHeads[run] = h
	}
}

// readHead reads the highest seq in use, where the store assigns seqs
// (SQLite). A seq is never reused: sqlite_sequence keeps the highest ever
// used, so a deleted tail leaves a gap the verifier reports. When it is
// not the seq this store last wrote, another process wrote since, and the
// run heads the store remembers are no longer to be trusted.
func (t *tx) readHead() error {
	if t.headRead {
		return nil
	}
	var seq, used sql.NullInt64
	err := t.queryRow(t.s.d.HeadQuery).Scan(&seq, &used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	t.headSeq = max(seq.Int64, used.Int64)
	if !t.memKnown || t.headSeq != t.memSeq {
		clear(t.s.runHeads)
	}
	t.memKnown, t.memSeq = true, t.headSeq
	t.headRead = true
	t.headTrusted = true
	return nil
}

// EventAppend chains the event onto its run's head. Where the store
// assigns seqs (SQLite), a lone Update inserts it at once, checking inside
// the insert that the seq it remembers from its last commit is still the
// highest; an optimistic group-commit batch reads it under the write lock
// once and queues its rows, which flushEvents inserts many to a statement
// before the commit. Where the database assigns them (Postgres), every
// event is queued and its seq is known once flushEvents inserted it.
func (t *tx) EventAppend(e agentrt.Event) (agentrt.Event, error) {
	ownSeqs := !t.s.d.SeqFromDatabase
	if ownSeqs {
		if t.queue && !t.headTrusted {
			t.headRead = false
		}
		if err := t.readHead(); err != nil {
			return agentrt.Event{}, err
		}
	}
	payload := []byte(e.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	at := t.timeText(e.At)
	key, err := t.saltFor(e.RunID, e.Type)
	if err != nil {
		return agentrt.Event{}, err
	}
	for {
		n, h, err := t.link(e, at, key, payload)
		if err != nil {
			return agentrt.Event{}, err
		}
		var seq int64
		if ownSeqs {
			seq = t.headSeq + 1
		}
		switch {
		case t.queue:
			t.rows = append(t.rows, eventRow{seq: seq, runSeq: n, runID: e.RunID, stepID: e.StepID, at: at, typ: string(e.Type), payload: string(payload), hash: h})
		case t.headTrusted:
			if err := t.write(insertEvents(1), outcome{}, seq, e.RunID, e.StepID, at, string(e.Type), string(payload), h, n); err != nil {
				return agentrt.Event{}, err
			}
		default:
			// The seq came from the store's memory of its last commit: the
			// insert applies only if no other writer moved the chain since.
			res, err := t.exec(insertEventIfHead, seq, e.RunID, e.StepID, at, string(e.Type), string(payload), h, n, t.headSeq)
			if err != nil {
				return agentrt.Event{}, err
			}
			if n, err := res.RowsAffected(); err != nil {
				return agentrt.Event{}, err
			} else if n != 1 {
				t.headRead = false
				if err := t.readHead(); err != nil {
					return agentrt.Event{}, err
				}
				continue
			}
			t.headTrusted = true
		}
		if n > 0 {
			t.setHead(e.RunID, runHead{n, h})
		}
		if ownSeqs {
			t.headSeq = seq
		}
		e.Seq = seq
		e.Payload = payload
		t.events = append(t.events, e)
		return e, nil
	}
}

// link returns the new event's place in its run's chain and its hash.
func (t *tx) link(e agentrt.Event, at string, key *keyed, payload []byte) (int64, string, error) {
	if chainless.Load() {
		return 0, "", nil
	}
	prev, err := t.runHeadOf(e.RunID)
	if err != nil {
		return 0, "", err
	}
	digest := key.payloadDigest(payload)
	n := prev.n + 1
	return n, eventHash(prev.hash, n, e.RunID, e.StepID, at, string(e.Type), &digest), nil
}

// chainless, set only by benchmarks, writes events with no chain at all.
var chainless atomic.Bool

// ChainlessForBenchmarks makes every store in the process write events
// unchained (no hash, no place in a run): the ceiling the chain's cost is
// measured against (BenchmarkWorkerProcesses). Such events do not verify;
// nothing but a benchmark may call it.
func ChainlessForBenchmarks() { chainless.Store(true) }

const insertEventIfHead = `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash, run_seq)
	SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE COALESCE((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0) = ?`

// eventRow is an event waiting to be inserted.
type eventRow struct {
	seq, runSeq                           int64
	runID, stepID, at, typ, payload, hash string
}

// maxEventRows bounds one multi-row insert (8 parameters a row).
const maxEventRows = 128

// flushEvents inserts the queued event rows, many to a statement. Where
// the database assigns seqs, it reads them back into the events.
func (t *tx) flushEvents() error {
	rows := t.rows
	done := 0
	for len(rows) > 0 {
		n := min(len(rows), maxEventRows)
		args := make([]any, 0, 8*n)
		for _, r := range rows[:n] {
			if t.s.d.SeqFromDatabase {
				args = append(args, r.runID, r.stepID, r.at, r.typ, r.payload, r.hash, r.runSeq)
			} else {
				args = append(args, r.seq, r.runID, r.stepID, r.at, r.typ, r.payload, r.hash, r.runSeq)
			}
		}
		var err error
		if t.s.d.SeqFromDatabase {
			err = t.insertNumbered(n, done, args)
		} else {
			err = t.write(insertEvents(n), outcome{}, args...)
		}
		if err != nil {
			return err
		}
		rows = rows[n:]
		done += n
	}
	clear(t.rows)
	t.rows = t.rows[:0]
	return nil
}

// insertNumbered inserts n queued rows whose seqs the database assigns
// and sets them on the transaction's events from index first on. The
// rows of one statement take their seqs in the order they are listed, so
// the seqs returned, sorted, are theirs in that order.
func (t *tx) insertNumbered(n, first int, args []any) error {
	res, err := t.query(insertNumberedEvents(n), args...)
	if err != nil {
		return err
	}
	seqs := make([]int64, 0, n)
	for res.Next() {
		var seq int64
		if err := res.Scan(&seq); err != nil {
			res.Close()
			return err
		}
		seqs = append(seqs, seq)
	}
	err = res.Err()
	res.Close()
	if err != nil {
		return err
	}
	if len(seqs) != n || len(t.events) < first+n {
		return errors.New("agentrt: the database numbered a different count of events than were inserted")
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		t.events[first+i].Seq = seq
	}
	return nil
}

var insertEventsText, insertNumberedText [maxEventRows + 1]string

func insertEvents(n int) string {
	if insertEventsText[n] == "" {
		q := "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash, run_seq) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
		insertEventsText[n] = q
	}
	return insertEventsText[n]
}

func insertNumberedEvents(n int) string {
	if insertNumberedText[n] == "" {
		q := "INSERT INTO events (run_id, step_id, at, type, payload_json, hash, run_seq) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", n), ", ") + " RETURNING seq"
		insertNumberedText[n] = q
	}
	return insertNumberedText[n]
}
