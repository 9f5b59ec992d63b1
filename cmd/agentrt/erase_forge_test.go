package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// A database writer forges the erasure of a run that never ended: it
// replaces the waiting run's payloads by their redacted forms, keeps the
// digests the chain hashed, deletes the salt and appends a run.erased with
// a correct chain hash (in the second case after a forged run.finished, the
// run's approval still pending in the chain). The real agentrt binary's
// verify, and verify against a head kept before the forgery, fail naming
// the run.erased event.
func TestVerify_ForgedErasureOfARunThatNeverEndedIsABreak(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	for _, tc := range []struct {
		name, finish, want string
	}{
		{"no run.finished", "", "no run.finished event before it"},
		{"approval pending", "finished", "still pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.db")
			st, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			kit.PausedRun(t, kit.NewEnv(t, st), `{"path":"/a"}`)
			st.Close()
			out, errOut, code := testrig.Exec(t, bin, nil, "-db", path, "-json", "verify")
			var rep struct {
				Head struct {
					Seq  int64  `json:"seq"`
					Hash string `json:"hash"`
				} `json:"head"`
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); code != 0 || err != nil || rep.Head.Seq == 0 {
				t.Fatalf("verify before the forgery = %d %s%s (%v)", code, out, errOut, err)
			}
			kept := fmt.Sprintf("%d:%s", rep.Head.Seq, rep.Head.Hash)
			seq := forgeErasure(t, path, "run-1", tc.finish != "")
			for _, args := range [][]string{{"verify"}, {"verify", "-head", kept}} {
				out, errOut, code := testrig.Exec(t, bin, nil, append([]string{"-db", path}, args...)...)
				if code == 0 || !strings.Contains(out+errOut, fmt.Sprintf("broken at seq %d", seq)) || !strings.Contains(out+errOut, tc.want) {
					t.Fatalf("agentrt %s = %d\n%s%s\nwant a break at the forged run.erased (seq %d) saying %q", strings.Join(args, " "), code, out, errOut, seq, tc.want)
				}
			}
		})
	}
}

// forgeErasure erases runID's content as a database writer would, without
// the runtime: each payload replaced by its redacted form with the digest
// the chain hashed kept beside it, the salt deleted, and (with finish a
// run.finished and then) a run.erased appended with a correct chain hash.
// It returns the run.erased event's seq.
func forgeErasure(t *testing.T, path, runID string, finish bool) int64 {
	t.Helper()
	var erasedSeq int64
	err := testrig.FillDB(path, func(ctx context.Context, tx *sql.Tx) error {
		var saltHex string
		if err := tx.QueryRowContext(ctx, `SELECT salt FROM run_salts WHERE run_id = ?`, runID).Scan(&saltHex); err != nil {
			return err
		}
		salt, err := hex.DecodeString(saltHex)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT seq, step_id, type, payload_json FROM events WHERE run_id = ? ORDER BY seq`, runID)
		if err != nil {
			return err
		}
		var evs []agentrt.Event
		for rows.Next() {
			var e agentrt.Event
			var pl string
			if err := rows.Scan(&e.Seq, &e.StepID, &e.Type, &pl); err != nil {
				rows.Close()
				return err
			}
			e.RunID, e.Payload = runID, json.RawMessage(pl)
			evs = append(evs, e)
		}
		rows.Close()
		var list []agentrt.ErasedEvent
		for _, e := range evs {
			redacted, err := agentrt.RedactPayload(e)
			if err != nil {
				return err
			}
			d := sha256.Sum256(append(append([]byte(nil), salt...), e.Payload...))
			k := sha256.Sum256(redacted)
			if _, err := tx.ExecContext(ctx, `UPDATE events SET payload_json = ?, payload_digest = ? WHERE seq = ?`,
				string(redacted), hex.EncodeToString(d[:]), e.Seq); err != nil {
				return err
			}
			list = append(list, agentrt.ErasedEvent{Seq: e.Seq, Digest: hex.EncodeToString(d[:]), Kept: hex.EncodeToString(k[:])})
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_salts WHERE run_id = ?`, runID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET goal = '', erased_at = ? WHERE id = ?`, time.Now().UTC().Format(time.RFC3339), runID); err != nil {
			return err
		}
		if finish {
			p, _ := json.Marshal(agentrt.RunFinishedPayload{Status: agentrt.RunCancelled, Reason: agentrt.ReasonOperatorCancelled})
			if _, err := appendForged(ctx, tx, runID, agentrt.EventRunFinished, p); err != nil {
				return err
			}
		}
		p, _ := json.Marshal(agentrt.RunErasedPayload{By: "dpo", Reason: "request 7", Events: list, Rows: map[string]int{"events": len(list)}})
		erasedSeq, err = appendForged(ctx, tx, runID, agentrt.EventRunErased, p)
		return err
	})
	if err != nil {
		t.Fatalf("forging the erasure: %v", err)
	}
	return erasedSeq
}

// appendForged appends an event to runID's chain with the hash the runtime
// would give it (docs: seven netstrings, the run's previous event's hash
// and the new event's place in the run, the payload's plain SHA-256 for a
// run with no salt), and the next seq.
func appendForged(ctx context.Context, tx *sql.Tx, runID string, typ agentrt.EventType, payload []byte) (int64, error) {
	var seq, place int64
	var prev string
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT run_seq, hash FROM events WHERE run_id = ? ORDER BY run_seq DESC LIMIT 1`, runID).Scan(&place, &prev); err != nil {
		return 0, err
	}
	seq++
	place++
	at := time.Now().UTC().Format(time.RFC3339Nano)
	d := sha256.Sum256(payload)
	var b []byte
	for _, f := range []string{prev, strconv.FormatInt(place, 10), runID, "", at, string(typ), hex.EncodeToString(d[:])} {
		b = append(b, strconv.Itoa(len(f))+":"+f+","...)
	}
	h := sha256.Sum256(b)
	_, err := tx.ExecContext(ctx, `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash, run_seq) VALUES (?, ?, '', ?, ?, ?, ?, ?)`,
		seq, runID, at, string(typ), string(payload), hex.EncodeToString(h[:]), place)
	return seq, err
}
