package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/scripted"
)

// quorumFixture is run "pay" waiting on a payment that needs two of
// finance (alice, bob, carol), with alice's signed vote cast, all on the
// fixture's clock with fixed ids, keys and nonces so outputs are golden.
func quorumFixture(t *testing.T) *fixture {
	t.Helper()
	f, st := newBareFixture(t)
	defer st.Close()
	ctx := context.Background()
	op := agentrt.Operator{Store: st, Now: f.clock.Now}
	keys := map[string]ed25519.PrivateKey{}
	aps := map[string]agentrt.EnrolledApprover{}
	for i, name := range []string{"alice", "bob", "carol"} {
		key := ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+i)), ed25519.SeedSize)))
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.EnrollApprover(ctx, agentrt.NewApprover{ID: "ap-" + name, Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin"}); err != nil {
			t.Fatal(err)
		}
		ap, err := op.SetApproverAccess(ctx, name, agentrt.ApproverAccess{Roles: []string{"finance"}}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		keys[name], aps[name] = key, ap
	}
	pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "payment", Reason: "over the limit",
		Requirement: &agentrt.Requirement{Stages: []agentrt.Stage{{Quantifier: agentrt.QuantMofN, M: 2, Roles: []string{"finance"}}}}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Now: f.clock.Now, NewID: f.ids.ID,
		Tools: kit.Tools(kit.NewTool("pay", agentrt.RemoteMutation, `{"type":"object"}`, nil)), Policy: kit.Fixed(pd)},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("pay", `{"eur":25000}`, "pay"), scripted.Complete(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := d.StartWithID(ctx, "pay", "pay the invoice", agentrt.DefaultLimits()); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("start: %s %v", r.Status, err)
	}
	a := kit.PendingApproval(t, st, "pay")
	stmt := agentrt.Statement{RunID: a.RunID, ApprovalID: a.ID, ApprovalHash: a.Hash, Decision: agentrt.StatementApprove,
		Note: "ok", Nonce: "nonce-alice", Time: f.clock.Now()}
	sig, err := agentrt.SignStatement(keys["alice"], aps["alice"], stmt)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ApproveShown(ctx, "pay", a.ID, a.Hash, "", "ok", agentrt.WithSignature(sig)); err != nil {
		t.Fatal(err)
	}
	return f
}

// show and verify -decisions, in text and JSON, on a payment with one of
// its two votes: show -json holds each stage as show's text prints it
// (quantifier, m, roles, who voted, who may still vote, how many remain),
// and verify prints the vote counts its JSON holds.
func TestGolden_QuorumStagesInShowAndVerify(t *testing.T) {
	base := quorumFixture(t)
	none := func(*env) {}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"show_quorum", []string{"show", "pay"}},
		{"show_quorum.json", []string{"-json", "show", "pay"}},
		{"verify_decisions", []string{"verify", "-decisions"}},
		{"verify_decisions.json", []string{"-json", "verify", "-decisions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := base.clone(t)
			args := append([]string{"-db", f.path}, c.args...)
			r := f.runWith(t, none, strings.NewReader(""), args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			checkGolden(t, c.name, args, r, strings.HasSuffix(c.name, ".json"), func(s string) string {
				return strings.ReplaceAll(s, f.path, "$DB")
			})
			checkQuorumOutput(t, c.name, r.stdout)
		})
	}
}

// checkQuorumOutput asserts, beyond the golden bytes, what each output
// must say about alice's vote and the stage it leaves open.
func checkQuorumOutput(t *testing.T, name, out string) {
	t.Helper()
	switch name {
	case "show_quorum.json":
		var page struct {
			Pending []struct {
				ID     string `json:"id"`
				Stages []struct {
					Index int `json:"index"`
					Stage struct {
						Quantifier string   `json:"quantifier"`
						M          int      `json:"m"`
						Roles      []string `json:"roles"`
					} `json:"stage"`
					Need      int      `json:"need"`
					Counted   []string `json:"counted"`
					Open      []string `json:"open"`
					Met       bool     `json:"met"`
					Remaining int      `json:"remaining"`
				} `json:"stages"`
			} `json:"pending"`
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Pending) != 1 || len(page.Pending[0].Stages) != 1 {
			t.Fatalf("show -json pending = %+v, %v", page.Pending, err)
		}
		s := page.Pending[0].Stages[0]
		if s.Index != 1 || s.Stage.Quantifier != "m_of_n" || s.Stage.M != 2 || strings.Join(s.Stage.Roles, ",") != "finance" ||
			s.Need != 2 || strings.Join(s.Counted, ",") != "alice" || strings.Join(s.Open, ",") != "bob,carol" || s.Met || s.Remaining != 1 {
			t.Fatalf("show -json stage = %+v", s)
		}
	case "verify_decisions":
		if !strings.Contains(out, "votes: 1 verified on 1 approval(s)") {
			t.Fatalf("verify -decisions does not print the vote counts:\n%s", out)
		}
	case "verify_decisions.json":
		var rep struct {
			Decisions struct {
				Votes          int64 `json:"votes"`
				VotedApprovals int   `json:"voted_approvals"`
			} `json:"decisions"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Decisions.Votes != 1 || rep.Decisions.VotedApprovals != 1 {
			t.Fatalf("verify -json -decisions = %+v, %v", rep, err)
		}
	case "show_quorum":
		if !strings.Contains(out, "1 of 2 (alice); may still vote: bob, carol") {
			t.Fatalf("show does not print the stage:\n%s", out)
		}
	}
}
