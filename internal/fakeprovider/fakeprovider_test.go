package fakeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/render"
)

const key = "sk-fake-0123456789"

func userTurn(text string) agentrt.ModelRequest {
	return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: text}}}}}
}

// The openai adapter, with a key over loopback http, receives each scripted
// turn in order, and the server sees each request body; past the script the
// server answers 500, which the adapter classifies as transient.
func TestServer_ReplaysTheScriptThroughTheOpenAIAdapter(t *testing.T) {
	s := New([]Turn{
		{Text: "Looking.", ToolCalls: []ToolCall{{Name: "list", Arguments: `{"dir":"."}`}}, Usage: agentrt.Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 2}},
		{Text: "Done.", Usage: agentrt.Usage{InputTokens: 30, OutputTokens: 3}},
		{ToolCalls: []ToolCall{{Name: "write", Arguments: `{"path":`}}, FinishReason: "length"},
	})
	defer s.Close()
	s.SetKey(key)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL = %s", s.URL())
	}
	m, err := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), APIKey: providers.NewSecret(key), Model: "fake-model"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	r, err := m.Generate(ctx, userTurn("first"))
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != agentrt.StopToolUse || r.Text != "Looking." || len(r.ToolUses) != 1 || r.ToolUses[0].ID != "call_0_0" ||
		string(r.ToolUses[0].Args) != `{"dir":"."}` || r.Usage != (agentrt.Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 2}) {
		t.Fatalf("turn 0 = %+v", r)
	}
	if r, err = m.Generate(ctx, userTurn("second")); err != nil || r.StopReason != agentrt.StopEndTurn || r.Text != "Done." {
		t.Fatalf("turn 1 = %+v, %v", r, err)
	}
	if r, err = m.Generate(ctx, userTurn("third")); err != nil || r.StopReason != agentrt.StopMaxTokens || len(r.ToolUses) != 0 {
		t.Fatalf("turn 2 = %+v, %v", r, err)
	}
	_, err = m.Generate(ctx, userTurn("fourth"))
	var te *agentrt.TransientError
	var se *providers.StatusError
	if !errors.As(err, &te) || !errors.As(err, &se) || se.Status != http.StatusInternalServerError {
		t.Fatalf("past the script: %v", err)
	}

	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1], &body); err != nil || body.Model != "fake-model" || body.Messages[0].Content != "second" {
		t.Fatalf("request 1 = %s (%v)", reqs[1], err)
	}
}

// A server with a key refuses a client without it, and the turn is not spent.
func TestServer_ChecksTheKey(t *testing.T) {
	s := New([]Turn{{Text: "hi"}})
	defer s.Close()
	s.SetKey(key)
	wrong, _ := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), APIKey: providers.NewSecret("sk-wrong"), Model: "m"}})
	_, err := wrong.Generate(context.Background(), userTurn("x"))
	var se *providers.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Fatalf("wrong key: %v", err)
	}
	none, _ := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), Model: "m"}})
	if _, err = none.Generate(context.Background(), userTurn("x")); !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Fatalf("no key: %v", err)
	}
	right, _ := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), APIKey: providers.NewSecret(key), Model: "m"}})
	if r, err := right.Generate(context.Background(), userTurn("x")); err != nil || r.Text != "hi" {
		t.Fatalf("right key: %+v %v", r, err)
	}
}

// Usage a script marks as unbelievable reaches the adapter as a zero-usage
// ServedError.
func TestServer_UnusableUsageReachesTheAdapter(t *testing.T) {
	s := New([]Turn{{Text: "hi", UsageJSON: `{"prompt_tokens":-3,"completion_tokens":1}`}})
	defer s.Close()
	m, _ := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), Model: "m"}})
	_, err := m.Generate(context.Background(), userTurn("x"))
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Fatalf("err = %v", err)
	}
}

// render.Agent over the adapter turns scripted replies into decisions: the
// first tool call executes, the extra one is named, and invalid arguments
// reach the decision verbatim.
func TestServer_DrivesARenderAgent(t *testing.T) {
	s := New([]Turn{
		{Text: "Reading both.", ToolCalls: []ToolCall{{Name: "read", Arguments: `{"path":"a"}`}, {Name: "read_more", Arguments: `{}`}}},
		{ToolCalls: []ToolCall{{Name: "read", Arguments: `{"path":`}}},
	})
	defer s.Close()
	m, _ := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: s.URL(), Model: "m"}})
	a := render.Agent{Options: render.Options{Opening: "Read the files."}, System: "Be brief."}
	in := agentrt.StepInput{Model: m, Tools: []agentrt.ToolSpec{{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	d, err := a.Decide(context.Background(), in)
	if err != nil || d.Kind != agentrt.KindToolCall || d.Tool != "read" || string(d.Args) != `{"path":"a"}` ||
		d.Reason != "Reading both. [1 further tool call(s) not executed: read_more]" {
		t.Fatalf("decision 0 = %+v, %v", d, err)
	}
	in.Steps = agentrt.NewSteps(agentrt.Step{Index: 0, Status: agentrt.StepDone, Decision: &d,
		Observation: &agentrt.Observation{Kind: agentrt.ObsToolResult, Content: json.RawMessage(`"contents of a"`), Summary: "a"}})
	if d, err = a.Decide(context.Background(), in); err != nil || string(d.Args) != `{"path":` {
		t.Fatalf("decision 1 = %+v, %v", d, err)
	}
	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.Requests()[1], &second); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, msg := range second.Messages {
		roles = append(roles, msg.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" || second.Messages[3].ToolCallID != "step_0" || second.Messages[3].Content != `"contents of a"` {
		t.Fatalf("second request = %s", s.Requests()[1])
	}
}
