// Package mcp2026 is what the proxy's host-facing side needs of MCP
// 2026-07-28 beyond what the go-sdk does for it: telling a request of the
// stateless revision from one of a session, the fields the revision
// requires on results the proxy builds itself, the input_required result
// a held call answers with, and the wire shapes of the tasks extension
// (io.modelcontextprotocol/tasks), which the go-sdk v1.8.0 knows only as
// a capability key.
package mcp2026

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the stateless revision.
const Version = "2026-07-28"

// New says whether a protocol version is of the stateless revision or
// later.
func New(version string) bool { return version >= Version }

// Of is the protocol version a request was made under: its _meta's for a
// stateless request, its session's otherwise.
func Of(req sdk.Request) string {
	type versioned interface{ ProtocolVersion() string }
	if v, ok := req.(versioned); ok {
		return v.ProtocolVersion()
	}
	return ""
}

// ErrBodyTooLarge marks a body past the bound Stateless reads.
var ErrBodyTooLarge = errors.New("mcp2026: the request body is larger than the bound")

// Stateless says whether an HTTP request is of the stateless revision:
// its MCP-Protocol-Version header names it, or, without the header and
// without a session, its JSON-RPC body carries the revision's
// protocolVersion in _meta. The body, read up to max bytes, is put back
// for the handler that serves the request.
func Stateless(r *http.Request, max int64) (bool, error) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return New(v), nil
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || r.Body == nil {
		return false, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	if err != nil {
		return false, err
	}
	if int64(len(b)) > max {
		return false, ErrBodyTooLarge
	}
	var msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil {
		return false, nil
	}
	var v string
	if json.Unmarshal(msg.Params.Meta[sdk.MetaKeyProtocolVersion], &v) != nil {
		return false, nil
	}
	return New(v), nil
}

// Complete gives res, a result the proxy built, the resultType
// "complete" the revision requires. The go-sdk keeps the field
// unexported and reads it from the wire, so it is set through JSON.
func Complete[R any, P interface {
	*R
	sdk.Result
}](res P) (P, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	if b, err = json.Marshal(m); err != nil {
		return nil, err
	}
	out := P(new(R))
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Private is the cache hint of a listing the proxy assembles: it depends
// on the operator's configuration and the servers behind it, so only the
// requesting user's client may keep it, and it is stale at once.
var Private = sdk.Cacheable{TTLMs: 0, CacheScope: "private"}

// HasElicitation says whether a request's client can be sent an
// elicitation, and in URL mode.
func HasElicitation(req *sdk.CallToolRequest) (ok, url bool) {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false, false
	}
	return true, caps.Elicitation.URL != nil
}

// InputRequired is the result a held call answers with: one elicitation
// (to a page at link when there is one and the client takes URL mode,
// else a message naming the approval) and the sealed state to retry
// with.
func InputRequired(message, link, elicitationID, state string, urlMode bool) *sdk.CallToolResult {
	el := &sdk.ElicitParams{Mode: "form", Message: message,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
	if link != "" && urlMode {
		el = &sdk.ElicitParams{Mode: "url", Message: message, URL: link, ElicitationID: elicitationID}
	}
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"approval": el}, RequestState: state}
}

// TasksExtension names the tasks extension: a held tools/call answers a
// task handle the client polls with tasks/get.
const TasksExtension = "io.modelcontextprotocol/tasks"

// CodeMissingCapability is the error a client is given for a request
// that needs a capability it did not declare.
const CodeMissingCapability = -32021

// HasTasks says whether a request's client declared the tasks extension
// on that very request (or, without per-request capabilities, on its
// session).
func HasTasks(req sdk.Request) bool {
	type capable interface {
		ClientCapabilities() *sdk.ClientCapabilities
	}
	c, ok := req.(capable)
	if !ok {
		return false
	}
	caps := c.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[TasksExtension]
	return ok
}

// The statuses of a task.
const (
	TaskWorking   = "working"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task is a task's state as the extension puts it on the wire: the
// handle a tools/call answers (resultType "task") and what tasks/get
// reports (resultType "complete", with the final result once there is
// one).
type Task struct {
	sdk.ResultBase
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
}

// TaskParams are the params of tasks/get, tasks/update and tasks/cancel:
// the task, and for tasks/update the responses the extension defines
// (the proxy asks the host nothing through a task, so it reads none).
type TaskParams struct {
	sdk.ParamsBase
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// Ack is the empty acknowledgement tasks/update and tasks/cancel answer.
type Ack struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
}

// MissingTasks is the error a client that did not declare the tasks
// extension on its request is given for a tasks method.
func MissingTasks() error {
	return &jsonrpc.Error{Code: CodeMissingCapability, Message: "missing required client capability: the tasks extension",
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)}
}
