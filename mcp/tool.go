package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/schema"
	"github.com/agentrt/agentrt/trace"
)

// tool is one registered MCP tool.
type tool struct {
	conn  *Connection
	name  string // the server's name for it
	spec  agentrt.ToolSpec
	deny  []string
	fixed map[string]json.RawMessage
	pin   PinnedTool
	out   *jsonschema.Schema // the pinned output schema, nil if none
}

func (t *tool) Spec() agentrt.ToolSpec {
	s := t.spec
	s.InputSchema = append(json.RawMessage(nil), s.InputSchema...)
	return s
}

// truncMarker ends text cut to fit the cap.
const truncMarker = "\n[truncated]"

// CallOutcome says how far a failed call got: whether the server can have
// acted on it. A caller that must not repeat a side effect blindly (a
// proxy, a journal) branches on it; the error's text stays for people.
type CallOutcome string

const (
	// CallNotSent: refused before the request left this process (a denied
	// or fixed parameter, arguments that are not an object, a closed
	// connection, a tool changed since its pin). The server cannot have
	// acted on it. Left only by a new call.
	CallNotSent CallOutcome = "not_sent"
	// CallNoAnswer: the request was sent and no answer came (the tool's
	// timeout, the connection ended, the client is closing). The server may
	// or may not have acted.
	CallNoAnswer CallOutcome = "no_answer"
	// CallServerError: the server answered with an error, a JSON-RPC error
	// or a result flagged isError. The server says what it did.
	CallServerError CallOutcome = "server_error"
	// CallUnreadable: the server answered with a result this adapter
	// refuses (not acceptable JSON, against the pinned output schema, or a
	// request for more input). The server acted as far as it did; its
	// answer is not recorded.
	CallUnreadable CallOutcome = "unreadable"
)

// CallError is the error every failed Call of a loaded tool returns. Its
// text is the adapter's sentence, sanitized where a server chose it.
type CallError struct {
	Outcome CallOutcome
	// Message is the server's own error text, as it sent it (unsanitized,
	// capped at MaxContentBytes), for CallServerError; empty otherwise.
	Message string
	err     error
}

func (e *CallError) Error() string { return e.err.Error() }
func (e *CallError) Unwrap() error { return e.err }

// FailureClass is the runtime's class of the failure (agentrt.ClassifiedError),
// so the record says how far the call got.
func (e *CallError) FailureClass() agentrt.FailureClass {
	switch e.Outcome {
	case CallNotSent:
		return agentrt.FailureRefused
	case CallServerError:
		return agentrt.FailureServerError
	case CallUnreadable:
		return agentrt.FailureUnreadable
	}
	return agentrt.FailureUnknownOutcome
}

// FailureMessage is the server's own error text, for CallServerError.
func (e *CallError) FailureMessage() string { return e.Message }

// localWireCodes are the JSON-RPC error codes the SDK makes up itself for
// a call that never got an answer (client closing, server closing,
// rejected by the transport), not codes a server sent.
var localWireCodes = map[int64]bool{-32003: true, -32004: true, -32005: true}

// Call checks the arguments against the operator's deny and fixed lists,
// calls the server under the tool's timeout, and maps the result to
// content capped at MaxContentBytes. A server's failure is an error (an
// observation for the agent), never AbortRunError. Every error is a
// *CallError saying how far the call got.
func (t *tool) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	srv := t.conn.srv.Name
	fail := func(outcome CallOutcome, format string, args ...any) (agentrt.ToolResult, error) {
		err := fmt.Errorf("mcp: server %q: tool %q: "+format, append([]any{srv, trace.Sanitize(t.name)}, args...)...)
		return agentrt.ToolResult{}, &CallError{Outcome: outcome, err: err}
	}
	select {
	case <-t.conn.closed:
		return fail(CallNotSent, "%w", ErrClosed)
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, t.spec.Timeout)
	defer cancel()
	if err := t.conn.watch.check(ctx, t.name); err != nil {
		return agentrt.ToolResult{}, &CallError{Outcome: CallNotSent, err: err}
	}
	args, err := t.arguments(call.Args)
	if err != nil {
		return fail(CallNotSent, "%v", err)
	}
	s := &slot{}
	params := &sdk.CallToolParams{Name: t.name, Arguments: args}
	if fn := progressFrom(ctx); fn != nil {
		tok, done := t.conn.progress.add(fn)
		defer done()
		params.SetProgressToken(tok)
	}
	res, err := t.conn.cs.CallTool(withSlot(ctx, s), params)
	t.conn.tap.drop(s)
	if err != nil {
		if errors.Is(err, ErrNotAuthorized) {
			// Refused at the HTTP layer before the server acted on it.
			return fail(CallNotSent, "%w", ErrNotAuthorized)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(CallNoAnswer, "no answer within %s", t.spec.Timeout)
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && !localWireCodes[we.Code] {
			r, e := fail(CallServerError, "%w", &serverError{err})
			e.(*CallError).Message = we.Message
			return r, e
		}
		return fail(CallNoAnswer, "%w", &serverError{err})
	}
	if res.NeedsInput() {
		return fail(CallUnreadable, "the server asked for more input, which this adapter does not support")
	}
	r, err := readResult(s.result(), res)
	if err != nil {
		return fail(CallUnreadable, "%v", err)
	}
	return t.result(r)
}

// arguments checks the model's arguments against the operator's lists and
// injects the fixed values.
func (t *tool) arguments(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, fmt.Errorf("arguments must be a JSON object")
	}
	for _, d := range t.deny {
		if _, ok := args[d]; ok {
			return nil, fmt.Errorf("parameter %q is denied by the operator", d)
		}
	}
	if len(t.fixed) == 0 {
		return raw, nil
	}
	for k, v := range t.fixed {
		if _, ok := args[k]; ok {
			return nil, fmt.Errorf("parameter %q is fixed by the operator", k)
		}
		args[k] = v
	}
	return json.Marshal(args)
}

// callResult is a tools/call result read from the raw bytes (or, if none
// were captured, from the SDK's value).
type callResult struct {
	text       []string
	structured json.RawMessage // nil when absent
	isError    bool
	// blocks are every content block, typed, when one is not text.
	blocks []agentrt.ResultBlock
}

// readResult takes the text from the SDK's typed content (the SDK matches
// keys exactly, and text survives its decoding unchanged) and the
// structured content from the raw bytes, where numbers are as the server
// wrote them. Only the structured value is decoded from the raw result: the
// rest is skipped in one pass.
func readResult(raw json.RawMessage, res *sdk.CallToolResult) (*callResult, error) {
	r := &callResult{isError: res.IsError}
	typed := false
	for _, c := range res.Content {
		r.text = append(r.text, contentText(c))
		b := resultBlock(c)
		typed = typed || b.Type != agentrt.ResultText
		r.blocks = append(r.blocks, b)
	}
	if res.StructuredContent == nil {
		if !typed {
			r.blocks = nil
		}
		return r, nil
	}
	// With structured content the text blocks are kept too: a host shows
	// the model the text and hands the structure to code, both as sent.
	if raw != nil {
		v, err := topLevel(raw, "structuredContent")
		if err != nil {
			return nil, fmt.Errorf("the result cannot be read: %v", err)
		}
		if v != nil && !isNull(v) {
			r.structured = v
			return r, nil
		}
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, fmt.Errorf("structured content will not encode: %v", err)
	}
	r.structured = b
	return r, nil
}

// topLevel returns the value of key in a raw JSON object, matched exactly,
// or nil when the key is absent.
func topLevel(raw json.RawMessage, key string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var found json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if k == key {
			found = v
		}
	}
	return found, nil
}

func placeholder(typ string) string {
	switch typ {
	case "image":
		return "[image omitted]"
	case "audio":
		return "[audio omitted]"
	case "resource_link":
		return "[resource link omitted]"
	case "resource":
		return "[embedded resource omitted]"
	}
	return "[content omitted]"
}

// resultBlock is one content block as the runtime records it.
func resultBlock(c sdk.Content) agentrt.ResultBlock {
	switch c := c.(type) {
	case *sdk.TextContent:
		return agentrt.ResultBlock{Type: agentrt.ResultText, Text: c.Text}
	case *sdk.ImageContent:
		return agentrt.ResultBlock{Type: agentrt.ResultImage, MIMEType: c.MIMEType, Data: c.Data}
	case *sdk.AudioContent:
		return agentrt.ResultBlock{Type: agentrt.ResultAudio, MIMEType: c.MIMEType, Data: c.Data}
	case *sdk.ResourceLink:
		var size int64
		if c.Size != nil {
			size = *c.Size
		}
		return agentrt.ResultBlock{Type: agentrt.ResultResourceLink, URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
			MIMEType: c.MIMEType, Size: size}
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return agentrt.ResultBlock{Type: agentrt.ResultText, Text: placeholder("resource")}
		}
		return agentrt.ResultBlock{Type: agentrt.ResultResource, URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Data: c.Resource.Blob}
	}
	return agentrt.ResultBlock{Type: agentrt.ResultText, Text: placeholder("")}
}

func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return placeholder("image")
	case *sdk.AudioContent:
		return placeholder("audio")
	case *sdk.ResourceLink:
		return placeholder("resource_link")
	case *sdk.EmbeddedResource:
		return placeholder("resource")
	}
	return placeholder("")
}

// result maps a call result to what is recorded. Structured content that
// fits is the content, canonically encoded; structured content that fails
// the pinned output schema is an error; structured content over the cap is
// dropped, never cut, in favour of the text.
func (t *tool) result(r *callResult) (agentrt.ToolResult, error) {
	srv, max := t.conn.srv.Name, t.conn.srv.maxContent()
	summary := fmt.Sprintf("%s/%s: ", srv, trace.Sanitize(t.name))
	text := strings.Join(r.text, "\n")
	if r.isError {
		capped, _ := capText(text, max)
		var msg string
		_ = json.Unmarshal(capped, &msg)
		return agentrt.ToolResult{}, &CallError{Outcome: CallServerError, Message: msg,
			err: fmt.Errorf("%s%d bytes, error: %s", summary, len(text), trace.Sanitize(msg))}
	}
	dropped := 0
	if r.structured != nil {
		c, err := agentrt.CanonicalJSON(r.structured)
		if err != nil {
			return agentrt.ToolResult{}, unreadable("%sstructured content refused: %v", summary, err)
		}
		if t.out != nil {
			if path, reason, ok := validateOutput(t.out, c); !ok {
				return agentrt.ToolResult{}, unreadable("%sstructured content does not match the pinned output schema at %s: %s", summary, path, reason)
			}
		}
		if len(c) <= max {
			return agentrt.ToolResult{Content: c, Summary: fmt.Sprintf("%s%d bytes", summary, len(c)), Blocks: r.blocks}, nil
		}
		dropped = len(c)
	} else if t.out != nil {
		return agentrt.ToolResult{}, unreadable("%sthe tool has an output schema but its result carries no structured content", summary)
	}
	if dropped > 0 && len(r.text) == 0 {
		text = "[structured content dropped: too large]"
	}
	content, cut := capText(text, max)
	sum := fmt.Sprintf("%s%d bytes", summary, len(content))
	if cut {
		sum += ", truncated"
	}
	if dropped > 0 {
		sum += fmt.Sprintf(", structured content of %d bytes dropped for the text", dropped)
	}
	if len(r.blocks) > 0 {
		sum += fmt.Sprintf(", %d typed blocks", len(r.blocks))
	}
	return agentrt.ToolResult{Content: content, Summary: sum, Blocks: r.blocks}, nil
}

func unreadable(format string, args ...any) error {
	return &CallError{Outcome: CallUnreadable, err: fmt.Errorf(format, args...)}
}

// capText encodes s as a JSON string of at most max bytes (escapes and the
// truncation marker included), cutting at a rune boundary if it must. An
// invalid byte counts as the six bytes of the \ufffd it encodes to. A cap
// smaller than the encoded marker is raised to fit it.
func capText(s string, max int) (json.RawMessage, bool) {
	if n := 2 + encodedLen(truncMarker); max < n {
		max = n
	}
	if 2+encodedLen(s) <= max {
		b, _ := json.Marshal(s)
		return b, false
	}
	budget := max - 2 - encodedLen(truncMarker)
	used, cut := 0, 0
	for cut < len(s) {
		r, size := utf8.DecodeRuneInString(s[cut:])
		n := runeLen(r, size)
		if used+n > budget {
			break
		}
		used += n
		cut += size
	}
	b, _ := json.Marshal(s[:cut] + truncMarker)
	return b, true
}

func encodedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeLen(r, size)
		i += size
	}
	return n
}

// runeLen is how many bytes encoding/json writes for one decoded rune (HTML
// escaping on, as the canonical form has it).
func runeLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6 // \ufffd
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}

// compileOutput compiles a pinned output schema, first through the core's
// compiler (which refuses what reaches outside, again), then for
// validation, with a loader that fetches nothing.
func compileOutput(raw json.RawMessage) (*jsonschema.Schema, error) {
	if _, err := agentrt.CompileTool(agentrt.ToolSpec{Name: "output", SideEffect: agentrt.ReadOnly, Timeout: 1, InputSchema: raw}); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	const loc = "mcp:///output-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return schema.SafeCompile(c, loc)
}

// validateOutput checks canonical structured content against the output
// schema and returns the first failing path (a JSON pointer) and its
// reason. A panic in the validator is a failure.
func validateOutput(s *jsonschema.Schema, content json.RawMessage) (path, reason string, ok bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return "the top level", "it cannot be read", false
	}
	defer func() {
		if r := recover(); r != nil {
			path, reason, ok = "the top level", fmt.Sprintf("the validator failed: %v", r), false
		}
	}()
	err = s.Validate(v)
	if err == nil {
		return "", "", true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "the top level", trace.Sanitize(err.Error()), false
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return schema.Pointer(ve.InstanceLocation), trace.Sanitize(ve.ErrorKind.LocalizedString(printer)), false
}

var printer = message.NewPrinter(language.English)
