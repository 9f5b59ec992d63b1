package replay

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
)

func textRequest(text string) agentrt.ModelRequest {
	return agentrt.ModelRequest{System: "sys", Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: text}}}}}
}

// Scripted serves in order, returns per-index errors in place of a
// response, records requests as copies, and names the call that ran past.
func TestScripted_ServesInOrderAndRecordsRequests(t *testing.T) {
	boom := errors.New("boom")
	s := &Scripted{
		Responses: []agentrt.ModelResponse{{Text: "one"}, {Text: "skipped"}, {Text: "three"}},
		Errors:    map[int]error{1: boom},
	}
	if s.Name() != "scripted" {
		t.Fatalf("name = %q", s.Name())
	}
	ctx := context.Background()
	req := textRequest("a")
	if r, err := s.Generate(ctx, req); err != nil || r.Text != "one" {
		t.Fatalf("call 0: %+v %v", r, err)
	}
	req.Messages[0].Content[0].Text = "changed after the call"
	if _, err := s.Generate(ctx, textRequest("b")); err != boom {
		t.Fatalf("call 1: %v", err)
	}
	if r, err := s.Generate(ctx, textRequest("c")); err != nil || r.Text != "three" {
		t.Fatalf("call 2: %+v %v", r, err)
	}
	_, err := s.Generate(ctx, textRequest("d"))
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Call != 3 || !errors.Is(err, ErrScriptExhausted) {
		t.Fatalf("call 3: %v", err)
	}
	got := s.Requests()
	if len(got) != 4 || got[0].Messages[0].Content[0].Text != "a" || got[3].Messages[0].Content[0].Text != "d" {
		t.Fatalf("requests = %+v", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Generate(cctx, textRequest("e")); !errors.Is(err, context.Canceled) || s.Calls() != 4 {
		t.Fatalf("cancelled: %v, calls %d", err, s.Calls())
	}
}

// Concurrent calls each get a distinct response.
func TestScripted_ConcurrentCallsAreServedOnce(t *testing.T) {
	s := &Scripted{}
	for i := 0; i < 50; i++ {
		s.Responses = append(s.Responses, agentrt.ModelResponse{Text: string(rune('A' + i))})
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Generate(context.Background(), textRequest("x"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil || seen[r.Text] {
				t.Errorf("response %q served twice or failed: %v", r.Text, err)
			}
			seen[r.Text] = true
		}()
	}
	wg.Wait()
}

// Numbers keep their literal text, so integers past float64 precision do not
// collide; whitespace and key order in raw JSON do not matter.
func TestKey_LargeIntegersDoNotCollide(t *testing.T) {
	withInput := func(input string) agentrt.ModelRequest {
		return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolUse, ToolUseID: "s", Name: "t", Input: json.RawMessage(input)}}}}}
	}
	a, _ := Key("m", withInput(`{"n":9007199254740993}`))
	b, _ := Key("m", withInput(`{"n":9007199254740992}`))
	if a == b {
		t.Fatal("integers past 2^53 collide")
	}
	c, _ := Key("m", withInput(`{"b": 1, "a": [1, 2]}`))
	d, _ := Key("m", withInput(`{"a":[1,2],"b":1}`))
	if c != d {
		t.Fatal("key order or whitespace changed the key")
	}
	if e, _ := Key("other", withInput(`{"a":[1,2],"b":1}`)); e == d {
		t.Fatal("the model name does not key")
	}
	if _, err := Key("m", withInput(`{"n":`)); err == nil {
		t.Fatal("invalid raw JSON must have no key")
	}
}

// The key of a fixed request is pinned: a change would orphan every recording.
func TestKey_Pinned(t *testing.T) {
	req := agentrt.ModelRequest{
		System:          "You are careful.",
		Messages:        []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "List files <here> & now."}}}},
		Tools:           []agentrt.ToolSpec{{Name: "list", Description: "Lists.", InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly, Timeout: 5e9}},
		MaxOutputTokens: 1024,
	}
	got, err := Key("openai:gpt-test", req)
	if err != nil {
		t.Fatal(err)
	}
	// Cross-checked with an independent implementation: sorted keys, compact,
	// HTML characters escaped as encoding/json does.
	const want = "25e3a218640f00834ce820676272bc4168b9c34efd394a35be2e9ded70e11333"
	if got != want {
		t.Fatalf("Key = %s, want %s", got, want)
	}
}

// A recorded session replays byte for byte, identical requests in order, and
// a request made more often than recorded, or never, is not recorded.
func TestRecorder_RoundTripThroughTheReplayer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	raw := `{"id":"chatcmpl-1",  "choices":[{"message":{"content":"<b>hi</b> & bye"}}]}` + "\n"
	inner := &Scripted{ModelName: "openai:gpt-test", Responses: []agentrt.ModelResponse{
		{Text: "first", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 5, OutputTokens: 2}, Raw: json.RawMessage(raw)},
		{ToolUses: []agentrt.ToolUse{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path": "a",`)}}, StopReason: agentrt.StopToolUse, Raw: []byte{0xff, 0xfe}},
		{Text: "other", StopReason: agentrt.StopEndTurn},
	}}
	rec := &Recorder{Inner: inner, Dir: dir}
	ctx := context.Background()
	var want []agentrt.ModelResponse
	for _, text := range []string{"same", "same", "different"} {
		r, err := rec.Generate(ctx, textRequest(text))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	key, _ := Key("openai:gpt-test", textRequest("same"))
	names := dirNames(t, dir)
	if len(names) != 3 || !contains(names, key+".json") || !contains(names, key+".2.json") {
		t.Fatalf("files = %v", names)
	}

	rep := &Replayer{ModelName: "openai:gpt-test", Dir: dir}
	for i, text := range []string{"same", "same", "different"} {
		got, err := rep.Generate(ctx, textRequest(text))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("replay %d = %+v\nwant %+v", i, got, want[i])
		}
	}
	if got, _ := (&Replayer{ModelName: "openai:gpt-test", Dir: dir}).Generate(ctx, textRequest("same")); string(got.Raw) != raw {
		t.Fatalf("raw bytes changed: %q", got.Raw)
	}
	_, err := rep.Generate(ctx, textRequest("same"))
	var nr *NotRecordedError
	if !errors.As(err, &nr) || nr.Recorded != 2 || nr.Requested != 3 || !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), key[:12]) {
		t.Fatalf("over-request: %v", err)
	}
	if _, err = rep.Generate(ctx, textRequest("never")); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err = (&Replayer{ModelName: "another", Dir: dir}).Generate(ctx, textRequest("same")); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("another model name: %v", err)
	}
}

// A failed call is not recorded, and a request with no key is refused before
// the inner model is called.
func TestRecorder_RecordsOnlySuccessfulExchanges(t *testing.T) {
	dir := t.TempDir()
	inner := &Scripted{Responses: []agentrt.ModelResponse{{Text: "x"}}, Errors: map[int]error{0: &agentrt.TransientError{Err: errors.New("503")}}}
	rec := &Recorder{Inner: inner, Dir: dir}
	var te *agentrt.TransientError
	if _, err := rec.Generate(context.Background(), textRequest("a")); !errors.As(err, &te) {
		t.Fatalf("err = %v, want the inner error", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("a failed call was recorded: %v", names)
	}
	bad := agentrt.ModelRequest{Tools: []agentrt.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{`)}}}
	if _, err := rec.Generate(context.Background(), bad); err == nil || inner.Calls() != 1 {
		t.Fatalf("err = %v, calls = %d: a request with no key must not reach the model", err, inner.Calls())
	}
}

// The first exchange of a key in a Recorder's life deletes repeats an
// earlier session left, so a shorter session cannot replay stale ones.
func TestRecorder_FirstExchangeClearsStaleRepeats(t *testing.T) {
	dir := t.TempDir()
	key, _ := Key("scripted", textRequest("a"))
	other, _ := Key("scripted", textRequest("b"))
	for _, n := range []string{key + ".2.json", key + ".3.json", other + ".2.json"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := &Recorder{Inner: &Scripted{Responses: []agentrt.ModelResponse{{Text: "x"}}}, Dir: dir}
	if _, err := rec.Generate(context.Background(), textRequest("a")); err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)
	if !reflect.DeepEqual(names, sorted(key+".json", other+".2.json")) {
		t.Fatalf("files = %v", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func sorted(s ...string) []string { sort.Strings(s); return s }

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
