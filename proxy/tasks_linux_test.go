package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawHost speaks JSON-RPC to the real binary over stdio line by line, as
// an MCP 2026-07-28 host does: no initialize, each request carrying its
// protocol version, client info and capabilities in _meta. It shows the
// wire as sent, which the go-sdk client would decode away (a task
// handle's fields are no CallToolResult's).
type rawHost struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
	next   int
}

func (s *procSetup) raw2026(t *testing.T) *rawHost {
	t.Helper()
	cmd := exec.Command(s.proxyBin, "-config", s.config)
	h := &rawHost{t: t, stderr: &syncBuffer{}}
	cmd.Stderr = h.stderr
	var err error
	if h.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.out = bufio.NewScanner(out)
	h.out.Buffer(make([]byte, 1<<20), 16<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return h
}

type rawReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// request sends method with params and _meta (tasks: the tasks extension
// declared; params' own _meta added) and reads lines up to its answer, skipping notifications.
func (h *rawHost) request(method string, params map[string]any, tasks bool) rawReply {
	h.t.Helper()
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-host", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
	if extra, ok := params["_meta"].(map[string]any); ok {
		maps.Copy(meta, extra)
	}
	params["_meta"] = meta
	h.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.next, "method": method, "params": params})
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		h.t.Fatalf("write %s: %v\nstderr: %s", method, err, h.stderr)
	}
	for h.out.Scan() {
		var m struct {
			ID *int `json:"id"`
			rawReply
		}
		if err := json.Unmarshal(h.out.Bytes(), &m); err != nil {
			h.t.Fatalf("line %q: %v", h.out.Bytes(), err)
		}
		if m.ID != nil && *m.ID == h.next {
			return m.rawReply
		}
	}
	h.t.Fatalf("no answer to %s: %v\nstderr: %s", method, h.out.Err(), h.stderr)
	return rawReply{}
}

type wireTask struct {
	ResultType    string `json:"resultType"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	TTLMs         int64  `json:"ttlMs"`
	Result        *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
}

func (h *rawHost) task(r rawReply) wireTask {
	h.t.Helper()
	var tk wireTask
	if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
		h.t.Fatalf("not a task: %s %+v\nstderr: %s", r.Result, r.Error, h.stderr)
	}
	return tk
}

// A 2026-07-28 host that declares the tasks extension is held for the
// configured hold, then given a task handle (resultType "task") in place
// of the call's result; server/discover lists the extension. tasks/get
// reports the task working, naming the approval, and nothing is written.
// A tampered handle, and a poll from a host that did not declare the
// extension, are refused. The real agentrt approves; the next polls
// collect the result, the same each time, and the write ran once; the
// request re-issued as a plain call is matched by the request (DUPLICATE)
// and does not run again.
func TestProxy_StatelessHostLongHoldThroughATaskHandle(t *testing.T) {
	s := newProcSetup(t)
	s.setConfig(t, "hold", "1s")
	h := s.raw2026(t)
	d := h.request("server/discover", map[string]any{}, true)
	mustf(t, d.Error == nil && strings.Contains(string(d.Result), `"io.modelcontextprotocol/tasks":{}`), "discover: %s %+v", d.Result, d.Error)

	target := filepath.Join(s.sandbox, "out.txt")
	call := map[string]any{"name": "fs_write_file", "arguments": map[string]any{"path": target, "content": "approved\n"}}
	began := time.Now()
	handle := h.task(h.request("tools/call", call, true))
	mustf(t, time.Since(began) >= time.Second, "the call answered after %s, before the 1s hold", time.Since(began))
	mustf(t, handle.ResultType == "task" && handle.Status == "working" && handle.TaskID != "" && handle.TTLMs > 0, "handle %+v", handle)
	run, approval, _ := (&host{t: t, stderr: h.stderr}).lastApproval(1)

	got := h.task(h.request("tasks/get", map[string]any{"taskId": handle.TaskID}, true))
	mustf(t, got.ResultType == "complete" && got.Status == "working" && strings.Contains(got.StatusMessage, approval) && got.Result == nil,
		"pending task: %+v", got)
	tampered := []byte(handle.TaskID)
	tampered[len(tampered)/2] ^= 0x04
	bad := h.request("tasks/get", map[string]any{"taskId": string(tampered)}, true)
	mustf(t, bad.Error != nil && bad.Error.Code == -32602, "tampered handle: %s %+v", bad.Result, bad.Error)
	undeclared := h.request("tasks/get", map[string]any{"taskId": handle.TaskID}, false)
	mustf(t, undeclared.Error != nil && undeclared.Error.Code == -32021, "undeclared host: %s %+v", undeclared.Result, undeclared.Error)
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "written before any approval: %v", err)

	s.agentrt(t, "approve", run, "-approval", approval, "-note", "ok")
	waitFor(t, "the task to complete", func() bool {
		got = h.task(h.request("tasks/get", map[string]any{"taskId": handle.TaskID}, true))
		return got.Status == "completed"
	})
	mustf(t, got.Result != nil && !got.Result.IsError && len(got.Result.Content) == 1 && !startsWithStatus(got.Result.Content[0].Text),
		"completed task: %+v", got)
	first := fmt.Sprintf("%+v", *got.Result)
	b, _ := os.ReadFile(target)
	mustf(t, string(b) == "approved\n", "the approved write wrote %q", b)

	// Changed behind the proxy's back: a second run would undo it.
	writeFile(t, target, "changed since\n")
	again := h.task(h.request("tasks/get", map[string]any{"taskId": handle.TaskID}, true))
	mustf(t, again.Status == "completed" && fmt.Sprintf("%+v", *again.Result) == first, "second poll: %+v", again)
	var plain struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	re := h.request("tools/call", call, false)
	mustf(t, re.Error == nil && json.Unmarshal(re.Result, &plain) == nil && len(plain.Content) == 1 &&
		strings.HasPrefix(plain.Content[0].Text, string(StatusDuplicate)), "re-issued call: %s %+v", re.Result, re.Error)
	b, _ = os.ReadFile(target)
	mustf(t, string(b) == "changed since\n" && s.toolStarts(t) == 1, "the write ran again: %q, %d starts", b, s.toolStarts(t))
}
