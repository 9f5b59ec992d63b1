package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/internal/testrig"
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
	files := testrig.DBFiles(t, h.cfg.Database)
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

// A call the class map holds for approval whose arguments carry a key:
// the approval's presentation and capability show the value as
// [REDACTED:aws_access_key_id] and list its pointer and kind, and nothing
// the host, the operator's show -json or the proxy's stderr gets holds
// the key. Approved, the call runs with the key as the host sent it. A
// recheck with the same configuration decides alike, since it hands the
// policy the same findings.
func TestProxy_ClassMapApprovalShowsArgumentSecretsRedacted(t *testing.T) {
	h := newHarness(t, nil)
	args := `{"path":"creds","content":"` + plantedKey + `"}`
	pendingText := h.expect(StatusPendingApproval, "up_write", args)
	a := h.onlyPending(string(agentrt.LocalMutation))
	var p struct {
		Args    map[string]any           `json:"args"`
		Secrets []agentrt.ArgumentSecret `json:"secrets"`
	}
	if err := json.Unmarshal(a.Presentation, &p); err != nil {
		t.Fatal(err)
	}
	want := agentrt.ArgumentSecret{Pointer: "/content", Kind: disclosure.RuleAWSAccessKeyID}
	if len(p.Secrets) != 1 || p.Secrets[0] != want || p.Args["content"] != agentrt.DisclosureMarker(want.Kind) {
		t.Fatalf("the presentation shows %s", a.Presentation)
	}
	var show bytes.Buffer
	if code := cmdline.Run([]string{"-db", h.cfg.Database, "-json", "show", a.RunID}, nil, &show, io.Discard); code != 0 {
		t.Fatalf("agentrt show exited %d", code)
	}
	for name, b := range map[string][]byte{"the presentation": a.Presentation, "the capability": a.Capability,
		"the host": []byte(pendingText + strings.Join(h.texts, "\n")), "show -json": show.Bytes(), "stderr": []byte(h.stderr.String())} {
		if bytes.Contains(b, []byte(plantedKey)) {
			t.Errorf("%s holds the key", name)
		}
	}
	h.decide(a, true, "")
	h.expect("", "up_write", args)
	if got := h.up.effectsNow(); len(got) != 1 || got[0] != "creds="+plantedKey {
		t.Fatalf("the write took effect as %v", got)
	}
	h.stop()
	sum, err := Recheck(context.Background(), h.cfg, RecheckOptions{})
	mustf(t, err == nil && sum.Differ == 0 && sum.Checked == 1, "recheck: %+v %v", sum, err)
}
