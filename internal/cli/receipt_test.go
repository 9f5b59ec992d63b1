package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A signed receipt made by agentrt receipt verifies with the public key
// alone; the same receipt with one event's hash altered, or checked with
// another key, fails.
func TestReceipt_VerifiesOfflineAndAnAlteredOneFails(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "ckpt.key"), filepath.Join(dir, "ckpt.pub")
	r := f.run(t, nil, "checkpoint", "-new-key", key, "-name", "test-log")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "test-log+") {
		t.Fatalf("new key: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(pub, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := f.run(t, nil, "-db", f.path, "checkpoint", "-key", key); r.code != ExitOK || !strings.Contains(r.stdout, "folded: ") {
		t.Fatalf("checkpoint: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(dir, "receipt.json")
	if r := f.run(t, nil, "-db", f.path, "receipt", f.done, "-o", out); r.code != ExitOK {
		t.Fatalf("receipt: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, nil, "verify-receipt", out, "-key", pub); r.code != ExitOK || !strings.Contains(r.stdout, "receipt verified") {
		t.Fatalf("verify-receipt: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(out)
	var rc map[string]any
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	ev := rc["events"].([]any)[1].(map[string]any)
	ev["hash"] = strings.Repeat("0", 64)
	altered, _ := json.Marshal(rc)
	bad := filepath.Join(dir, "altered.json")
	if err := os.WriteFile(bad, altered, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := f.run(t, nil, "verify-receipt", bad, "-key", pub); r.code != ExitFailure || !strings.Contains(r.stdout, "NOT verified") {
		t.Fatalf("an altered receipt: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	other := filepath.Join(dir, "other.key")
	r = f.run(t, nil, "checkpoint", "-new-key", other, "-name", "test-log")
	if r := f.run(t, nil, "verify-receipt", out, "-key", strings.TrimSpace(r.stdout)); r.code != ExitFailure {
		t.Fatalf("another key: exit %d %q", r.code, r.stdout)
	}
}

// verify -head with a checkpoint kept as SIZE:ROOT passes while the log
// extends it and fails once the tail (events, leaves and checkpoints) is
// cut.
func TestVerify_KeptCheckpointFailsOnACutTail(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "checkpoint")
	m := regexp.MustCompile(`keep it as: (\S+)`).FindStringSubmatch(r.stdout)
	if r.code != ExitOK || m == nil {
		t.Fatalf("checkpoint: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "verify", "-head", m[1]); r.code != ExitOK || !strings.Contains(r.stdout, "kept checkpoint: extended") {
		t.Fatalf("verify -head: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	db := rawDB(t, f.path)
	var last int64
	if err := db.QueryRow("SELECT MAX(seq) FROM events").Scan(&last); err != nil {
		t.Fatal(err)
	}
	// A forger cuts the last event and rebuilds the checkpoints without it.
	for _, q := range []string{"DELETE FROM events WHERE seq = ?", "DELETE FROM event_leaves WHERE seq = ?"} {
		exec(t, db, q, last)
	}
	exec(t, db, "DELETE FROM checkpoints")
	exec(t, db, "DELETE FROM tree_hashes")
	exec(t, db, "DELETE FROM event_leaves")
	if r := f.run(t, nil, "-db", f.path, "checkpoint"); r.code != ExitOK {
		t.Fatalf("refold: exit %d %q", r.code, r.stderr)
	}
	r = f.run(t, nil, "-db", f.path, "verify", "-head", m[1])
	if r.code != ExitFailure || !strings.Contains(r.stdout, "checkpoints NOT verified") || !strings.Contains(r.stdout, "cut from its end") {
		t.Fatalf("a cut tail: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
