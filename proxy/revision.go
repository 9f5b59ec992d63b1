package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
	"github.com/agentrt/agentrt/proxy/internal/seal"
)

// SealKeySuffix names the requestState key beside the index: the index's
// path and this suffix, written owner-only on first start.
const SealKeySuffix = ".seal-key"

// stateTTL bounds a sealed requestState: a host retries well within it,
// and a state kept longer is refused, deciding nothing.
const stateTTL = time.Hour

// ErrStateRefused marks a tools/call whose requestState the proxy did not
// issue for that request, or issued for an approval the request no longer
// waits on.
var ErrStateRefused = errors.New("proxy: requestState refused")

// callNew answers a tools/call of an MCP 2026-07-28 host. A requestState
// must open under the proxy's key for this very request and name the
// approval its open row waits on, or the call is refused before anything
// is matched or decided. A call held for an operator answers
// input_required with a new sealed state when the host takes
// elicitation, or a task handle when it declared the tasks extension
// (tasks.go); the retry, or any re-issue of the same request, is matched
// by its key as every call is, so it collects the decision and never
// runs twice.
func (p *Proxy) callNew(ctx context.Context, t *ptool, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	key, kerr := callKey(t.name, req.Params.Arguments)
	if st := req.Params.RequestState; st != "" {
		if kerr != nil {
			return nil, stateRefused("the arguments are not JSON")
		}
		if err := p.checkState(ctx, st, key); err != nil {
			return nil, err
		}
	}
	a := p.handle(ctx, t, req)
	if a.Approval == "" || kerr != nil {
		return a.Result(), nil
	}
	if p.heldAsTask(ctx, key, a) {
		return &sdk.CallToolResult{}, nil
	}
	ok, urlMode := mcp2026.HasElicitation(req)
	if !ok {
		return a.Result(), nil
	}
	state := p.sealer.Seal(seal.State{ApprovalID: a.Approval, Key: key, Expires: p.now().Add(stateTTL)})
	return mcp2026.InputRequired(a.Text, p.approvalPage(a.Run, a.Approval), a.Approval, state, urlMode), nil
}

// checkState opens a presented requestState and checks that the
// request's open row still waits on, or settled, the approval it names.
func (p *Proxy) checkState(ctx context.Context, state, key string) error {
	s, err := p.sealer.Open(state, key, p.now())
	if err != nil {
		var re *seal.RefusedError
		if errors.As(err, &re) {
			return stateRefused(re.Reason)
		}
		return stateRefused("it does not open")
	}
	var row *index.Row
	err = p.ix.Update(ctx, func(tx *index.Tx) error {
		row, err = tx.OpenRow(p.cfg.Session, key)
		return err
	})
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the record could not be read"}
	}
	if row == nil || row.ApprovalID != s.ApprovalID {
		return stateRefused("the approval it names is no longer this request's")
	}
	return nil
}

func stateRefused(reason string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: "requestState refused: " + reason + "; call again without it to be matched by the request"}
}

// callKey is the request key the call is matched by (agentrt.RequestKey).
func callKey(tool string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	canon, err := agentrt.CanonicalJSON(args)
	if err != nil {
		return "", err
	}
	return agentrt.RequestKey(tool, canon)
}

// approvalPage is the console's page for an approval, or "" without a
// console.
func (p *Proxy) approvalPage(run, approval string) string {
	if p.cfg.ConsoleURL == "" || run == "" {
		return ""
	}
	u, err := url.Parse(p.cfg.ConsoleURL)
	if err != nil {
		return ""
	}
	return u.JoinPath("runs", run, "approvals", approval).String()
}

// completed gives a result the proxy assembled itself what a 2026-07-28
// request's answer requires: resultType complete on prompts/get and
// resources/read (the SDK sets it on the rest).
func completed(req sdk.Request, res sdk.Result) (sdk.Result, error) {
	if !mcp2026.New(mcp2026.Of(req)) {
		return res, nil
	}
	switch r := res.(type) {
	case *sdk.GetPromptResult:
		return mcp2026.Complete(r)
	case *sdk.ReadResourceResult:
		return mcp2026.Complete(r)
	}
	return res, nil
}
