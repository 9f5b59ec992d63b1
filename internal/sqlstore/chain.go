package sqlstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	agentrt "github.com/agentrt/agentrt"
)

// The chain: each event's hash is the SHA-256 of seven netstrings
// (<length>:<bytes>,): the previous event's hash ("" before the first), the
// seq in decimal, run id, step id, time, type, and the hex SHA-256 of the
// payload as stored, keyed by the run's salt when it has one (SHA-256 of
// the 64-byte salt and the payload).
// Hashing the payload's digest rather than its bytes lets erasure replace a
// payload later and keep the chain verifiable; keying it by a salt erased
// with the content keeps the digest from confirming a guess of it.

func appendNetstring[T string | []byte](buf []byte, b T) []byte {
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, ':')
	buf = append(buf, b...)
	return append(buf, ',')
}

// eventHash computes an event's chain hash from its stored fields.
func eventHash(prev string, seq int64, runID, stepID, at, typ string, payloadDigest *[32]byte) string {
	var out [64]byte
	eventHashInto(&out, prev, seq, runID, stepID, at, typ, payloadDigest)
	return string(out[:])
}

// eventHashInto writes the hex chain hash into out; the verifier calls it
// with the bytes it scanned, allocating nothing.
func eventHashInto[T string | []byte](out *[64]byte, prev T, seq int64, runID, stepID, at, typ T, payloadDigest *[32]byte) {
	var stack [512]byte
	buf := stack[:0]
	buf = appendNetstring(buf, prev)
	var num [20]byte
	buf = appendNetstring(buf, strconv.AppendInt(num[:0], seq, 10))
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

func (t *tx) readHead() error {
	if t.headRead {
		return nil
	}
	// One statement reads the head and, on SQLite, the highest seq ever
	// used: a seq is never reused, so a deleted tail leaves a gap the
	// verifier reports.
	var seq, used sql.NullInt64
	var h sql.NullString
	err := t.queryRow(t.s.d.HeadQuery).Scan(&seq, &h, &used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	t.headSeq, t.headHash = seq.Int64, h.String
	if used.Int64 > t.headSeq {
		t.headSeq = used.Int64
	}
	t.headRead = true
	t.headTrusted = true
	return nil
}

// EventAppend chains the event onto the head. A lone Update inserts it at
// once, checking inside the insert that the head it remembers from its last
// commit is still the head. An optimistic group-commit batch reads the head
// under the write lock once and queues its rows, which flushEvents inserts
// many to a statement before the commit.
func (t *tx) EventAppend(e agentrt.Event) (agentrt.Event, error) {
	if t.queue && !t.headTrusted {
		t.headRead = false
	}
	if err := t.readHead(); err != nil {
		return agentrt.Event{}, err
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
	digest := key.payloadDigest(payload)
	for {
		seq := t.headSeq + 1
		h := eventHash(t.headHash, seq, e.RunID, e.StepID, at, string(e.Type), &digest)
		switch {
		case t.queue:
			t.rows = append(t.rows, eventRow{seq: seq, runID: e.RunID, stepID: e.StepID, at: at, typ: string(e.Type), payload: string(payload), hash: h})
		case t.headTrusted:
			if err := t.write(insertEvents(1), outcome{}, seq, e.RunID, e.StepID, at, string(e.Type), string(payload), h); err != nil {
				return agentrt.Event{}, err
			}
		default:
			// The head came from the store's memory of its last commit: the
			// insert applies only if no other writer moved the chain since.
			res, err := t.exec(insertEventIfHead, seq, e.RunID, e.StepID, at, string(e.Type), string(payload), h, t.headSeq)
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
		t.headSeq, t.headHash = seq, h
		e.Seq = seq
		e.Payload = payload
		t.events = append(t.events, e)
		return e, nil
	}
}

const insertEventIfHead = `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash)
	SELECT ?, ?, ?, ?, ?, ?, ? WHERE COALESCE((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0) = ?`

// eventRow is an event waiting to be inserted.
type eventRow struct {
	seq                                   int64
	runID, stepID, at, typ, payload, hash string
}

// maxEventRows bounds one multi-row insert (7 parameters a row).
const maxEventRows = 128

// flushEvents inserts the queued event rows, many to a statement.
func (t *tx) flushEvents() error {
	rows := t.rows
	for len(rows) > 0 {
		n := min(len(rows), maxEventRows)
		args := make([]any, 0, 7*n)
		for _, r := range rows[:n] {
			args = append(args, r.seq, r.runID, r.stepID, r.at, r.typ, r.payload, r.hash)
		}
		if err := t.write(insertEvents(n), outcome{}, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	clear(t.rows)
	t.rows = t.rows[:0]
	return nil
}

var insertEventsText [maxEventRows + 1]string

func insertEvents(n int) string {
	if insertEventsText[n] == "" {
		q := "INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", n), ", ")
		insertEventsText[n] = q
	}
	return insertEventsText[n]
}

// ChainHead returns the newest event's seq and hash.
func (s *Store) ChainHead(ctx context.Context) (int64, string, error) {
	var seq sql.NullInt64
	var h sql.NullString
	err := s.rdb.QueryRowContext(ctx, "SELECT seq, substr(hash, 1, 128) FROM events ORDER BY seq DESC LIMIT 1").Scan(&seq, &h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return seq.Int64, h.String, err
}

// EventHash returns the stored hash of the event at seq.
func (s *Store) EventHash(ctx context.Context, seq int64) (string, error) {
	var h string
	err := s.rdb.QueryRowContext(ctx, s.d.Rebind("SELECT substr(hash, 1, 128) FROM events WHERE seq = ?"), seq).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: event %d", agentrt.ErrNotFound, seq)
	}
	return h, err
}

const verifyPage = 4096

// VerifyEvents recomputes the chain over [from, to] and reports the first
// break. A payload over MaxStoredValue is a break, reported by its size
// without being read, so a hostile row cannot make the verifier hold it.
func (s *Store) VerifyEvents(ctx context.Context, from, to int64) (agentrt.VerifyReport, error) {
	headSeq, _, err := s.ChainHead(ctx)
	if err != nil {
		return agentrt.VerifyReport{}, err
	}
	if from < 1 {
		from = 1
	}
	if to < 1 || to > headSeq {
		to = headSeq
	}
	rep := agentrt.VerifyReport{From: from, To: to}
	if headSeq == 0 || from > to {
		return rep, nil
	}
	prev := ""
	prevSeq := int64(0)
	if from > 1 {
		// Anchor on the stored hash of the event before the range.
		var h string
		var seq int64
		err := s.rdb.QueryRowContext(ctx, s.d.Rebind("SELECT seq, hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1"), from).Scan(&seq, &h)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return rep, err
		}
		prev, prevSeq = h, seq
	}
	// Fields longer than the runtime ever writes are not read: the row is
	// reported as broken. octet_length reads a value's size without loading
	// it, so such a field comes back NULL. Every other payload is read once
	// and hashed, so verifying is linear in the payload's size.
	q := s.d.Rebind(`SELECT seq,
		CASE WHEN octet_length(run_id) <= 4096 THEN run_id END, CASE WHEN octet_length(step_id) <= 4096 THEN step_id END,
		CASE WHEN octet_length(at) <= 4096 THEN at END, CASE WHEN octet_length(type) <= 4096 THEN type END,
		CASE WHEN octet_length(payload_json) <= ` + strconv.Itoa(agentrt.MaxStoredValue) + ` THEN payload_json END, octet_length(payload_json), substr(hash, 1, 128),
		octet_length(run_id) > 4096 OR octet_length(step_id) > 4096 OR octet_length(at) > 4096 OR octet_length(type) > 4096,
		CASE WHEN octet_length(payload_digest) <= 128 THEN payload_digest END
		FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`)
	cur := from
	first := true
	var prevBuf, want [64]byte
	prevB := append(prevBuf[:0], prev...)
	var seq, lPayload int64
	var runID, stepID, at, typ, payload, stored, erasedDigest sql.RawBytes
	var big bool
	salts := &saltCache{s: s}
	erased := map[string]int64{}
	for cur <= to {
		rows, err := s.rdb.QueryContext(ctx, q, cur, to, verifyPage)
		if err != nil {
			return rep, err
		}
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&seq, &runID, &stepID, &at, &typ, &payload, &lPayload, &stored, &big, &erasedDigest); err != nil {
				rows.Close()
				return rep, err
			}
			brk := func(detail, expected string, found []byte) agentrt.VerifyReport {
				if rep.Checked > 0 {
					rep.Last, rep.Hash = prevSeq, string(prevB)
				}
				rep.Break = &agentrt.ChainBreak{Seq: seq, Expected: expected, Found: truncate(string(found), 128), Detail: detail}
				return rep
			}
			if first && from == 1 && seq != 1 && prevSeq == 0 {
				rows.Close()
				return brk(fmt.Sprintf("the chain starts at event %d, not 1: events before it are missing", seq), "", nil), nil
			}
			if !first || from > 1 {
				if prevSeq != 0 && seq != prevSeq+1 {
					rows.Close()
					return brk(fmt.Sprintf("an event is missing before event %d (previous is %d)", seq, prevSeq), "", nil), nil
				}
			}
			first = false
			if big {
				rows.Close()
				return brk("an event field is longer than any the runtime writes", "", nil), nil
			}
			if lPayload > agentrt.MaxStoredValue {
				rows.Close()
				return brk(fmt.Sprintf("the payload is %d bytes, larger than any event agentrt writes", lPayload), "", nil), nil
			}
			var digest [32]byte
			if len(erasedDigest) > 0 {
				// Erased: the chain hashed the digest kept beside the
				// payload; the erasure check below proves what remains.
				if n, err := hex.Decode(digest[:], erasedDigest); err != nil || n != 32 {
					rows.Close()
					return brk("the kept digest of an erased payload is not a SHA-256 digest", "", erasedDigest), nil
				}
				erased[string(runID)]++
				rep.Erased++
			} else {
				key, err := salts.of(ctx, string(runID))
				if err != nil {
					rows.Close()
					return rep, err
				}
				digest = key.payloadDigest(payload)
			}
			if string(typ) == string(agentrt.EventRunErased) {
				// A run.erased is checked even where nothing was erased.
				erased[string(runID)] += 0
			}
			eventHashInto(&want, prevB, seq, []byte(runID), []byte(stepID), []byte(at), []byte(typ), &digest)
			if !bytes.Equal(want[:], stored) {
				rows.Close()
				return brk("stored hash does not match the event's fields and the hash before it", string(want[:]), stored), nil
			}
			prevB = append(prevBuf[:0], stored...)
			prevSeq = seq
			rep.Checked++
			cur = seq + 1
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return rep, err
		}
		if n == 0 {
			break
		}
	}
	if rep.Checked > 0 {
		rep.Last, rep.Hash = prevSeq, string(prevB)
	}
	if prevSeq < to {
		rep.Break = &agentrt.ChainBreak{Seq: prevSeq + 1, Detail: fmt.Sprintf("events %d to %d are missing", prevSeq+1, to)}
		return rep, nil
	}
	return s.verifyErasures(ctx, rep, erased)
}
