package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	// Where the database numbers events, a seq is known once committed.
	for i := range out {
		for _, e := range evs {
			if e.RunID == out[i].RunID && e.Type == agentrt.EventRunErased {
				out[i].Seq = e.Seq
			}
		}
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
	if err := t.eraseOutstanding(id, r.At); err != nil {
		return agentrt.ErasedRun{}, err
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
	// A vote's note and signature confirm a guess of the arguments, as a
	// decision's do.
	if _, err := t.exec(`UPDATE approval_votes SET note = '', signature_json = '' WHERE run_id = ?`, id); err != nil {
		return agentrt.ErasedRun{}, err
	}
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

// lateOutcomeGrace is how long after a tool's timeout erasure still waits
// for its outcome: the time to record it, and skew between clocks.
const lateOutcomeGrace = time.Minute

// eraseOutstanding refuses a run that something may still write to: a
// step whose tool started, has no outcome yet and may still report one (a
// cancelled run's tool still running, whose late step.tool_finished
// erasure would refuse), or a model call whose budget reservation is not
// settled (its reconciliation would be refused, holding the budget's
// capacity for ever).
func (t *tx) eraseOutstanding(id string, at time.Time) error {
	if err := t.eraseToolOutstanding(id, at); err != nil {
		return err
	}
	var call, status string
	err := t.queryRow(`SELECT call_id, status FROM budget_reservations WHERE run_id = ? AND status != ? ORDER BY created_at, call_id LIMIT 1`,
		id, string(agentrt.ReservationSettled)).Scan(&call, &status)
	switch {
	case err == nil:
		return fmt.Errorf("%w: run %s's model call %s holds a %s budget reservation; reconcile it (agentrt budgets reconcile) before erasing the run",
			agentrt.ErrRunState, id, call, status)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	return nil
}

// eraseToolOutstanding refuses a run with a tool call that started, has
// no step.tool_finished or step.interrupted after it, and is within its
// timeout (plus lateOutcomeGrace) at the erasure's time. Past that, a tool
// that kept to its timeout has returned and its outcome is recorded, or
// the process running it is gone and no outcome will come: the run is
// erased rather than kept for ever.
func (t *tx) eraseToolOutstanding(id string, at time.Time) error {
	rows, err := t.query(`SELECT s.step_id, s.at, s.payload_json, COALESCE(ts.spec_json, '') FROM events s
		LEFT JOIN steps st ON st.id = s.step_id LEFT JOIN tool_specs ts ON ts.hash = st.spec_hash
		WHERE s.run_id = ? AND s.type = ? AND NOT EXISTS (
		SELECT 1 FROM events f WHERE f.run_id = s.run_id AND f.step_id = s.step_id AND f.seq > s.seq AND f.type IN (?, ?))
		ORDER BY s.seq`, id, string(agentrt.EventToolStarted), string(agentrt.EventToolFinished), string(agentrt.EventStepInterrupted))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var step, started, payload, spec string
		if err := rows.Scan(&step, &started, &payload, &spec); err != nil {
			return err
		}
		var p agentrt.ToolStartedPayload
		var ts agentrt.ToolSpec
		_ = json.Unmarshal([]byte(payload), &p)
		_ = json.Unmarshal([]byte(spec), &ts)
		begun, err := parseTime(started)
		if err != nil {
			return err
		}
		// A spec that will not read gives no timeout: the grace alone.
		until := begun.Add(max(ts.Timeout, 0) + lateOutcomeGrace)
		if at.Before(until) {
			return fmt.Errorf("%w: run %s's step %s started tool %q at %s and its outcome is not recorded yet; erase the run once the tool finishes (at the latest after %s)",
				agentrt.ErrRunState, id, step, p.Tool, begun.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
		}
	}
	return rows.Err()
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
