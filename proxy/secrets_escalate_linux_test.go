//go:build linux

package proxy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
)

// remoteWriteSetup is the process setup with the filesystem server's
// write_file classified remote_mutation and that class allowed, so only
// a finding in the arguments can hold a write; edit changes the
// configuration further.
func remoteWriteSetup(t *testing.T, edit func(doc map[string]any)) *procSetup {
	t.Helper()
	s := newProcSetup(t)
	s.editConfig(t, func(doc map[string]any) {
		doc["policy"] = map[string]any{"remote_mutation": "allow"}
		rules := doc["servers"].([]any)[0].(map[string]any)["rules"].(map[string]any)
		rules["write_file"].(map[string]any)["side_effect"] = "remote_mutation"
		if edit != nil {
			edit(doc)
		}
	})
	return s
}

// Under a class map that allows remote_mutation, the real filesystem
// server's write_file (classified remote_mutation) runs at once with
// clean arguments, but a write whose content carries an AWS key waits
// for approval and writes nothing: the approval's capability and
// presentation name /content and aws_access_key_id, its reason says why,
// and no part of it holds the key. agentrt approve lets the host's
// identical call write the key once.
func TestProcess_AllowedRemoteCallCarryingASecretWaitsForApproval(t *testing.T) {
	s := remoteWriteSetup(t, nil)
	h := s.start(t)
	clean := filepath.Join(s.sandbox, "clean.txt")
	h.expect("", "fs_write_file", fmt.Sprintf(`{"path":%q,"content":"nothing secret"}`, clean))
	b, err := os.ReadFile(clean)
	mustf(t, err == nil && string(b) == "nothing secret", "the clean write: %q %v", b, err)

	target := filepath.Join(s.sandbox, "creds.txt")
	write := fmt.Sprintf(`{"path":%q,"content":%q}`, target, plantedKey)
	h.expect(StatusPendingApproval, "fs_write_file", write)
	_, err = os.Stat(target)
	mustf(t, os.IsNotExist(err), "the write ran before approval: %v", err)

	ps := pendingIn(t, s.db, "")
	mustf(t, len(ps) == 1 && ps[0].Kind == string(agentrt.RemoteMutation), "pending approvals: %+v", ps)
	a := ps[0]
	want := agentrt.ArgumentSecret{Pointer: "/content", Kind: disclosure.RuleAWSAccessKeyID}
	for name, raw := range map[string]json.RawMessage{"capability": a.Capability, "presentation": a.Presentation} {
		var body struct {
			Args    map[string]any           `json:"args"`
			Secrets []agentrt.ArgumentSecret `json:"secrets"`
			Reason  string                   `json:"reason"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		mustf(t, len(body.Secrets) == 1 && body.Secrets[0] == want && body.Args["content"] == agentrt.DisclosureMarker(want.Kind),
			"the %s shows %s", name, raw)
		mustf(t, !strings.Contains(string(raw), plantedKey), "the %s holds the key", name)
		if name == "presentation" {
			mustf(t, strings.Contains(body.Reason, "carry a secret (aws_access_key_id)"), "the reason is %q", body.Reason)
		}
	}

	run, id, _ := h.lastApproval(1)
	mustf(t, id == a.ID, "stderr names approval %s, the store %s", id, a.ID)
	out := s.agentrt(t, "approve", run, "-approval", id)
	mustf(t, strings.Contains(out, "approved") && !strings.Contains(out, plantedKey), "agentrt approve: %s", out)
	h.expect("", "fs_write_file", write)
	b, err = os.ReadFile(target)
	mustf(t, err == nil && string(b) == plantedKey, "the approved write: %q %v", b, err)
	h.expect(StatusDuplicate, "fs_write_file", write)
	mustf(t, s.toolStarts(t) == 2, "write started %d times, want the clean one and the approved one", s.toolStarts(t))
}

// The operator's configuration says otherwise: with the AWS rule off for
// fs_write_file in the disclosure key, the same write carries no finding
// and runs at once, as the class map allows.
func TestProcess_SecretRuleOffForTheToolLetsTheAllowedCallRun(t *testing.T) {
	s := remoteWriteSetup(t, func(doc map[string]any) {
		doc["disclosure"] = map[string]any{"off": map[string]any{"fs_write_file": []string{disclosure.RuleAWSAccessKeyID}}}
	})
	h := s.start(t)
	target := filepath.Join(s.sandbox, "creds.txt")
	h.expect("", "fs_write_file", fmt.Sprintf(`{"path":%q,"content":%q}`, target, plantedKey))
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == plantedKey, "the write: %q %v", b, err)
	mustf(t, len(pendingIn(t, s.db, "")) == 0, "an approval waits: %+v", pendingIn(t, s.db, ""))
}
