package agentrt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// classified is a tool error that names its class.
type classified struct{ class agentrt.FailureClass }

func (c classified) Error() string                      { return "the server said no" }
func (c classified) FailureClass() agentrt.FailureClass { return c.class }
func (c classified) FailureMessage() string             { return "quota exceeded" }

// gateCall runs one read_only call of a tool through a gate and returns
// its recorded step and the step.tool_finished payload.
func gateCall(t *testing.T, fn func(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error)) (agentrt.Step, map[string]any) {
	t.Helper()
	st := openStore(t)
	tool := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "shot", SideEffect: agentrt.ReadOnly, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, Fn: fn}
	_, gs, os := kit.BeginGate(t, agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}},
		"r1", "shoot", agentrt.DefaultLimits())
	defer gs.Close()
	ctx := context.Background()
	v, err := os.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "shot", Args: json.RawMessage(`{}`)})
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("propose: %+v %v", v, err)
	}
	if _, err := os.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	steps := kit.MustSteps(t, st, "r1")
	fin := kit.EventsOf(t, st, "r1", agentrt.EventToolFinished)
	if len(fin) != 1 {
		t.Fatalf("tool_finished events: %d", len(fin))
	}
	rep, err := st.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("chain: %+v %v", rep, err)
	}
	return steps[0], kit.Payload(t, fin[0])
}

// A tool's typed blocks are recorded in the observation as sent, each
// sized and hashed; data past the per-block bound is left out and marked,
// text past it cut; and the chain's step.tool_finished event holds every
// block's type, media type, size and hash.
func TestToolResult_BlocksAreRecordedBoundedAndChained(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\nsmall image")
	huge := make([]byte, agentrt.MaxResultBlockBytes+1)
	long := strings.Repeat("é", agentrt.MaxResultBlockBytes/2+1)
	step, fin := gateCall(t, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: json.RawMessage(`"ok"`), Blocks: []agentrt.ResultBlock{
			{Type: agentrt.ResultText, Text: "the screen"},
			{Type: agentrt.ResultImage, MIMEType: "image/png", Data: img},
			{Type: agentrt.ResultAudio, MIMEType: "audio/wav", Data: huge},
			{Type: agentrt.ResultResource, URI: "file:///log", MIMEType: "text/plain", Text: long},
			{Type: agentrt.ResultResourceLink, URI: "file:///1.png", Name: "1.png", Size: 7},
		}}, nil
	})
	bs := step.Observation.Blocks
	if len(bs) != 5 {
		t.Fatalf("blocks: %d", len(bs))
	}
	sum := sha256.Sum256(img)
	hugeSum := sha256.Sum256(huge)
	switch {
	case bs[0].Text != "the screen" || bs[0].Size != 10 || bs[0].Truncated:
		t.Fatalf("text block: %+v", bs[0])
	case string(bs[1].Data) != string(img) || bs[1].Size != int64(len(img)) || bs[1].SHA256 != hex.EncodeToString(sum[:]) || bs[1].Truncated:
		t.Fatalf("image block: %+v", bs[1])
	case bs[2].Data != nil || !bs[2].Truncated || bs[2].Size != int64(len(huge)) || bs[2].SHA256 != hex.EncodeToString(hugeSum[:]):
		t.Fatalf("huge audio block: truncated %v, %d bytes kept, size %d", bs[2].Truncated, len(bs[2].Data), bs[2].Size)
	case !bs[3].Truncated || len(bs[3].Text) > agentrt.MaxResultBlockBytes || !strings.HasPrefix(long, bs[3].Text) || bs[3].Size != int64(len(long)):
		t.Fatalf("long resource: truncated %v, %d bytes kept", bs[3].Truncated, len(bs[3].Text))
	case bs[4].URI != "file:///1.png" || bs[4].Size != 7 || bs[4].SHA256 == "":
		t.Fatalf("link: %+v", bs[4])
	}
	chained, _ := json.Marshal(fin["blocks"])
	var ds []agentrt.BlockDigest
	if err := json.Unmarshal(chained, &ds); err != nil || len(ds) != 5 {
		t.Fatalf("chained blocks: %s %v", chained, err)
	}
	for i, d := range ds {
		if d != bs[i].Digest() {
			t.Fatalf("chained block %d = %+v, recorded %+v", i, d, bs[i].Digest())
		}
	}
}

// A tool error that names its class is recorded with the class and the
// source's own message, in the observation and the chain; a plain error
// has none.
func TestObservation_FailureClassIsRecorded(t *testing.T) {
	step, fin := gateCall(t, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{}, classified{agentrt.FailureServerError}
	})
	o := step.Observation
	if o.Kind != agentrt.ObsToolError || o.FailureClass != agentrt.FailureServerError || o.FailureMessage != "quota exceeded" {
		t.Fatalf("observation: %+v", o)
	}
	if fin["failure_class"] != "server_error" {
		t.Fatalf("tool_finished: %v", fin)
	}
	step, _ = gateCall(t, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{}, errors.New("plain")
	})
	if step.Observation.FailureClass != "" {
		t.Fatalf("a plain error got a class: %+v", step.Observation)
	}
}
