package proxy

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// plantedKey is an AWS access key id, made at run time so this file holds
// no token a scanner of the repository would flag.
var plantedKey = "AKIA" + "Q3EGRIXY5TNWZ4VB"

// The proxy redacts secrets in what a tool returns by default: the host
// reads [REDACTED:aws_access_key_id] and the database files never hold
// the key. The disclosure key's off map turns the rule off for the named
// tool only, and the host then reads the key as the server returned it.
func TestProxy_RedactsSecretsInResultsByDefaultUnlessTurnedOffForTheTool(t *testing.T) {
	h := newHarness(t, nil)
	got := h.expect("", "up_read", `{"path":"`+plantedKey+`"}`)
	h.stop()
	if strings.Contains(got, plantedKey) || !strings.Contains(got, "[REDACTED:aws_access_key_id]") {
		t.Fatalf("the host read %q", got)
	}
	var files []byte
	for _, s := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(h.cfg.Database + s)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		files = append(files, b...)
	}
	if len(files) == 0 || bytes.Contains(files, []byte("content of "+plantedKey)) {
		t.Errorf("the database files hold the result with the key (%d bytes read)", len(files))
	}

	off := newHarness(t, func(doc map[string]any) {
		doc["disclosure"] = map[string]any{"off": map[string]any{"up_read": []string{"aws_access_key_id"}}}
	})
	defer off.stop()
	if got := off.expect("", "up_read", `{"path":"`+plantedKey+`"}`); !strings.Contains(got, "content of "+plantedKey) {
		t.Fatalf("with the rule off for up_read the host read %q", got)
	}
}
