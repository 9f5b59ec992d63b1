package disclosure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/disclosure/disclosuretest"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// corpus is the planted corpus the disclosure tests of every module share.
func corpus() []disclosuretest.Secret { return disclosuretest.Corpus() }

// leakyTool returns the whole corpus: each secret in a field of its own,
// all of them in one file-like text field, in its summary and in a text
// block, as a tool that read a .env file would.
func leakyTool() agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read_env", Description: "reads a file", SideEffect: agentrt.ReadOnly,
			Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			fields := map[string]string{}
			var file []string
			for _, s := range corpus() {
				fields[s.Format] = s.Rendered()
				file = append(file, s.Rendered())
			}
			content, _ := json.Marshal(map[string]any{"fields": fields, "file": strings.Join(file, "\n"), "lines": file})
			return agentrt.ToolResult{Content: content, Summary: "read " + strings.Join(file, " "),
				Blocks: []agentrt.ResultBlock{{Type: agentrt.ResultText, Text: strings.Join(file, "\n")}}}, nil
		},
	}
}

// rules is disclosure.New(cfg), failing the test on an error.
func rules(t testing.TB, cfg disclosure.Config) *disclosure.Rules {
	t.Helper()
	r, err := disclosure.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openDB opens a fresh SQLite file.
func openDB(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// leaks lists the planted secrets found in b.
func leaks(b []byte) []string { return disclosuretest.Leaks(b) }

// The planted corpus, returned by a tool through a Driver and through a
// Gate under the default rules, is absent from what the model reads, from
// what the Gate's host receives, from the database file, its WAL and shm,
// from 'agentrt events -json' and from the JSON Lines an export.Follower
// writes; each format is named by its rule in
// disclosure.applied. With disclosure off every secret is stored, so each
// check can fail.
func TestRules_PlantedCorpusNeverReachesTheModelTheHostOrTheRecord(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		st := openDB(t)
		var d agentrt.Disclosure
		if on {
			d = rules(t, disclosure.Default())
		}
		var modelSaw []byte
		agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if in.Steps.Len() == 0 {
				return scripted.ToolCall("read_env", `{}`, ""), nil
			}
			modelSaw, _ = json.Marshal(in.Steps.Records())
			return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
		})
		drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
			Tools: []agentrt.Tool{leakyTool()}, Disclosure: d}, Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drv.StartWithID(ctx, "driver", "read the env file", agentrt.DefaultLimits()); err != nil {
			t.Fatal(err)
		}
		gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
			Tools: []agentrt.Tool{leakyTool()}, Disclosure: d}})
		if err != nil {
			t.Fatal(err)
		}
		hostGot := gateCall(t, gate, "gate", "read_env")
		var events bytes.Buffer
		if code := cmdline.Run([]string{"-db", st.Path(), "-json", "events", "driver"}, nil, &events, os.Stderr); code != 0 {
			t.Fatalf("agentrt events exited %d", code)
		}
		if code := cmdline.Run([]string{"-db", st.Path(), "-json", "events", "gate"}, nil, &events, os.Stderr); code != 0 {
			t.Fatalf("agentrt events exited %d", code)
		}
		var followed bytes.Buffer
		f := &export.Follower{Store: st, Once: true}
		if err := f.Follow(ctx, export.JSONL(&followed)); err != nil {
			t.Fatal(err)
		}
		where := map[string][]byte{"the model's view": modelSaw, "the Gate's host": hostGot,
			"the database files": testrig.DBFiles(t, st.Path()), "events -json": events.Bytes(), "the follower's JSONL": followed.Bytes()}
		for name, b := range where {
			if len(b) == 0 {
				t.Fatalf("%s is empty: nothing was checked", name)
			}
			got := leaks(b)
			if on && len(got) != 0 {
				t.Errorf("%s holds %v", name, got)
			}
			if !on && len(got) != len(corpus()) {
				t.Errorf("with disclosure off %s holds only %v; the check above proves nothing", name, got)
			}
		}
		if on {
			checkApplied(t, st, "driver")
		}
	}
}

// gateCall runs one call of tool through gate and returns the observation
// its host received, as JSON.
func gateCall(t *testing.T, gate *agentrt.Gate, runID, tool string) []byte {
	t.Helper()
	ctx := context.Background()
	s, err := gate.Begin(ctx, runID, "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	step, err := s.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := step.Propose(ctx, scripted.ToolCall(tool, `{}`, "")); err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("propose: %v, %v", v.Outcome, err)
	}
	obs, err := step.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(obs)
	return b
}

// checkApplied checks the run's disclosure.applied names every format's rule.
func checkApplied(t *testing.T, st *sqlite.Store, runID string) {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type != agentrt.EventDisclosureApplied {
			continue
		}
		p, err := agentrt.PayloadAs[agentrt.DisclosureAppliedPayload](ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{disclosure.RuleAWSAccessKeyID, disclosure.RuleGitHubToken, disclosure.RuleSlackToken,
			disclosure.RuleStripeKey, disclosure.RuleGoogleAPIKey, disclosure.RuleJWT, disclosure.RulePrivateKey,
			disclosure.RuleBearerToken, disclosure.RuleURLPassword, disclosure.RuleSecretAssignment} {
			found := false
			for _, r := range p.Rules {
				found = found || r == want
			}
			if !found {
				t.Errorf("disclosure.applied rules %v lack %s", p.Rules, want)
			}
		}
		if p.Count < len(corpus()) || len(p.Findings) != p.Count {
			t.Errorf("disclosure.applied counts %d findings, lists %d", p.Count, len(p.Findings))
		}
		return
	}
	t.Fatal("no disclosure.applied event")
}
