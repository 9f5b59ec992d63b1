package cel_test

import (
	"context"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// request.secrets lists where the arguments carry a secret: a rule can
// send a call carrying an AWS key to an operator, show the pointer and
// kind in the presentation, and let the same call without one run.
func TestPolicy_RequestSecretsListsPointerAndKind(t *testing.T) {
	p := mustParse(t, `
rules:
  - name: keys-go-to-an-operator
    when: request.secrets.exists(s, s.kind == "aws_access_key_id" && s.pointer.startsWith("/body"))
    outcome: require_approval
    kind: secret
    presentation: {secrets: request.secrets, count: size(request.secrets)}
default: {outcome: allow}
`)
	req := request("post", agentrt.RemoteMutation, `{"body":{"aws":"x"}}`)
	req.Secrets = []agentrt.ArgumentSecret{{Pointer: "/body/aws", Kind: "aws_access_key_id"}}
	pd, err := p.Evaluate(context.Background(), req, agentrt.RunView{})
	if err != nil || pd.Outcome != agentrt.RequireApproval {
		t.Fatalf("with a key: %+v, %v", pd, err)
	}
	if want := `{"count":1,"secrets":[{"kind":"aws_access_key_id","pointer":"/body/aws"}]}`; string(pd.Presentation) != want {
		t.Errorf("presentation %s, want %s", pd.Presentation, want)
	}
	req.Secrets = nil
	if pd, err := p.Evaluate(context.Background(), req, agentrt.RunView{}); err != nil || pd.Outcome != agentrt.Allow {
		t.Errorf("without a key: %+v, %v", pd, err)
	}
}
