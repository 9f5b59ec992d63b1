package agentrt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/storetest"
)

// marker is a value no metadata holds: a customer's address in a tool's
// arguments, its result, the agent's reasons and the model's error.
const marker = "zq7-customer@example.org-zq7"

// contentRun runs "run-1" through a model call that fails with the marker,
// a tool call with the marker in its arguments that waits for an approval
// and, approved, returns it in its result, and a completion whose result
// holds it. The store is closed on return, as a finished process leaves it.
func contentRun(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	st := openAt(t, path)
	defer st.Close()
	send := kit.NewTool("send", agentrt.RemoteMutation, `{"type":"object"}`, func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: json.RawMessage(`{"sent_to":"` + marker + `"}`), Summary: "sent to " + marker}, nil
	})
	m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{}, errors.New("the provider echoed " + marker)
	}}
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			_, _ = in.Model.Generate(ctx, mcReq(20))
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "send", Args: json.RawMessage(`{"to":"` + marker + `"}`), Reason: "mail " + marker}, nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"told":"` + marker + `"}`), Message: "done for " + marker}, nil
	})
	mcfg := agentrt.ModelConfig{Model: m}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{send}, Model: &mcfg}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartWithID(ctx, "run-1", "write to "+marker, agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	a := kit.PendingApproval(t, st, "run-1")
	if err := agentrt.ApproveShown(ctx, st, nil, "run-1", a.ID, a.Hash, "alice", "ok for "+marker); err != nil {
		t.Fatal(err)
	}
	if r, err := d.Resume(ctx, "run-1"); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("Resume = %s, %v", r.Status, err)
	}
}

func agentrtCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// After 'agentrt erase', the marker the run's arguments, results, reasons,
// model error, approval note and goal carried is nowhere in the database,
// its WAL or its shared-memory file, and 'agentrt verify' exits 0 saying
// which payloads were erased.
func TestErase_NoContentBytesRemainInTheFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	contentRun(t, path)
	found := 0
	for _, b := range testrig.DBFilesByName(t, path) {
		found += bytes.Count(b, []byte(marker))
	}
	if found == 0 {
		t.Fatal("the marker is in no file before the erasure: the test would prove nothing")
	}
	code, out, errOut := agentrtCLI(t, "-db", path, "erase", "run-1", "-by", "dpo", "-reason", "art. 17 request")
	if code != 0 {
		t.Fatalf("erase = %d\n%s%s", code, out, errOut)
	}
	for name, b := range testrig.DBFilesByName(t, path) {
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			t.Errorf("%s still holds the marker at byte %d: %q", name, i, b[max(0, i-40):min(len(b), i+len(marker)+40)])
		}
	}
	code, out, errOut = agentrtCLI(t, "-db", path, "verify")
	if code != 0 || !strings.Contains(out, "erased: ") || !strings.Contains(out, "erased run run-1") {
		t.Fatalf("verify = %d\n%s%s", code, out, errOut)
	}
	code, out, _ = agentrtCLI(t, "-db", path, "-json", "verify")
	var rep struct {
		OK         bool     `json:"ok"`
		Erased     int64    `json:"erased"`
		ErasedRuns []string `json:"erased_runs"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); code != 0 || err != nil || !rep.OK || rep.Erased < 10 || len(rep.ErasedRuns) != 1 {
		t.Fatalf("verify -json = %d %s (%v)", code, out, err)
	}
}

// The right guess of an erased argument, hashed every way the record
// hashes content (the exact payload as the chain's digest covers it, the
// canonical arguments, the bare value), matches no digest or hash left in
// the files: the run's salt is erased with the content.
func TestErase_ErasedValueCannotBeConfirmedByGuessing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	contentRun(t, path)
	st := openAt(t, path)
	defer st.Close()
	evs, err := st.ListEvents(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's guesses: every payload that held the value, exactly
	// as it was written (they know the format and guess the value right),
	// the arguments, the result, and the value itself.
	var guesses [][]byte
	for _, ev := range evs {
		if bytes.Contains(ev.Payload, []byte(marker)) {
			guesses = append(guesses, append([]byte(nil), ev.Payload...))
		}
	}
	args := `{"to":"` + marker + `"}`
	guesses = append(guesses, []byte(args), []byte(marker), []byte(`{"sent_to":"`+marker+`"}`))
	var hexes []string
	for _, g := range guesses {
		s := sha256.Sum256(g)
		hexes = append(hexes, hex.EncodeToString(s[:]))
	}
	for _, v := range []string{args, `{"sent_to":"` + marker + `"}`} {
		h, err := canon.Hash(json.RawMessage(v))
		if err != nil {
			t.Fatal(err)
		}
		hexes = append(hexes, h)
	}
	files := func() []byte {
		var all []byte
		for _, b := range testrig.DBFilesByName(t, path) {
			all = append(all, b...)
		}
		return all
	}
	// Before erasure the canonical hash of the result is in the record.
	before := 0
	for _, h := range hexes {
		before += bytes.Count(files(), []byte(h))
	}
	if before == 0 {
		t.Fatal("no guess matched even before the erasure: the test would prove nothing")
	}
	if _, err := agentrt.Erase(ctx, st, "run-1", "dpo", "art. 17"); err != nil {
		t.Fatal(err)
	}
	all := files()
	for _, h := range hexes {
		if bytes.Contains(all, []byte(h)) {
			t.Errorf("the hash %s of a right guess is still in the files", h)
		}
	}
	// Nor does a guess confirm through the chain: the digests the erased
	// events keep are not the plain SHA-256 of the payload guessed.
	rows, err := st.DB().Query(`SELECT seq, payload_digest FROM events WHERE run_id = 'run-1' AND payload_digest != ''`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	kept := map[string]bool{}
	for rows.Next() {
		var seq int64
		var d string
		if err := rows.Scan(&seq, &d); err != nil {
			t.Fatal(err)
		}
		kept[d] = true
	}
	if len(kept) < len(evs) {
		t.Fatalf("%d kept digests for %d events", len(kept), len(evs))
	}
	for _, h := range hexes {
		if kept[h] {
			t.Errorf("a kept digest is the plain hash %s of a guess", h)
		}
	}
	if n := countRows(t, st, `SELECT 1 FROM run_salts WHERE run_id = 'run-1'`); n != 0 {
		t.Errorf("the run's salt survived its erasure")
	}
}

// Erasure is refused, changing nothing, for a run waiting on an approval
// and for one running; an erased run is not erased again.
func TestErase_RefusedForALiveRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	kit.PausedRun(t, e.Env, `{"path":"/r"}`)
	now := e.Clock.Now()
	if _, err := e.store.Update(ctx, func(tx agentrt.Tx) error {
		return tx.RunInsert(agentrt.Run{ID: "running", Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: now, StartedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, e.store)
	for _, id := range []string{"run-1", "running"} {
		if _, err := agentrt.Erase(ctx, e.store, id, "dpo", "why"); !errors.Is(err, agentrt.ErrRunState) {
			t.Fatalf("Erase(%s) = %v, want ErrRunState", id, err)
		}
	}
	if _, err := agentrt.Erase(ctx, e.store, "run-1", "", "why"); err == nil {
		t.Fatal("an erasure by no one was accepted")
	}
	code, _, errOut := agentrtCLI(t, "-db", e.store.Path(), "erase", "run-1", "-by", "dpo", "-reason", "why")
	if code == 0 || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("erase of a waiting run = %d %s", code, errOut)
	}
	requireUnchanged(t, e.store, before, "a refused erasure")
	if _, err := e.Operator().Cancel(ctx, "run-1", "op", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := agentrt.Erase(ctx, e.store, "run-1", "dpo", "why"); err != nil {
		t.Fatalf("Erase of the cancelled run: %v", err)
	}
	if _, err := agentrt.Erase(ctx, e.store, "run-1", "dpo", "again"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a second Erase = %v, want ErrRunState", err)
	}
}

const (
	eraseChildDB    = "AGENTRT_TEST_ERASE_DB"
	eraseChildPoint = "AGENTRT_TEST_ERASE_POINT"
)

// A process erasing a run is killed with SIGKILL at each point of the
// erasure: inside its transaction before anything changed, inside it with
// every row changed, and after the commit before the WAL checkpoint. The
// run is whole (every payload as written, its salt kept, no run.erased)
// or wholly erased, the chain verifies, and a whole run can be erased
// after.
func TestErase_CrashMidwayLeavesTheRunWholeOrErased(t *testing.T) {
	if p := os.Getenv(eraseChildPoint); p != "" {
		eraseChild(t, os.Getenv(eraseChildDB), p)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		point  string
		erased bool
	}{{"erase-begun", false}, {"erase-cleared", false}, {"committed", true}} {
		t.Run(tc.point, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.db")
			contentRun(t, path)
			st := openAt(t, path)
			before, err := st.ListEvents(ctx, "run-1")
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestErase_CrashMidwayLeavesTheRunWholeOrErased$", "-test.count=1")
			cmd.Env = append(os.Environ(), eraseChildDB+"="+path, eraseChildPoint+"="+tc.point)
			kit.StartChild(t, cmd, "at "+tc.point, 60*time.Second, "the child")
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()

			st, err = sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rep, err := st.VerifyEvents(ctx, 0, 0)
			if err != nil || rep.Break != nil {
				t.Fatalf("verify after the kill = %+v, %v", rep, err)
			}
			after, err := st.ListEvents(ctx, "run-1")
			if err != nil {
				t.Fatal(err)
			}
			salts := countRows(t, st, `SELECT 1 FROM run_salts WHERE run_id = 'run-1'`)
			erasedRows := countRows(t, st, `SELECT 1 FROM events WHERE run_id = 'run-1' AND payload_digest != ''`)
			if !tc.erased {
				if len(after) != len(before) || salts != 1 || erasedRows != 0 || rep.Erased != 0 {
					t.Fatalf("killed at %s: %d events (was %d), %d salts, %d erased: not whole", tc.point, len(after), len(before), salts, erasedRows)
				}
				for i := range before {
					if !bytes.Equal(before[i].Payload, after[i].Payload) {
						t.Fatalf("event %d changed: %s", before[i].Seq, after[i].Payload)
					}
				}
				if _, err := agentrt.Erase(ctx, st, "run-1", "dpo", "again"); err != nil {
					t.Fatalf("erasing the whole run after the crash: %v", err)
				}
				return
			}
			if len(after) != len(before)+1 || after[len(after)-1].Type != agentrt.EventRunErased || salts != 0 || erasedRows != len(before) || rep.Erased != int64(len(before)) {
				t.Fatalf("killed after the commit: %d events (was %d), %d salts, %d erased, verify %+v: not wholly erased", len(after), len(before), salts, erasedRows, rep)
			}
			for _, ev := range after {
				if bytes.Contains(ev.Payload, []byte(marker)) {
					t.Fatalf("event %d still holds the marker", ev.Seq)
				}
			}
		})
	}
}

// eraseChild erases run-1 and stops, printing "at POINT", where the parent
// kills it.
func eraseChild(t *testing.T, path, point string) {
	stop := func(p string) {
		if p == point {
			fmt.Println("at " + p)
			os.Stdout.Sync()
			select {}
		}
	}
	sqlite.SetCrashHook(stop)
	sqlite.EraseHook = func() { stop("committed") }
	st := openAt(t, path)
	_, err := agentrt.Erase(context.Background(), st, "run-1", "dpo", "crash")
	t.Fatalf("the child's erasure returned (%v); it should have been killed", err)
}

// Beside erased runs, a payload altered in place is still a break, and so
// are a kept payload changed after its erasure and an erasure made by hand
// (content replaced, digest kept) with no run.erased recording it.
func TestVerify_AlteredPayloadIsABreakEvenBesideErasures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []string{"altered", "kept payload changed", "erased by hand"} {
		t.Run(tc, func(t *testing.T) {
			e := newEnv(t)
			st := e.store
			d := e.Driver(kit.Script(kit.Call("echo", `{"x":1}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), kit.NewTool("echo", agentrt.ReadOnly, `{"type":"object"}`, nil))
			for _, id := range []string{"a", "b"} {
				if _, err := d.StartWithID(ctx, id, "g "+id, agentrt.DefaultLimits()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := agentrt.Erase(ctx, st, "a", "dpo", "why"); err != nil {
				t.Fatal(err)
			}
			if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || rep.Break != nil || rep.Erased == 0 {
				t.Fatalf("verify after the erasure = %+v, %v", rep, err)
			}
			db := rawDB(t, st)
			var seq int64
			switch tc {
			case "altered":
				seq = scalar(t, st, `SELECT MIN(seq) FROM events WHERE run_id = 'b' AND type = 'step.tool_started'`)
				kit.Exec(t, db, 1, `UPDATE events SET payload_json = '{"tool":"echo","args":{"x":2}}' WHERE seq = ?`, seq)
			case "kept payload changed":
				seq = scalar(t, st, `SELECT MIN(seq) FROM events WHERE run_id = 'a' AND type = 'step.tool_started'`)
				kit.Exec(t, db, 1, `UPDATE events SET payload_json = '{"tool":"rm","args":null}' WHERE seq = ?`, seq)
			case "erased by hand":
				// The forger knows the digest the chain hashed (they
				// read the salt before deleting it) and keeps it.
				seq = scalar(t, st, `SELECT MIN(seq) FROM events WHERE run_id = 'b' AND type = 'step.tool_started'`)
				var salt, pl string
				if err := db.QueryRow(`SELECT salt FROM run_salts WHERE run_id = 'b'`).Scan(&salt); err != nil {
					t.Fatal(err)
				}
				if err := db.QueryRow(`SELECT payload_json FROM events WHERE seq = ?`, seq).Scan(&pl); err != nil {
					t.Fatal(err)
				}
				kit.Exec(t, db, 1, `UPDATE events SET payload_json = '{"tool":"echo","args":null}', payload_digest = ? WHERE seq = ?`, keyedDigest(t, salt, pl), seq)
			}
			rep, err := st.VerifyEvents(ctx, 0, 0)
			if err != nil || rep.Break == nil || rep.Break.Seq != seq {
				t.Fatalf("verify = %+v, %v; want a break at %d", rep, err, seq)
			}
			if code, out, _ := agentrtCLI(t, "-db", st.Path(), "verify"); code == 0 || !strings.Contains(out, fmt.Sprintf("broken at seq %d", seq)) {
				t.Fatalf("agentrt verify = %d\n%s", code, out)
			}
		})
	}
}

// keyedDigest is the digest the chain hashes for a salted run's payload.
func keyedDigest(t *testing.T, saltHex, payload string) string {
	t.Helper()
	key, err := hex.DecodeString(saltHex)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(append(key, payload...))
	return hex.EncodeToString(d[:])
}

// scalar reads one integer.
func scalar(t *testing.T, st *sqlite.Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.DB().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Retention on SQLite (the Postgres module runs the same suite): bounded
// batches, oldest first, resumable, and nothing else touched.
func TestRetain_BoundedBatchesOnBothBackends(t *testing.T) {
	storetest.Retention(t, func(t *testing.T) agentrt.Store { return openStore(t) })
}

// A store keeps a run's key once it has read it, so a running run's later
// writes skip the salt read; a write that does not prove the run is still
// running (a late outcome's event) still reads the erasure mark. Here a
// second handle on the same file (another process, as far as the first
// store's memory goes) cancels and erases the run: the first store, which
// holds the run's key, refuses the late event instead of keying it with
// the salt the erasure deleted.
func TestErase_LateEventRefusedByAStoreThatKeptTheRunsKey(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	now := e.Clock.Now()
	late := func(st agentrt.Store) error {
		_, err := st.Update(ctx, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "late", At: now, Type: agentrt.EventToolFinished,
				Payload: json.RawMessage(`{"late":true,"observation":{"kind":"tool_result","summary":"the secret"},"tool":"echo"}`)})
			return err
		})
		return err
	}
	if _, err := e.store.Update(ctx, func(tx agentrt.Tx) error {
		return tx.RunInsert(agentrt.Run{ID: "late", Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: now, StartedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	if err := late(e.store); err != nil {
		t.Fatalf("an event on the running run: %v", err)
	}
	other, err := sqlite.OpenExisting(e.store.Path(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	op := agentrt.Operator{Store: other, Now: e.Clock.Now}
	if _, err := op.Cancel(ctx, "late", "op", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := agentrt.Erase(ctx, other, "late", "dpo", "why"); err != nil {
		t.Fatal(err)
	}
	if err := late(e.store); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a late event on the run another handle erased = %v, want ErrRunState", err)
	}
	rep, err := e.store.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("chain: %+v %v", rep.Break, err)
	}
}
