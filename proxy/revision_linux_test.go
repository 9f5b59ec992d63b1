package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// The real filesystem server's read_text_file answers with a text block
// and structuredContent both; through the real agentrt-proxy binary the
// host gets the text as the text block, not the JSON of the structure,
// and the structure beside it.
func TestProxy_TextAndStructuredContentBothReachTheHost(t *testing.T) {
	s := newProcSetup(t)
	h := s.start(t)
	res, err := h.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fs_read_text_file",
		Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q}`, filepath.Join(s.sandbox, "notes.txt")))})
	if err != nil {
		t.Fatalf("call: %v\nstderr: %s", err, h.stderr)
	}
	mustf(t, !res.IsError && len(res.Content) == 1, "result: %+v", res)
	tc, ok := res.Content[0].(*sdk.TextContent)
	mustf(t, ok && tc.Text == "hello from the sandbox\n", "the text block is %#v, want the file's text as the server sent it", res.Content[0])
	b, _ := json.Marshal(res.StructuredContent)
	mustf(t, string(b) == `{"content":"hello from the sandbox\n"}`, "structuredContent %s", b)
}

// stateless2026 is a go-sdk v1.8.0 host on the stateless revision over
// stdio, declaring elicitation, with the SDK's own input_required loop
// off so the test sees each round.
func (s *procSetup) stateless2026(t *testing.T) *host {
	t.Helper()
	h := &host{t: t, stderr: &syncBuffer{}}
	h.cmd = exec.Command(s.proxyBin, "-config", s.config)
	h.cmd.Stderr = h.stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "host-2026", Version: "1"}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept"}, nil
		}})
	return s.connect(t, h, client, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
}

// A 2026-07-28 host's write held for approval answers input_required:
// an elicitation naming the approval and a sealed requestState. A
// tampered state, and the state moved into another request, are refused
// and decide nothing (no approval decided or opened, no file written).
// After the operator approves, the retry with the state runs the write;
// the same request re-issued with a new id (a host whose answer was
// lost) is matched by the request and does not run again.
func TestProxy_StatelessHostHeldWriteAnswersInputRequired(t *testing.T) {
	s := newProcSetup(t)
	h := s.stateless2026(t)
	ctx := context.Background()
	target := filepath.Join(s.sandbox, "out.txt")
	args := json.RawMessage(fmt.Sprintf(`{"path":%q,"content":"approved\n"}`, target))
	call := func(a json.RawMessage, state string) (*sdk.CallToolResult, error) {
		p := &sdk.CallToolParams{Name: "fs_write_file", Arguments: a, RequestState: state}
		if state != "" {
			p.InputResponses = sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept"}}
		}
		return h.cs.CallTool(ctx, p)
	}
	res, err := call(args, "")
	if err != nil {
		t.Fatalf("call: %v\nstderr: %s", err, h.stderr)
	}
	mustf(t, res.NeedsInput() && res.RequestState != "" && len(res.Content) == 0, "held write answered %+v", res)
	el, ok := res.InputRequests["approval"].(*sdk.ElicitParams)
	mustf(t, ok && el.Mode == "form" && strings.Contains(el.Message, "PENDING_APPROVAL"), "input request %#v", res.InputRequests["approval"])
	st, err := sqlite.OpenExisting(s.db, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pending := pendingOf(t, st, "")
	mustf(t, len(pending) == 1 && strings.Contains(el.Message, pending[0].ID), "pending %v, message %q", pending, el.Message)

	state := res.RequestState
	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 0x02
	other := json.RawMessage(fmt.Sprintf(`{"path":%q,"content":"moved\n"}`, filepath.Join(s.sandbox, "other.txt")))
	for name, c := range map[string]struct {
		args  json.RawMessage
		state string
	}{"tampered": {args, string(tampered)}, "replayed into another request": {other, state}} {
		_, err := call(c.args, c.state)
		mustf(t, err != nil && strings.Contains(err.Error(), "requestState refused"), "%s state: err %v", name, err)
	}
	after := pendingOf(t, st, "")
	mustf(t, len(after) == 1 && after[0].ID == pending[0].ID && after[0].Status == agentrt.ApprovalPending, "a refused state changed the approvals: %v", after)
	for _, f := range []string{target, filepath.Join(s.sandbox, "other.txt")} {
		_, err := os.Stat(f)
		mustf(t, os.IsNotExist(err), "%s was written before any approval: %v", f, err)
	}

	decideOn(t, st, time.Now, pending[0], true, "ok")
	res, err = call(args, state)
	mustf(t, err == nil && !res.NeedsInput() && !res.IsError, "retry after approval: %+v, %v\nstderr: %s", res, err, h.stderr)
	b, _ := os.ReadFile(target)
	mustf(t, string(b) == "approved\n", "the approved write wrote %q", b)

	// Changed behind the proxy's back: a second run would undo it.
	writeFile(t, target, "changed since\n")
	res, err = call(args, "")
	mustf(t, err == nil && strings.HasPrefix(text(res), string(StatusDuplicate)), "re-issued call: %+v, %v", res, err)
	b, _ = os.ReadFile(target)
	mustf(t, string(b) == "changed since\n", "the re-issued call ran the write again: %q", b)
}

// A 2026-07-28 host's call whose _meta carries a W3C traceparent and
// tracestate begins a run that records them on run.created (from which
// export/otel makes the run a child of the host's trace); a call whose
// traceparent is not well formed still runs, and records none.
func TestProxy_StatelessHostTraceContextIsRecordedOnTheRun(t *testing.T) {
	s := newProcSetup(t)
	h := s.raw2026(t)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ path, parent string }{{"notes.txt", parent}, {"other.txt", "00-not-a-trace"}} {
		writeFile(t, filepath.Join(s.sandbox, c.path), "hi\n")
		r := h.request("tools/call", map[string]any{"name": "fs_read_text_file", "arguments": map[string]any{"path": filepath.Join(s.sandbox, c.path)},
			"_meta": map[string]any{"traceparent": c.parent, "tracestate": "rojo=00f067aa0ba902b7"}}, false)
		mustf(t, r.Error == nil && strings.Contains(string(r.Result), `hi\n`), "read %s: %s %+v", c.path, r.Result, r.Error)
	}
	st := readStore(t, s.db)
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	mustf(t, err == nil && len(runs) == 2, "runs %v, %v", runs, err)
	want := agentrt.TraceContext{Parent: parent, State: "rojo=00f067aa0ba902b7"}
	var got []agentrt.TraceContext
	for _, run := range runs {
		evs, err := st.ListEvents(context.Background(), run.ID)
		mustf(t, err == nil && len(evs) > 0, "events of %s: %v", run.ID, err)
		p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
		mustf(t, err == nil, "run.created: %v", err)
		if p.Trace != nil {
			got = append(got, *p.Trace)
		}
	}
	mustf(t, len(got) == 1 && got[0] == want, "recorded trace contexts %+v, want only %+v", got, want)
}

// With console_url configured, a 2026-07-28 host that takes URL
// elicitation is given, for a held write, an input_required whose one
// request is a url elicitation to the console's page of that very
// approval (the run and approval the operator's line on stderr names),
// its elicitationId the approval's, with a sealed requestState; a host
// that takes form elicitation alone is given the form naming the
// approval, with no link.
func TestProxy_ConsoleURLHeldCallElicitsTheApprovalPage(t *testing.T) {
	s := newProcSetup(t)
	s.setConfig(t, "console_url", "https://console.example:8443/base")
	h := s.raw2026(t)
	type elicitation struct {
		Mode, Message, URL string
		ElicitationID      string `json:"elicitationId"`
	}
	held := func(file string, elicit map[string]any) (elicitation, string) {
		t.Helper()
		caps := map[string]any{"elicitation": elicit}
		r := h.request("tools/call", map[string]any{"name": "fs_write_file",
			"arguments": map[string]any{"path": filepath.Join(s.sandbox, file), "content": "x"},
			"_meta":     map[string]any{"io.modelcontextprotocol/clientCapabilities": caps}}, false)
		var res struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string
				Params elicitation
			} `json:"inputRequests"`
			RequestState string `json:"requestState"`
		}
		mustf(t, r.Error == nil && json.Unmarshal(r.Result, &res) == nil && res.ResultType == "input_required" && len(res.InputRequests) == 1,
			"held write: %s %+v\nstderr: %s", r.Result, r.Error, h.stderr)
		ir := res.InputRequests["approval"]
		mustf(t, ir.Method == "elicitation/create", "input request %s", r.Result)
		return ir.Params, res.RequestState
	}
	el, state := held("a.txt", map[string]any{"url": map[string]any{}, "form": map[string]any{}})
	run, approval, _ := (&host{t: t, stderr: h.stderr}).lastApproval(1)
	want := "https://console.example:8443/base/runs/" + run + "/approvals/" + approval
	mustf(t, el.Mode == "url" && el.URL == want && el.ElicitationID == approval && state != "" && strings.Contains(el.Message, approval),
		"url elicitation %+v (state %q), want the page %s", el, state, want)

	el, _ = held("b.txt", map[string]any{"form": map[string]any{}})
	_, second, _ := (&host{t: t, stderr: h.stderr}).lastApproval(2)
	mustf(t, el.Mode == "form" && el.URL == "" && second != approval && strings.Contains(el.Message, second), "form-only host: %+v", el)
}
