package sqlstore

import (
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
// payload as stored. Hashing the payload's digest rather than its bytes lets
// retention drop a payload later and keep the chain verifiable.

func appendNetstring[T string | []byte](buf []byte, b T) []byte {
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, ':')
	buf = append(buf, b...)
	return append(buf, ',')
}

// eventHash computes an event's chain hash from its stored fields.
func eventHash(prev string, seq int64, runID, stepID, at, typ string, payloadDigest *[32]byte) string {
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
	return hex.EncodeToString(sum[:])
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
	digest := sha256.Sum256(payload)
	for {
		seq := t.headSeq + 1
		h := eventHash(t.headHash, seq, e.RunID, e.StepID, at, string(e.Type), &digest)
		switch {
		case t.queue:
			t.rows = append(t.rows, eventRow{seq: seq, runID: e.RunID, stepID: e.StepID, at: at, typ: string(e.Type), payload: string(payload), hash: h})
		case t.headTrusted:
			if _, err := t.exec(insertEvents(1), seq, e.RunID, e.StepID, at, string(e.Type), string(payload), h); err != nil {
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
		if _, err := t.exec(insertEvents(n), args...); err != nil {
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

const verifyPage = 512

// VerifyEvents recomputes the chain over [from, to] and reports the first
// break. Long payloads are hashed in chunks so a hostile row cannot make the
// verifier hold it whole.
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
	q := s.d.Rebind(`SELECT seq, substr(run_id, 1, 4096), length(CAST(run_id AS BLOB)), substr(step_id, 1, 4096),
		length(CAST(step_id AS BLOB)), substr(at, 1, 4096), length(CAST(at AS BLOB)), substr(type, 1, 4096),
		length(CAST(type AS BLOB)), CASE WHEN length(CAST(payload_json AS BLOB)) <= 65536 THEN CAST(payload_json AS BLOB) ELSE NULL END,
		length(CAST(payload_json AS BLOB)), substr(hash, 1, 128)
		FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`)
	cur := from
	first := true
	for cur <= to {
		rows, err := s.rdb.QueryContext(ctx, q, cur, to, verifyPage)
		if err != nil {
			return rep, err
		}
		n := 0
		for rows.Next() {
			n++
			var seq int64
			var runID, stepID, at, typ, stored string
			var lRun, lStep, lAt, lType, lPayload int64
			var payload []byte
			if err := rows.Scan(&seq, &runID, &lRun, &stepID, &lStep, &at, &lAt, &typ, &lType, &payload, &lPayload, &stored); err != nil {
				rows.Close()
				return rep, err
			}
			brk := func(detail, expected, found string) agentrt.VerifyReport {
				rep.Break = &agentrt.ChainBreak{Seq: seq, Expected: expected, Found: truncate(found, 128), Detail: detail}
				return rep
			}
			if first && from == 1 && seq != 1 && prevSeq == 0 {
				rows.Close()
				return brk(fmt.Sprintf("the chain starts at event %d, not 1: events before it are missing", seq), "", ""), nil
			}
			if !first || from > 1 {
				if prevSeq != 0 && seq != prevSeq+1 {
					rows.Close()
					return brk(fmt.Sprintf("an event is missing before event %d (previous is %d)", seq, prevSeq), "", ""), nil
				}
			}
			first = false
			if lRun > 4096 || lStep > 4096 || lAt > 4096 || lType > 4096 {
				rows.Close()
				return brk("an event field is longer than any the runtime writes", "", ""), nil
			}
			var digest [32]byte
			if payload != nil {
				digest = sha256.Sum256(payload)
			} else {
				d, err := s.streamDigest(ctx, seq, lPayload)
				if err != nil {
					rows.Close()
					return rep, err
				}
				copy(digest[:], d)
			}
			want := eventHash(prev, seq, runID, stepID, at, typ, &digest)
			if want != stored {
				rows.Close()
				return brk("stored hash does not match the event's fields and the hash before it", want, stored), nil
			}
			prev, prevSeq = stored, seq
			rep.Checked++
			rep.Hash = stored
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
	if prevSeq < to {
		rep.Break = &agentrt.ChainBreak{Seq: prevSeq + 1, Detail: fmt.Sprintf("events %d to %d are missing", prevSeq+1, to)}
	}
	return rep, nil
}

func (s *Store) streamDigest(ctx context.Context, seq, length int64) ([]byte, error) {
	h := sha256.New()
	q := s.d.Rebind("SELECT substr(CAST(payload_json AS BLOB), ?, ?) FROM events WHERE seq = ?")
	for off := int64(1); off <= length; off += agentrt.MaxPageText {
		var chunk []byte
		if err := s.rdb.QueryRowContext(ctx, q, off, agentrt.MaxPageText, seq).Scan(&chunk); err != nil {
			return nil, err
		}
		h.Write(chunk)
	}
	return h.Sum(nil), nil
}
