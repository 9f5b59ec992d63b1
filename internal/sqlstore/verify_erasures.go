package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	agentrt "github.com/agentrt/agentrt"
)

// erasureRead is what verify reads of one run with erased payloads or a
// run.erased event: the erased payloads, what each run.erased records,
// and a break found on the way.
type erasureRead struct {
	pending  []keptPayload
	recorded map[int64]agentrt.ErasedEvent
	at       map[int64]int64 // erased seq -> seq of the run.erased recording it
	brk      *agentrt.ChainBreak
}

// keptPayload is an erased event as the table holds it.
type keptPayload struct {
	seq    int64
	digest string
	sum    [32]byte
}

// verifyErasures checks, for each run with erased payloads or a run.erased
// event, that a run.erased event after them records each one: the digest
// the chain holds and the SHA-256 of what was left. An erasure with no
// run.erased, a payload changed after its erasure, and a run.erased of a
// run that had not ended (no run.finished before it, or an approval still
// pending in the chain) are breaks.
func (s *Store) verifyErasures(ctx context.Context, rep agentrt.VerifyReport, erased map[string]int64) (agentrt.VerifyReport, error) {
	ids := make([]string, 0, len(erased))
	for id := range erased {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r, err := s.readErasure(ctx, id)
		if err != nil {
			return rep, err
		}
		if r.brk != nil {
			rep.Break = r.brk
			return rep, nil
		}
		for _, k := range r.pending {
			e, ok := r.recorded[k.seq]
			detail := ""
			switch {
			case !ok:
				detail = fmt.Sprintf("the payload of event %d (run %s) was erased, but no run.erased event records it", k.seq, id)
			case r.at[k.seq] < k.seq:
				detail = fmt.Sprintf("event %d's erasure is recorded before it", k.seq)
			case e.Digest != k.digest:
				detail = fmt.Sprintf("event %d's kept digest is not the one its run.erased event recorded", k.seq)
			case e.Kept != hex.EncodeToString(k.sum[:]):
				detail = fmt.Sprintf("event %d's payload was changed after its erasure", k.seq)
			}
			if detail != "" {
				rep.Break = &agentrt.ChainBreak{Seq: k.seq, Detail: detail}
				return rep, nil
			}
		}
		rep.ErasedRunCount++
		if len(rep.ErasedRuns) < agentrt.MaxReportedRuns {
			rep.ErasedRuns = append(rep.ErasedRuns, id)
		}
	}
	return rep, nil
}

// readErasure reads, in one pass in chain order, a run's erased events,
// its run.erased events, and the events that say whether the run had ended
// when it was erased: run.finished and its approvals' requests and
// decisions.
func (s *Store) readErasure(ctx context.Context, id string) (erasureRead, error) {
	r := erasureRead{recorded: map[int64]agentrt.ErasedEvent{}, at: map[int64]int64{}}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(`SELECT seq, type, payload_json, payload_digest FROM events
		WHERE run_id = ? AND (payload_digest != '' OR type IN (?, ?, ?, ?)) ORDER BY seq`), id, string(agentrt.EventRunErased),
		string(agentrt.EventRunFinished), string(agentrt.EventApprovalRequest), string(agentrt.EventApprovalDecided))
	if err != nil {
		return r, err
	}
	defer rows.Close()
	finished := false
	open := map[string]bool{} // approvals requested and not decided
	for rows.Next() {
		var seq int64
		var typ, pl, dg string
		if err := rows.Scan(&seq, &typ, &pl, &dg); err != nil {
			return r, err
		}
		if dg != "" {
			r.pending = append(r.pending, keptPayload{seq, dg, sha256.Sum256([]byte(pl))})
		}
		ev := agentrt.Event{Seq: seq, RunID: id, Type: agentrt.EventType(typ), Payload: json.RawMessage(pl)}
		switch ev.Type {
		case agentrt.EventRunFinished:
			finished = true
		case agentrt.EventApprovalRequest:
			if p, err := agentrt.PayloadAs[agentrt.ApprovalRequestedPayload](ev); err == nil {
				open[p.ApprovalID] = true
			}
		case agentrt.EventApprovalDecided:
			if p, err := agentrt.PayloadAs[agentrt.ApprovalDecidedPayload](ev); err == nil {
				delete(open, p.ApprovalID)
			}
		case agentrt.EventRunErased:
			if dg != "" {
				continue
			}
			if r.brk = erasedTooSoon(seq, id, finished, open); r.brk != nil {
				return r, nil
			}
			p, err := agentrt.PayloadAs[agentrt.RunErasedPayload](ev)
			if err != nil {
				r.brk = &agentrt.ChainBreak{Seq: seq, Detail: "the run.erased event will not decode: " + err.Error()}
				return r, nil
			}
			for _, e := range p.Events {
				r.recorded[e.Seq], r.at[e.Seq] = e, seq
			}
		}
	}
	return r, rows.Err()
}

// erasedTooSoon is the break for a run.erased at seq of a run that had not
// ended: the runtime erases only a run with a run.finished and no approval
// pending, so any other erasure was written by someone else.
func erasedTooSoon(seq int64, id string, finished bool, open map[string]bool) *agentrt.ChainBreak {
	if !finished {
		return &agentrt.ChainBreak{Seq: seq, Detail: fmt.Sprintf("run %s is recorded as erased, but no run.finished event before it says the run had ended", id)}
	}
	if len(open) > 0 {
		ids := make([]string, 0, len(open))
		for a := range open {
			ids = append(ids, a)
		}
		slices.Sort(ids)
		return &agentrt.ChainBreak{Seq: seq, Detail: fmt.Sprintf("run %s is recorded as erased while its approval %s was still pending", id, ids[0])}
	}
	return nil
}
