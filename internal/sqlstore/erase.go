package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// erasePage is how many of a run's events erasure reads at once, so a long
// run's payloads are never all in memory.
const erasePage = 128

// EraseRuns erases each run's content in one transaction (see
// agentrt.Eraser): every event's payload is replaced by its metadata with
// the chained digest kept beside it, the steps', approvals', model calls'
// and run's content columns are cleared, the run's salt is deleted, and a
// run.erased event lists what the chain held.
func (s *Store) EraseRuns(ctx context.Context, r agentrt.EraseRequest) ([]agentrt.ErasedRun, []agentrt.Event, error) {
	var out []agentrt.ErasedRun
	evs, err := s.Update(ctx, func(atx agentrt.Tx) error {
		t := unwrap(atx)
		out = out[:0]
		for _, id := range r.RunIDs {
			er, err := t.eraseRun(id, r)
			if err != nil {
				return err
			}
			out = append(out, er)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, evs, nil
}

func unwrap(atx agentrt.Tx) *tx {
	switch t := atx.(type) {
	case *tx:
		return t
	case clockTx:
		return t.tx
	}
	panic(fmt.Sprintf("sqlstore: a %T is not this store's transaction", atx))
}

func (t *tx) eraseRun(id string, r agentrt.EraseRequest) (agentrt.ErasedRun, error) {
	run, err := t.RunGet(id)
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	if !run.Status.Terminal() {
		return agentrt.ErasedRun{}, fmt.Errorf("%w: run %s is %s; only a run that has ended is erased", agentrt.ErrRunState, id, run.Status)
	}
	var erasedAt string
	var pending int
	if err := t.queryRow(`SELECT erased_at, (SELECT COUNT(*) FROM approvals WHERE run_id = runs.id AND status = ?) FROM runs WHERE id = ?`,
		string(agentrt.ApprovalPending), id).Scan(&erasedAt, &pending); err != nil {
		return agentrt.ErasedRun{}, err
	}
	if erasedAt != "" {
		return agentrt.ErasedRun{}, fmt.Errorf("%w: run %s was erased at %s", agentrt.ErrRunState, id, erasedAt)
	}
	if pending > 0 {
		return agentrt.ErasedRun{}, fmt.Errorf("%w: run %s has %d pending approvals", agentrt.ErrRunState, id, pending)
	}
	key, err := t.saltFor(id, "")
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	crashPoint("erase-begun")
	rows := map[string]int{}
	var list []agentrt.ErasedEvent
	type evRow struct {
		seq           int64
		step, typ, pl string
	}
	for after := int64(0); ; {
		q, err := t.query(`SELECT seq, step_id, type, payload_json FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, after, erasePage)
		if err != nil {
			return agentrt.ErasedRun{}, err
		}
		var page []evRow
		for q.Next() {
			var e evRow
			if err := q.Scan(&e.seq, &e.step, &e.typ, &e.pl); err != nil {
				q.Close()
				return agentrt.ErasedRun{}, err
			}
			page = append(page, e)
		}
		err = q.Err()
		q.Close()
		if err != nil {
			return agentrt.ErasedRun{}, err
		}
		args := make([]any, 0, 3*len(page))
		for _, e := range page {
			d := key.payloadDigest([]byte(e.pl))
			kept, err := agentrt.RedactPayload(agentrt.Event{Seq: e.seq, RunID: id, StepID: e.step, Type: agentrt.EventType(e.typ), Payload: json.RawMessage(e.pl)})
			if err != nil {
				return agentrt.ErasedRun{}, err
			}
			k := sha256.Sum256(kept)
			dg := hex.EncodeToString(d[:])
			args = append(args, e.seq, string(kept), dg)
			list = append(list, agentrt.ErasedEvent{Seq: e.seq, Digest: dg, Kept: hex.EncodeToString(k[:])})
		}
		if len(page) > 0 {
			// One statement for the page: a statement per event would
			// be most of an erasure's time.
			if _, err := t.exec(`UPDATE events SET payload_json = v.p, payload_digest = v.d FROM (`+valuesRows(len(page))+`) AS v WHERE events.seq = v.k`, args...); err != nil {
				return agentrt.ErasedRun{}, err
			}
		}
		rows["events"] += len(page)
		if len(page) < erasePage {
			break
		}
		after = page[len(page)-1].seq
	}
	n, err := t.eraseSteps(id)
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	rows["steps"] = n
	if n, err = t.eraseApprovals(id); err != nil {
		return agentrt.ErasedRun{}, err
	}
	rows["approvals"] = n
	res, err := t.exec(`UPDATE model_calls SET error = '' WHERE run_id = ?`, id)
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	mc, _ := res.RowsAffected()
	rows["model_calls"] = int(mc)
	res, err = t.exec(`UPDATE runs SET goal = '', reason_detail = '', result_json = '', erased_at = ? WHERE id = ? AND erased_at = ''`, t.timeText(r.At), id)
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return agentrt.ErasedRun{}, fmt.Errorf("%w: run %s changed while it was erased", agentrt.ErrRunState, id)
	}
	rows["runs"] = 1
	if _, err := t.exec(`DELETE FROM run_salts WHERE run_id = ?`, id); err != nil {
		return agentrt.ErasedRun{}, err
	}
	t.remember(id, runKey{erased: true})
	t.published = append(t.published, publishedKey{runID: id})
	crashPoint("erase-cleared")
	payload, err := json.Marshal(agentrt.RunErasedPayload{By: r.By, Reason: r.Reason, Events: list, Rows: rows})
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	ev, err := t.EventAppend(agentrt.Event{RunID: id, At: r.At, Type: agentrt.EventRunErased, Payload: payload})
	if err != nil {
		return agentrt.ErasedRun{}, err
	}
	return agentrt.ErasedRun{RunID: id, Events: len(list), Rows: rows, Seq: ev.Seq}, nil
}

// valuesRows is a select of n rows (k BIGINT, p TEXT, d TEXT), for an
// update of many rows by key in one statement on SQLite and Postgres.
func valuesRows(n int) string {
	return rowsOf(n, "SELECT CAST(? AS BIGINT) AS k, CAST(? AS TEXT) AS p, CAST(? AS TEXT) AS d", "SELECT ?, ?, ?")
}

// textRows is a select of n rows (k, a, b, c), all TEXT.
func textRows(n int) string {
	return rowsOf(n, "SELECT CAST(? AS TEXT) AS k, CAST(? AS TEXT) AS a, CAST(? AS TEXT) AS b, CAST(? AS TEXT) AS c", "SELECT ?, ?, ?, ?")
}

func rowsOf(n int, first, rest string) string {
	var b strings.Builder
	b.WriteString(first)
	for i := 1; i < n; i++ {
		b.WriteString(" UNION ALL ")
		b.WriteString(rest)
	}
	return b.String()
}

// redactJSON decodes a stored JSON column as T and encodes it again without
// its content; "" stays "", and a value that will not decode is removed.
func redactJSON[T any](col string) string {
	if col == "" {
		return ""
	}
	var v T
	if json.Unmarshal([]byte(col), &v) != nil {
		return ""
	}
	b, err := json.Marshal(agentrt.Redacted(v))
	if err != nil {
		return ""
	}
	return string(b)
}

func (t *tx) eraseSteps(runID string) (int, error) {
	q, err := t.query(`SELECT id, decision_json, policy_json, observation_json FROM steps WHERE run_id = ? ORDER BY idx`, runID)
	if err != nil {
		return 0, err
	}
	type row struct{ id, dec, pol, obs string }
	var all []row
	count := 0
	for q.Next() {
		var r row
		if err := q.Scan(&r.id, &r.dec, &r.pol, &r.obs); err != nil {
			q.Close()
			return 0, err
		}
		// Only the redacted forms are kept, which are small.
		r.dec = redactJSON[agentrt.Decision](r.dec)
		r.pol = redactJSON[agentrt.PolicyDecision](r.pol)
		r.obs = redactJSON[agentrt.Observation](r.obs)
		all = append(all, r)
	}
	err = q.Err()
	q.Close()
	if err != nil {
		return 0, err
	}
	for len(all) > 0 {
		n := min(len(all), erasePage)
		args := make([]any, 0, 4*n)
		for _, r := range all[:n] {
			args = append(args, r.id, r.dec, r.pol, r.obs)
		}
		if _, err := t.exec(`UPDATE steps SET decision_json = v.a, policy_json = v.b, observation_json = v.c,
			decision_fields = NULL, policy_fields = NULL, observation_fields = NULL, request_key = '' FROM (`+textRows(n)+`) AS v WHERE steps.id = v.k`, args...); err != nil {
			return 0, err
		}
		all = all[n:]
		count += n
	}
	return count, nil
}

func (t *tx) eraseApprovals(runID string) (int, error) {
	q, err := t.query(`SELECT id, request_json FROM approvals WHERE run_id = ?`, runID)
	if err != nil {
		return 0, err
	}
	type row struct{ id, req string }
	var all []row
	for q.Next() {
		var r row
		if err := q.Scan(&r.id, &r.req); err != nil {
			q.Close()
			return 0, err
		}
		r.req = redactJSON[agentrt.ToolRequest](r.req)
		all = append(all, r)
	}
	err = q.Err()
	q.Close()
	if err != nil {
		return 0, err
	}
	for _, r := range all {
		if _, err := t.exec(`UPDATE approvals SET capability_json = '{}', presentation_json = '{}', request_json = ?, hash = '',
			note = '', signature_json = '' WHERE id = ?`, r.req, r.id); err != nil {
			return 0, err
		}
	}
	return len(all), nil
}

// ErasableRuns lists terminal, unerased runs finished before q's cut,
// oldest first.
func (s *Store) ErasableRuns(ctx context.Context, q agentrt.ErasableQuery) ([]agentrt.Run, error) {
	limit := q.Limit
	if limit <= 0 || limit > agentrt.MaxEraseBatch {
		limit = agentrt.MaxEraseBatch
	}
	// Stored times are RFC 3339 with a varying fraction, which sorts by
	// text only to the second: the query cuts at the next whole second
	// and the exact cut is applied here.
	cut := q.FinishedBefore.UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339)
	where := `finished_at != '' AND erased_at = '' AND finished_at < ?`
	args := []any{cut}
	if len(q.Statuses) > 0 {
		where += " AND status IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(q.Statuses)), ", ") + ")"
		for _, st := range q.Statuses {
			args = append(args, string(st))
		}
	}
	var out []agentrt.Run
	for offset := max(q.Offset, 0); len(out) < limit; {
		rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(selectRun+" WHERE "+where+" ORDER BY finished_at, id LIMIT ? OFFSET ?"), append(args, limit, offset)...)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
			r, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			if r.Status.Terminal() && r.FinishedAt.Before(q.FinishedBefore) && len(out) < limit {
				out = append(out, r)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
		if n < limit {
			break
		}
		offset += n
	}
	return out, nil
}

// verifyErasures checks, for each run with erased payloads, that a
// run.erased event after them records each one: the digest the chain holds
// and the SHA-256 of what was left. An erasure with no run.erased, or a
// payload changed after its erasure, is a break.
func (s *Store) verifyErasures(ctx context.Context, rep agentrt.VerifyReport, erased map[string]int64) (agentrt.VerifyReport, error) {
	ids := make([]string, 0, len(erased))
	for id := range erased {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	type kept struct {
		seq    int64
		digest string
		sum    [32]byte
	}
	for _, id := range ids {
		// One read of the run's erased events and its run.erased, in
		// chain order: the run.erased comes after what it records.
		var pending []kept
		recorded := map[int64]agentrt.ErasedEvent{}
		at := map[int64]int64{} // erased seq -> seq of the run.erased recording it
		rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(`SELECT seq, type, payload_json, payload_digest FROM events
			WHERE run_id = ? AND (payload_digest != '' OR type = ?) ORDER BY seq`), id, string(agentrt.EventRunErased))
		if err != nil {
			return rep, err
		}
		for rows.Next() {
			var seq int64
			var typ, pl, dg string
			if err := rows.Scan(&seq, &typ, &pl, &dg); err != nil {
				rows.Close()
				return rep, err
			}
			if dg != "" {
				pending = append(pending, kept{seq, dg, sha256.Sum256([]byte(pl))})
			}
			if typ != string(agentrt.EventRunErased) || dg != "" {
				continue
			}
			p, err := agentrt.PayloadAs[agentrt.RunErasedPayload](agentrt.Event{Seq: seq, Type: agentrt.EventRunErased, Payload: json.RawMessage(pl)})
			if err != nil {
				rows.Close()
				rep.Break = &agentrt.ChainBreak{Seq: seq, Detail: "the run.erased event will not decode: " + err.Error()}
				return rep, nil
			}
			for _, e := range p.Events {
				recorded[e.Seq], at[e.Seq] = e, seq
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return rep, err
		}
		for _, k := range pending {
			e, ok := recorded[k.seq]
			detail := ""
			switch {
			case !ok:
				detail = fmt.Sprintf("the payload of event %d (run %s) was erased, but no run.erased event records it", k.seq, id)
			case at[k.seq] < k.seq:
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

// CrashHook, when set by a test, is called at each point of an erasure
// inside its transaction ("erase-begun", "erase-cleared"); a test kills
// its process there to show that a crash leaves the run whole.
var CrashHook func(point string)

func crashPoint(p string) {
	if CrashHook != nil {
		CrashHook(p)
	}
}

// OnWriter runs fn on the writer's connection outside any transaction,
// with no Update running: for statements a transaction cannot hold, as
// SQLite's WAL checkpoint.
func (s *Store) OnWriter(ctx context.Context, fn func(c *sql.Conn) error) error {
	if s.db == nil || s.readOnly {
		return ErrReadOnly
	}
	s.mu.Lock()
	for s.writing {
		s.cond.Wait()
	}
	s.writing = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.writing = false
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	if s.wconn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("agentrt: writer connection: %w", err)
		}
		s.wconn = c
	}
	return fn(s.wconn)
}

var _ = errors.Is
