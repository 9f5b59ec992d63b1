//go:build linux

package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A write fails with a marker text through the proxy; the real agentrt
// erases its run while the proxy runs, and the status tool stops quoting
// the text at once. After a restart, neither the index file nor its log
// or shared-memory file holds the marker or the plain SHA-256 of the
// request. Before, the index kept both for ever.
func TestProxy_ErasedRunLeavesNothingInTheIndex(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		doc["policy"] = map[string]any{"local_mutation": "allow"}
	})
	const marker = "Zq7-index-marker-Xw9"
	h.up.failText = "failed for " + marker
	args := `{"path":"/tmp/p","content":"c","mode":"error"}`
	res := h.call("up_write", args)
	mustf(t, strings.Contains(text(res), marker), "the failure should reach the host: %s", text(res))
	rows := h.rows()
	mustf(t, len(rows) == 1 && strings.Contains(rows[0].Detail, marker), "rows: %+v", rows)
	runID := rows[0].RunID
	sum := sha256.Sum256([]byte("up_write\x00" + `{"content":"c","mode":"error","path":"/tmp/p"}`))
	plainKey := hex.EncodeToString(sum[:])
	mustf(t, rows[0].Key == plainKey, "the test's digest is not the proxy's request key: %s", rows[0].Key)
	mustf(t, strings.Contains(text(h.call(h.cfg.StatusTool, `{}`)), marker), "status should quote the failure before the erasure")

	_, agentrtBin := binaries(t)
	out, err := exec.Command(agentrtBin, "-db", h.cfg.Database, "erase", runID, "-by", "dpo", "-reason", "request 1").CombinedOutput()
	mustf(t, err == nil, "agentrt erase: %v\n%s", err, out)
	st := text(h.call(h.cfg.StatusTool, `{}`))
	mustf(t, !strings.Contains(st, marker) && strings.Contains(st, "its text was erased"), "status after the erasure: %s", st)

	h.restart(nil)
	st = text(h.call(h.cfg.StatusTool, `{}`))
	mustf(t, !strings.Contains(st, marker), "status after the restart: %s", st)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(h.cfg.Index + suffix)
		if os.IsNotExist(err) {
			continue
		}
		mustf(t, err == nil, "read %s: %v", h.cfg.Index+suffix, err)
		mustf(t, !bytes.Contains(b, []byte(marker)), "%s still holds the failure text", h.cfg.Index+suffix)
		mustf(t, !bytes.Contains(b, []byte(plainKey)), "%s still holds the plain SHA-256 of the request", h.cfg.Index+suffix)
	}
	rows = h.rows()
	mustf(t, len(rows) == 1 && rows[0].RunID == runID && rows[0].Detail == "" && !rows[0].Open && rows[0].Outcome == OutcomeFailed,
		"the row should stay, cleared and closed: %+v", rows[0])
	// The identical call is no longer answered from the erased row: it runs.
	res = h.call("up_write", args)
	mustf(t, strings.Contains(text(res), marker), "the identical call should run again: %s", text(res))
}
