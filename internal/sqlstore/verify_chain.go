package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	agentrt "github.com/agentrt/agentrt"
)

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

// globalEnd reads where the global chain ends: its last event's seq and
// hash as the migration to per-run chains recorded them (0 and "" for a
// database that had no events then).
func (s *Store) globalEnd(ctx context.Context) (int64, string, error) {
	var seq int64
	var h string
	err := s.rdb.QueryRowContext(ctx, "SELECT seq, substr(hash, 1, 128) FROM chain_global_end").Scan(&seq, &h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", errors.New("agentrt: chain_global_end has no row: the database was changed outside agentrt")
	}
	return seq, h, err
}

const verifyPage = 4096

// maxVerifiedRuns bounds the run heads one VerifyEvents call keeps; past
// it they are dropped and looked up again as their runs come up.
const maxVerifiedRuns = 100_000

// scanned is one event row as the verifier reads it. The byte fields are
// valid only until the next row is read.
type scanned struct {
	seq, lPayload, runSeq                                 int64
	runID, stepID, at, typ, payload, stored, erasedDigest sql.RawBytes
	big                                                   bool
}

// verifier holds one VerifyEvents call's state.
type verifier struct {
	s      *Store
	rep    agentrt.VerifyReport
	salts  *saltCache
	erased map[string]int64
	// The last event checked intact.
	lastSeq int64
	lastBuf [64]byte
	last    []byte
	// runs holds each run's head as far as checked (per-run chains).
	runs map[string]*checkedHead
}

type checkedHead struct {
	n    int64
	hash [64]byte
	size int
}

// VerifyEvents recomputes the chains over [from, to] and reports the
// first break: the global chain up to where chain_global_end says it
// ends, and each run's chain after. A payload over MaxStoredValue is a
// break, reported by its size without being read, so a hostile row cannot
// make the verifier hold it.
func (s *Store) VerifyEvents(ctx context.Context, from, to int64) (agentrt.VerifyReport, error) {
	headSeq, _, err := s.ChainHead(ctx)
	if err != nil {
		return agentrt.VerifyReport{}, err
	}
	from = max(from, 1)
	if to < 1 || to > headSeq {
		to = headSeq
	}
	v := &verifier{s: s, rep: agentrt.VerifyReport{From: from, To: to}, salts: &saltCache{s: s}, erased: map[string]int64{}}
	if headSeq == 0 || from > to {
		return v.rep, nil
	}
	endSeq, endHash, err := s.globalEnd(ctx)
	if err != nil {
		return v.rep, err
	}
	if from <= endSeq {
		if err := v.global(ctx, from, min(to, endSeq), endSeq, endHash); err != nil || v.rep.Break != nil {
			return v.report(), err
		}
	}
	if to > endSeq {
		if err := v.perRun(ctx, max(from, endSeq+1), to); err != nil || v.rep.Break != nil {
			return v.report(), err
		}
	}
	rep := v.report()
	if v.lastSeq < to && !s.d.SeqFromDatabase {
		rep.Break = &agentrt.ChainBreak{Seq: v.lastSeq + 1, Detail: fmt.Sprintf("events %d to %d are missing", v.lastSeq+1, to)}
		return rep, nil
	}
	return s.verifyErasures(ctx, rep, v.erased)
}

func (v *verifier) report() agentrt.VerifyReport {
	if v.rep.Checked > 0 {
		v.rep.Last, v.rep.Hash = v.lastSeq, string(v.last)
	}
	return v.rep
}

// fail records a break at the event r.
func (v *verifier) fail(r *scanned, detail, expected string, found []byte) {
	v.rep.Break = &agentrt.ChainBreak{Seq: r.seq, Expected: expected, Found: truncate(string(found), 128), Detail: detail}
}

// intact records r as checked.
func (v *verifier) intact(r *scanned) {
	v.last = append(v.lastBuf[:0], r.stored...)
	v.lastSeq = r.seq
	v.rep.Checked++
}

// global checks the global chain over [from, to]: each event's hash
// covers the one before it by seq, seqs have no gap, and where to is
// the chain's end (endSeq), the last event is the one recorded there.
func (v *verifier) global(ctx context.Context, from, to, endSeq int64, endHash string) error {
	var prevBuf [64]byte
	prev := prevBuf[:0]
	if from > 1 {
		// Anchor on the stored hash of the event before the range.
		var h string
		err := v.s.rdb.QueryRowContext(ctx, v.s.d.Rebind("SELECT seq, substr(hash, 1, 128) FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1"), from).Scan(&v.lastSeq, &h)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		prev = append(prev, h...)
	}
	var want [64]byte
	err := v.s.walk(ctx, from, to, func(r *scanned) (bool, error) {
		switch {
		case v.lastSeq == 0 && r.seq != 1:
			v.fail(r, fmt.Sprintf("the chain starts at event %d, not 1: events before it are missing", r.seq), "", nil)
		case v.lastSeq != 0 && r.seq != v.lastSeq+1:
			v.fail(r, fmt.Sprintf("an event is missing before event %d (previous is %d)", r.seq, v.lastSeq), "", nil)
		case r.runSeq != 0:
			v.fail(r, "an event of the global chain has a place in a run's chain", "", nil)
		}
		if v.rep.Break != nil {
			return false, nil
		}
		digest, ok, err := v.digest(ctx, r)
		if !ok || err != nil {
			return false, err
		}
		eventHashInto(&want, prev, r.seq, []byte(r.runID), []byte(r.stepID), []byte(r.at), []byte(r.typ), &digest)
		if !bytes.Equal(want[:], r.stored) {
			v.fail(r, "stored hash does not match the event's fields and the hash before it", string(want[:]), r.stored)
			return false, nil
		}
		prev = append(prevBuf[:0], r.stored...)
		v.intact(r)
		return true, nil
	})
	if err != nil || v.rep.Break != nil || to != endSeq {
		return err
	}
	if v.lastSeq != endSeq || string(v.last) != endHash {
		v.rep.Break = &agentrt.ChainBreak{Seq: v.lastSeq + 1, Expected: endHash, Found: truncate(string(v.last), 128),
			Detail: fmt.Sprintf("the global chain ends at event %d, not where its end was recorded (event %d): events were cut or changed", v.lastSeq, endSeq)}
	}
	return nil
}

// perRun checks the per-run chains over [from, to]: each event's hash
// covers the previous event of its run, its place in the run follows that
// one's, and, where the store assigns seqs, seqs have no gap.
func (v *verifier) perRun(ctx context.Context, from, to int64) error {
	v.runs = map[string]*checkedHead{}
	gapless := !v.s.d.SeqFromDatabase
	next := from
	var want [64]byte
	return v.s.walk(ctx, from, to, func(r *scanned) (bool, error) {
		if gapless && r.seq != next {
			v.fail(r, fmt.Sprintf("an event is missing before event %d (previous is %d)", r.seq, next-1), "", nil)
			return false, nil
		}
		next = r.seq + 1
		digest, ok, err := v.digest(ctx, r)
		if !ok || err != nil {
			return false, err
		}
		prev, ok, err := v.runPrev(ctx, r)
		if !ok || err != nil {
			return false, err
		}
		eventHashInto(&want, prev, r.runSeq, []byte(r.runID), []byte(r.stepID), []byte(r.at), []byte(r.typ), &digest)
		if !bytes.Equal(want[:], r.stored) {
			v.fail(r, "stored hash does not match the event's fields and the hash of its run's event before it", string(want[:]), r.stored)
			return false, nil
		}
		h := v.runs[string(r.runID)]
		if h == nil {
			if len(v.runs) >= maxVerifiedRuns {
				clear(v.runs)
			}
			h = &checkedHead{}
			v.runs[string(r.runID)] = h
		}
		h.n, h.size = r.runSeq, copy(h.hash[:], r.stored)
		v.intact(r)
		return true, nil
	})
}

// runPrev returns the hash r chains onto: its run's event at the place
// before r's, checked already or looked up (it must come before r).
func (v *verifier) runPrev(ctx context.Context, r *scanned) ([]byte, bool, error) {
	run := string(r.runID)
	if r.runSeq < 1 {
		v.fail(r, fmt.Sprintf("event %d, written after the per-run chains began, has no place in its run's chain", r.seq), "", nil)
		return nil, false, nil
	}
	if h := v.runs[string(r.runID)]; h != nil {
		if r.runSeq != h.n+1 {
			v.fail(r, fmt.Sprintf("event %d holds place %d of run %s, but the run's event before it holds place %d: events of the run were deleted or reordered",
				r.seq, r.runSeq, truncate(run, 128), h.n), strconv.FormatInt(h.n+1, 10), []byte(strconv.FormatInt(r.runSeq, 10)))
			return nil, false, nil
		}
		return h.hash[:h.size], true, nil
	}
	if r.runSeq == 1 {
		return nil, true, nil
	}
	var seq int64
	var h string
	err := v.s.rdb.QueryRowContext(ctx, v.s.d.Rebind("SELECT seq, substr(hash, 1, 128) FROM events WHERE run_id = ? AND run_seq = ?"), run, r.runSeq-1).Scan(&seq, &h)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		v.fail(r, fmt.Sprintf("event %d holds place %d of run %s, but no event holds place %d: an event of the run was deleted", r.seq, r.runSeq, truncate(run, 128), r.runSeq-1), "", nil)
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case seq >= r.seq:
		v.fail(r, fmt.Sprintf("event %d holds place %d of run %s, but place %d is event %d, after it: events of the run were reordered", r.seq, r.runSeq, truncate(run, 128), r.runSeq-1, seq), "", nil)
		return nil, false, nil
	}
	return []byte(h), true, nil
}

// digest checks r's sizes and returns the payload digest its hash covers:
// the kept one of an erased payload, else the payload's, keyed by its
// run's salt. ok is false when r is a break.
func (v *verifier) digest(ctx context.Context, r *scanned) (d [32]byte, ok bool, err error) {
	if r.big {
		v.fail(r, "an event field is longer than any the runtime writes", "", nil)
		return d, false, nil
	}
	if r.lPayload > agentrt.MaxStoredValue {
		v.fail(r, fmt.Sprintf("the payload is %d bytes, larger than any event agentrt writes", r.lPayload), "", nil)
		return d, false, nil
	}
	return v.digestOf(ctx, r)
}

// digestOf is digest once r's sizes are checked.
func (v *verifier) digestOf(ctx context.Context, r *scanned) (d [32]byte, ok bool, err error) {
	if string(r.typ) == string(agentrt.EventRunErased) {
		// A run.erased is checked even where nothing was erased.
		v.erased[string(r.runID)] += 0
	}
	if len(r.erasedDigest) > 0 {
		// Erased: the chain hashed the digest kept beside the payload;
		// verifyErasures proves what remains.
		if n, err := hex.Decode(d[:], r.erasedDigest); err != nil || n != 32 {
			v.fail(r, "the kept digest of an erased payload is not a SHA-256 digest", "", r.erasedDigest)
			return d, false, nil
		}
		v.erased[string(r.runID)]++
		v.rep.Erased++
		return d, true, nil
	}
	key, err := v.salts.of(ctx, string(r.runID))
	if err != nil {
		return d, false, err
	}
	return key.payloadDigest(r.payload), true, nil
}

// walk reads the events [from, to] in seq order, a page at a time, and
// hands each to fn until fn says stop or fails.
func (s *Store) walk(ctx context.Context, from, to int64, fn func(*scanned) (bool, error)) error {
	// Fields longer than the runtime ever writes are not read: the row is
	// reported as broken. octet_length reads a value's size without loading
	// it, so such a field comes back NULL. Every other payload is read once
	// and hashed, so verifying is linear in the payload's size.
	q := s.d.Rebind(`SELECT seq,
		CASE WHEN octet_length(run_id) <= 4096 THEN run_id END, CASE WHEN octet_length(step_id) <= 4096 THEN step_id END,
		CASE WHEN octet_length(at) <= 4096 THEN at END, CASE WHEN octet_length(type) <= 4096 THEN type END,
		CASE WHEN octet_length(payload_json) <= ` + strconv.Itoa(agentrt.MaxStoredValue) + ` THEN payload_json END, octet_length(payload_json), substr(hash, 1, 128),
		octet_length(run_id) > 4096 OR octet_length(step_id) > 4096 OR octet_length(at) > 4096 OR octet_length(type) > 4096,
		CASE WHEN octet_length(payload_digest) <= 128 THEN payload_digest END, run_seq
		FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`)
	var r scanned
	for cur := from; cur <= to; {
		rows, err := s.rdb.QueryContext(ctx, q, cur, to, verifyPage)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&r.seq, &r.runID, &r.stepID, &r.at, &r.typ, &r.payload, &r.lPayload, &r.stored, &r.big, &r.erasedDigest, &r.runSeq); err != nil {
				rows.Close()
				return err
			}
			more, err := fn(&r)
			if !more || err != nil {
				rows.Close()
				return err
			}
			cur = r.seq + 1
		}
		err = rows.Err()
		rows.Close()
		if err != nil || n == 0 {
			return err
		}
	}
	return nil
}
