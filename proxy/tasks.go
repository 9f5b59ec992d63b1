package proxy

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/proxy/internal/seal"
)

// An MCP 2026-07-28 host that declares the tasks extension on a call is
// given a task handle when the call is held past the hold: the handle is
// a token sealed (under a key derived from the requestState's) over the
// approval and the request key, so a task is the request's, never a
// session's, and outlives a restart. tasks/get reads the request's open
// row: while the approval waits it reports working; once it is decided
// the call is collected off the poll, as an identical call would collect
// it, and the next poll reports the result. A request collected once
// keeps its result for every handle of it until the handle expires.

const (
	// taskTTL is how long a task handle opens after it is made.
	taskTTL = time.Hour
	// taskPoll is the polling interval a host is asked to keep.
	taskPoll = 2 * time.Second
)

// taskSealLabel derives the key task handles are sealed under.
const taskSealLabel = "task"

type taskSlotKey struct{}

// taskSlot carries a task handle from a tool's handler out to the
// middleware that answers it in place of the tool's result.
type taskSlot struct{ task *mcp2026.Task }

// taskBook is what the proxy knows of its tasks beyond the index: each
// request's collected result and whether a collection is under way,
// keyed on the request key and the approval it waited on.
type taskBook struct {
	mu sync.Mutex
	m  map[string]*taskEntry
}

type taskEntry struct {
	created, updated, expires time.Time
	running                   bool
	result                    json.RawMessage
}

func taskBookKey(s seal.State) string { return s.Key + "\x00" + s.ApprovalID }

// entry is the entry of s, made if there is none; entries past their
// handle's expiry are dropped.
func (b *taskBook) entry(s seal.State, now time.Time) *taskEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*taskEntry{}
	}
	maps.DeleteFunc(b.m, func(_ string, e *taskEntry) bool { return !now.Before(e.expires) })
	e := b.m[taskBookKey(s)]
	if e == nil {
		e = &taskEntry{created: now, updated: now, expires: s.Expires}
		b.m[taskBookKey(s)] = e
	}
	if s.Expires.After(e.expires) {
		e.expires = s.Expires
	}
	return e
}

// serveTasks gives a host-facing server the tasks extension: the task
// handle in place of a held call's result, the extension in
// server/discover, and tasks/get, tasks/update and tasks/cancel.
func (p *Proxy) serveTasks(s *sdk.Server) {
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch method {
			case "tools/call":
				if !mcp2026.New(mcp2026.Of(req)) || !mcp2026.HasTasks(req) {
					break
				}
				slot := &taskSlot{}
				res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
				if err == nil && slot.task != nil {
					return slot.task, nil
				}
				return res, err
			case "server/discover":
				res, err := next(ctx, method, req)
				if d, ok := res.(*sdk.DiscoverResult); ok && err == nil {
					out := *d
					caps := sdk.ServerCapabilities{}
					if d.Capabilities != nil {
						caps = *d.Capabilities
					}
					caps.Extensions = maps.Clone(caps.Extensions)
					caps.AddExtension(mcp2026.TasksExtension, map[string]any{})
					out.Capabilities = &caps
					return &out, nil
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	})
	_ = sdk.AddReceivingCustomMethod(s, "tasks/get", p.getTask)
	_ = sdk.AddReceivingCustomMethod(s, "tasks/update", p.ackTask)
	_ = sdk.AddReceivingCustomMethod(s, "tasks/cancel", p.ackTask)
}

// heldAsTask answers a held call of a host that declared the tasks
// extension with a task handle, when the call came through serveTasks.
func (p *Proxy) heldAsTask(ctx context.Context, key string, a answer) bool {
	slot, ok := ctx.Value(taskSlotKey{}).(*taskSlot)
	if !ok {
		return false
	}
	now := p.now()
	st := seal.State{ApprovalID: a.Approval, Key: key, Expires: now.Add(taskTTL)}
	id := p.sealer.Derive(taskSealLabel).Seal(st)
	e := p.tasks.entry(st, now)
	slot.task = p.taskOf(id, e, mcp2026.TaskWorking, p.heldMessage(a))
	slot.task.ResultType = "task"
	return true
}

// heldMessage is what a task waiting on an operator says: the held
// answer's text and, with a console, the approval's page.
func (p *Proxy) heldMessage(a answer) string {
	if page := p.approvalPage(a.Run, a.Approval); page != "" {
		return a.Text + " The approval's page: " + page
	}
	return a.Text
}

// taskOf is task id's handle; e's times are read under the book's lock,
// as a collection finishing on its own goroutine moves e.updated.
func (p *Proxy) taskOf(id string, e *taskEntry, status, msg string) *mcp2026.Task {
	p.tasks.mu.Lock()
	created, updated := e.created, e.updated
	p.tasks.mu.Unlock()
	return &mcp2026.Task{ResultType: "complete", TaskID: id, Status: status, StatusMessage: msg,
		CreatedAt: created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: updated.UTC().Format(time.RFC3339Nano),
		TTLMs: taskTTL.Milliseconds(), PollIntervalMs: taskPoll.Milliseconds()}
}

// openTask checks that a tasks request is of a host that declared the
// extension on it, and opens its handle.
func (p *Proxy) openTask(ss *sdk.ServerSession, params *mcp2026.TaskParams) (string, seal.State, error) {
	req := &sdk.ServerRequest[*mcp2026.TaskParams]{Session: ss, Params: params}
	if !mcp2026.HasTasks(req) {
		return "", seal.State{}, mcp2026.MissingTasks()
	}
	s, err := p.sealer.Derive(taskSealLabel).OpenAny(params.TaskID, p.now())
	if err != nil {
		return "", seal.State{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "task not found: the taskId is not one this proxy issued, or it has expired"}
	}
	return params.TaskID, s, nil
}

// ackTask acknowledges tasks/update and tasks/cancel of a task the proxy
// issued. Neither changes anything: the proxy asks the host nothing
// through a task, and only an operator decides a held call, so a
// cancelled task's approval still waits for one.
func (p *Proxy) ackTask(_ context.Context, ss *sdk.ServerSession, params *mcp2026.TaskParams) (*mcp2026.Ack, error) {
	if _, _, err := p.openTask(ss, params); err != nil {
		return nil, err
	}
	return &mcp2026.Ack{ResultType: "complete"}, nil
}

// getTask reports a task: its result once collected; working while its
// approval waits, or while the decided call is collected.
func (p *Proxy) getTask(ctx context.Context, ss *sdk.ServerSession, params *mcp2026.TaskParams) (*mcp2026.Task, error) {
	id, s, err := p.openTask(ss, params)
	if err != nil {
		return nil, err
	}
	now := p.now()
	e := p.tasks.entry(s, now)
	p.tasks.mu.Lock()
	result, running := e.result, e.running
	p.tasks.mu.Unlock()
	if result != nil {
		t := p.taskOf(id, e, mcp2026.TaskCompleted, "")
		t.Result = result
		return t, nil
	}
	if running {
		return p.taskOf(id, e, mcp2026.TaskWorking, "the decision is in; the call is being collected"), nil
	}
	var row *index.Row
	if err := p.ix.Update(ctx, func(tx *index.Tx) error {
		row, err = tx.OpenRow(p.cfg.Session, s.Key)
		return err
	}); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the record could not be read"}
	}
	t := p.tools[toolOfRow(row)]
	if row == nil || t == nil {
		p.finishTask(e, reply.Says(StatusUnavailable, "the task's call was settled outside the task; call the tool again to learn its outcome"))
		return p.getTask(ctx, ss, params)
	}
	if row.State == index.StateWaiting {
		a, err := p.store.GetApproval(ctx, row.RunID, row.ApprovalID)
		if err == nil && a.Status == agentrt.ApprovalPending && (a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt)) {
			w := reply.Pending(a.ID, 0)
			w.Run, w.Approval = row.RunID, a.ID
			return p.taskOf(id, e, mcp2026.TaskWorking, p.heldMessage(w)), nil
		}
	}
	p.tasks.mu.Lock()
	if e.running || e.result != nil {
		// Another poll got here first.
		p.tasks.mu.Unlock()
		return p.getTask(ctx, ss, params)
	}
	e.running, e.updated = true, now
	p.tasks.mu.Unlock()
	p.inflight.Add(1)
	go func() {
		defer p.inflight.Done()
		p.finishTask(e, p.collectTask(context.WithoutCancel(ctx), t, s.Key))
	}()
	return p.taskOf(id, e, mcp2026.TaskWorking, "the decision is in; the call is being collected"), nil
}

func toolOfRow(r *index.Row) string {
	if r == nil {
		return ""
	}
	return r.Tool
}

// finishTask records a collection's answer: the result, or, when the
// call waits on an operator again, nothing, so the next poll reads the
// row anew.
func (p *Proxy) finishTask(e *taskEntry, a answer) {
	var res json.RawMessage
	if a.Approval == "" {
		b, err := json.Marshal(a.Result())
		if err == nil {
			res = b
		}
	}
	p.tasks.mu.Lock()
	defer p.tasks.mu.Unlock()
	e.running, e.updated = false, p.now()
	if e.result == nil {
		e.result = res
	}
}

// collectTask matches a task's request against its open row, as an
// identical call would be matched, without holding: a decided call runs
// (once, whoever collects it first) or settles. A request whose row is
// gone is not begun anew: the task does not hold its arguments.
func (p *Proxy) collectTask(ctx context.Context, t *ptool, key string) answer {
	c := &call{t: t, key: key}
	for range maxAttempts {
		var row *index.Row
		err := p.ix.Update(ctx, func(tx *index.Tx) error {
			var err error
			row, err = tx.OpenRow(p.cfg.Session, key)
			return err
		})
		if err != nil {
			a, _ := p.internal(err, "the record could not be read")
			return a
		}
		if row == nil {
			return reply.Says(StatusUnavailable, "the task's call was settled outside the task; call the tool again to learn its outcome")
		}
		a, again := p.existing(ctx, c, row)
		if !again {
			return a
		}
	}
	return reply.Unavailable("it kept changing while being matched; poll the task again")
}
