package agentrt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// planted is the value the disclosure under test redacts.
const planted = "PLANTED-7f3a9c21e8"

// plantedTool returns planted in its content, its summary and a text block.
func plantedTool(name string, terminal bool) *kit.Counted {
	t := kit.NewTool(name, agentrt.ReadOnly, `{"type":"object"}`, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{
			Content: json.RawMessage(`{"note":"the key is ` + planted + ` ok","n":1,"items":[{"k":"` + planted + `"}]}`),
			Summary: "found " + planted,
			Blocks:  []agentrt.ResultBlock{{Type: agentrt.ResultText, Text: "text " + planted}},
		}, nil
	})
	t.Terminal = terminal
	return t
}

// redactPlanted replaces planted wherever it appears, reporting each place.
var redactPlanted = agentrt.DisclosureFunc(func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
	out := agentrt.DisclosureOutcome{Content: in.Content, Summary: in.Summary, FailureMessage: in.FailureMessage, Blocks: in.Blocks}
	mark := agentrt.DisclosureMarker("planted")
	find := func(ptr, s string) string {
		if strings.Contains(s, planted) {
			out.Findings = append(out.Findings, agentrt.DisclosureFinding{Rule: "planted", Pointer: ptr, Action: agentrt.DisclosureRedacted, Value: planted})
		}
		return strings.ReplaceAll(s, planted, mark)
	}
	out.Content = json.RawMessage(find("/note", string(in.Content)))
	out.Summary = find("#summary", in.Summary)
	for i := range out.Blocks {
		out.Blocks[i].Text = find("#blocks/0/text", out.Blocks[i].Text)
	}
	return out, nil
})

// rawFiles is the database file with its WAL and shm, concatenated.
func rawFiles(t *testing.T, st *sqlite.Store) []byte {
	t.Helper()
	var all []byte
	for _, b := range testrig.DBFilesByName(t, st.Path()) {
		all = append(all, b...)
	}
	return all
}

// seenByModel runs a two-step Driver whose agent reads the first step's
// observation, returning what it read.
func seenByModel(t *testing.T, e *env, d agentrt.Disclosure) string {
	t.Helper()
	var seen string
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return kit.Call("read", `{}`), nil
		}
		b, _ := json.Marshal(in.Steps.Records()[0].Observation)
		seen = string(b)
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	cfg := e.Config(agent, agentrt.DefaultPolicy(), plantedTool("read", false))
	cfg.Disclosure = d
	if _, err := e.DriverFor(cfg).StartWithID(context.Background(), "r1", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	return seen
}

// A value the disclosure redacts reaches neither the model's view of the
// step nor the database file, its WAL or its shm; without a disclosure
// the same run stores it, so the check can fail.
func TestDisclosure_RedactedValueNeverReachesTheModelOrTheFiles(t *testing.T) {
	e := newEnv(t)
	seen := seenByModel(t, e, redactPlanted)
	if strings.Contains(seen, planted) || !strings.Contains(seen, "[REDACTED:planted]") {
		t.Fatalf("the model read %s", seen)
	}
	if bytes.Contains(rawFiles(t, e.store), []byte(planted)) {
		t.Fatal("the planted value is in the database files")
	}
	evs := kit.EventsOf(t, e.store, "r1", agentrt.EventDisclosureApplied)
	if len(evs) != 1 {
		t.Fatalf("%d disclosure.applied events, want 1", len(evs))
	}
	p, err := agentrt.PayloadAs[agentrt.DisclosureAppliedPayload](evs[0])
	if err != nil {
		t.Fatal(err)
	}
	salt, _ := hex.DecodeString(column(t, e.store, `SELECT salt FROM run_salts WHERE run_id = 'r1'`))
	want := sha256.Sum256(append(append(salt, "agentrt disclosure\x00"...), planted...))
	if p.Tool != "read" || p.Count != 3 || len(p.Rules) != 1 || p.Rules[0] != "planted" || len(p.Findings) != 3 ||
		p.Findings[0].Pointer != "/note" || p.Findings[0].Digest != hex.EncodeToString(want[:]) {
		t.Fatalf("disclosure.applied = %+v", p)
	}
	// The step's recorded hash is the redacted content's.
	st, _ := e.store.ListSteps(context.Background(), "r1")
	if h := st[0].Observation.ContentHash; h == "" || strings.Contains(string(st[0].Observation.Content), planted) {
		t.Fatalf("step 0 observation %+v", st[0].Observation)
	}

	off := newEnv(t)
	if seen := seenByModel(t, off, nil); !strings.Contains(seen, planted) || !bytes.Contains(rawFiles(t, off.store), []byte(planted)) {
		t.Fatal("without a disclosure the planted value should be stored and seen; the check above proves nothing")
	}
	if n := len(kit.EventsOf(t, off.store, "r1", agentrt.EventDisclosureApplied)); n != 0 {
		t.Fatalf("%d disclosure.applied events with disclosure off", n)
	}
}

// A Gate's host gets the redacted observation from Execute.
func TestDisclosure_GateHostReceivesOnlyTheRedaction(t *testing.T) {
	e := newEnv(t)
	_, _, step := kit.BeginGate(t, agentrt.EngineConfig{Store: e.store, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{plantedTool("read", false)}, Now: e.Clock.Now, NewID: e.IDs, Disclosure: redactPlanted}, "g1", "g", agentrt.DefaultLimits())
	ctx := context.Background()
	if v, err := step.Propose(ctx, kit.Call("read", `{}`)); err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("propose: %v %v", v.Outcome, err)
	}
	obs, err := step.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(obs)
	if bytes.Contains(b, []byte(planted)) || obs.Kind != agentrt.ObsToolResult {
		t.Fatalf("the host received %s", b)
	}
	if bytes.Contains(rawFiles(t, e.store), []byte(planted)) {
		t.Fatal("the planted value is in the database files")
	}
}

// A disclosure that adds a field, changes a number, adds text, fails or
// blocks never puts anything the tool did not return on record: the step
// fails as a tool error with failure "disclosure", and a terminal tool
// whose result is withheld does not complete the run.
func TestDisclosure_AnOutcomeThatWidensIsWithheld(t *testing.T) {
	cases := map[string]agentrt.DisclosureFunc{
		"added field": func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
			return agentrt.DisclosureOutcome{Content: json.RawMessage(`{"note":"x","n":1,"items":[{"k":"y"}],"extra":"WIDENED"}`),
				Summary: in.Summary, Blocks: in.Blocks, Findings: []agentrt.DisclosureFinding{{Rule: "r", Action: agentrt.DisclosureRemoved}}}, nil
		},
		"changed number": func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
			return agentrt.DisclosureOutcome{Content: json.RawMessage(`{"n":2}`), Summary: in.Summary, Blocks: in.Blocks}, nil
		},
		"added text": func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
			return agentrt.DisclosureOutcome{Content: in.Content, Summary: "WIDENED " + in.Summary, Blocks: in.Blocks}, nil
		},
		"failed": func(context.Context, agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
			return agentrt.DisclosureOutcome{}, errors.New("rules unavailable")
		},
		"blocked": func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
			return agentrt.DisclosureOutcome{Blocked: true, Findings: []agentrt.DisclosureFinding{{Rule: "private_key", Pointer: "/note",
				Action: agentrt.DisclosureBlocked, Value: planted}}}, nil
		},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.Config(kit.Script(kit.Call("read", `{}`)), agentrt.DefaultPolicy(), plantedTool("read", true))
			cfg.Disclosure = d
			run, err := e.DriverFor(cfg).StartWithID(context.Background(), "w", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxSteps = 1 }))
			if err != nil {
				t.Fatal(err)
			}
			if run.Status == agentrt.RunCompleted {
				t.Fatalf("a withheld terminal result completed the run")
			}
			st, _ := e.store.ListSteps(context.Background(), "w")
			obs := st[0].Observation
			if obs.Kind != agentrt.ObsToolError || !strings.Contains(string(obs.Content), `"failure":"disclosure"`) {
				t.Fatalf("observation %s %s", obs.Kind, obs.Content)
			}
			raw := rawFiles(t, e.store)
			if bytes.Contains(raw, []byte(planted)) || bytes.Contains(raw, []byte("WIDENED")) {
				t.Fatal("the files hold the tool's value or the widening")
			}
		})
	}
}
