package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// argScanner is a Disclosure that also scans arguments with ScanFunc.
type argScanner struct {
	agentrt.DisclosureFunc
	ScanFunc func(ctx context.Context, tool agentrt.ToolSpec, args json.RawMessage) ([]agentrt.ArgumentSecret, error)
}

func (a argScanner) ScanArguments(ctx context.Context, tool agentrt.ToolSpec, args json.RawMessage) ([]agentrt.ArgumentSecret, error) {
	return a.ScanFunc(ctx, tool, args)
}

// describing is a Disclosure that describes itself with DescribeFunc.
type describing struct {
	agentrt.DisclosureFunc
	DescribeFunc func() json.RawMessage
}

func (d describing) Describe() json.RawMessage { return d.DescribeFunc() }

// runOneCall starts run r1 whose one step calls tool with args.
func runOneCall(t *testing.T, e *env, d agentrt.Disclosure, pol agentrt.Policy, tool *kit.Counted, args string) (agentrt.Run, error) {
	t.Helper()
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return kit.Call(tool.Name, args), nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	cfg := e.Config(agent, pol, tool)
	cfg.Disclosure = d
	return e.DriverFor(cfg).StartWithID(context.Background(), "r1", "g", agentrt.DefaultLimits())
}

// The policy sees what the scanner found, sorted and without duplicates,
// in the PolicyJSON arguments it judges; a scanner that fails (or returns
// a kind it may not) fails the run before the call runs, so a call is
// never judged clean because the scan could not be made.
func TestArgumentScanner_FindingsReachThePolicyAndAFailureStopsTheCall(t *testing.T) {
	var got []agentrt.ArgumentSecret
	pol := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		got = req.Secrets
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	found := []agentrt.ArgumentSecret{{Pointer: "/k", Kind: "b"}, {Pointer: "/a", Kind: "x"}, {Pointer: "/k", Kind: "b"}}
	ok := argScanner{DisclosureFunc: redactPlanted, ScanFunc: func(context.Context, agentrt.ToolSpec, json.RawMessage) ([]agentrt.ArgumentSecret, error) {
		return found, nil
	}}
	tool := kit.NewTool("send", agentrt.RemoteMutation, `{"type":"object"}`, nil)
	if _, err := runOneCall(t, newEnv(t), ok, pol, tool, `{"k":"v","a":"w"}`); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (agentrt.ArgumentSecret{Pointer: "/a", Kind: "x"}) || got[1] != (agentrt.ArgumentSecret{Pointer: "/k", Kind: "b"}) {
		t.Fatalf("the policy saw %+v", got)
	}
	for name, scan := range map[string]func(context.Context, agentrt.ToolSpec, json.RawMessage) ([]agentrt.ArgumentSecret, error){
		"error": func(context.Context, agentrt.ToolSpec, json.RawMessage) ([]agentrt.ArgumentSecret, error) {
			return nil, errors.New("scanner down")
		},
		"panic": func(context.Context, agentrt.ToolSpec, json.RawMessage) ([]agentrt.ArgumentSecret, error) {
			panic("boom")
		},
		"bad kind": func(context.Context, agentrt.ToolSpec, json.RawMessage) ([]agentrt.ArgumentSecret, error) {
			return []agentrt.ArgumentSecret{{Pointer: "/k", Kind: "\x1b[2J"}}, nil
		},
	} {
		tool := kit.NewTool("send", agentrt.RemoteMutation, `{"type":"object"}`, nil)
		run, err := runOneCall(t, newEnv(t), argScanner{DisclosureFunc: redactPlanted, ScanFunc: scan}, agentrt.SideEffectPolicy{agentrt.RemoteMutation: agentrt.Allow}, tool, `{"k":"v"}`)
		if err != nil || run.Status != agentrt.RunFailed || tool.N() != 0 {
			t.Errorf("%s: run %s (%s), %v; the tool ran %d times", name, run.Status, run.ReasonDetail, err, tool.N())
		}
	}
}

// run.created records a Disclosure's description in canonical form, and
// a description that is not a JSON object is refused when the engine is
// built.
func TestRunCreated_RecordsTheDisclosureDescription(t *testing.T) {
	e := newEnv(t)
	d := describing{DisclosureFunc: redactPlanted, DescribeFunc: func() json.RawMessage { return json.RawMessage(`{"off": {"vault":["*"]}, "block":[]}`) }}
	if _, err := runOneCall(t, e, d, agentrt.DefaultPolicy(), kit.NewTool("read", agentrt.ReadOnly, `{"type":"object"}`, nil), `{}`); err != nil {
		t.Fatal(err)
	}
	evs := kit.EventsOf(t, e.store, "r1", agentrt.EventRunCreated)
	p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
	if err != nil || string(p.Disclosure) != `{"block":[],"off":{"vault":["*"]}}` {
		t.Fatalf("run.created disclosure %s, %v", p.Disclosure, err)
	}
	bad := describing{DisclosureFunc: redactPlanted, DescribeFunc: func() json.RawMessage { return json.RawMessage(`["not an object"]`) }}
	var ce *agentrt.ConfigError
	if _, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: e.store, Policy: agentrt.DefaultPolicy(), Disclosure: bad}}); !errors.As(err, &ce) || ce.Field != "Disclosure.Describe()" {
		t.Errorf("a description that is not an object: %v", err)
	}
}

// The arguments a surface shows of an approval have each secret its
// presentation lists redacted, read whole or not at all: arguments that
// cannot be read (a bounded copy) show as one marker, and an approval
// listing no secrets shows its arguments as recorded.
func TestApprovalArguments_RedactsWhatThePresentationListsAndFailsClosed(t *testing.T) {
	const key = "AKIA-PLANTED-0123456789"
	a := agentrt.Approval{Presentation: json.RawMessage(`{"secrets":[{"pointer":"/h/a~1b","kind":"k"},{"pointer":"/l/1","kind":"j"}]}`)}
	a.Request.Args = json.RawMessage(`{"h":{"a/b":"` + key + `","n":2},"l":["x","` + key + `"]}`)
	got, secrets := agentrt.ApprovalArguments(a)
	if want := `{"h":{"a/b":"[REDACTED:k]","n":2},"l":["x","[REDACTED:j]"]}`; string(got) != want || len(secrets) != 2 {
		t.Fatalf("shown %s (%d secrets), want %s", got, len(secrets), want)
	}
	a.Request.Args = json.RawMessage(`{"h":{"a/b":"` + key + `","n":2`) // cut short
	if got, _ := agentrt.ApprovalArguments(a); strings.Contains(string(got), key) || string(got) != `"[REDACTED:arguments]"` {
		t.Errorf("unreadable arguments shown as %s", got)
	}
	a.Presentation = json.RawMessage(`{"tool":"t"}`)
	a.Request.Args = json.RawMessage(`{"v":"` + key + `"}`)
	if got, secrets := agentrt.ApprovalArguments(a); string(got) != string(a.Request.Args) || secrets != nil {
		t.Errorf("with no secrets listed: %s, %v", got, secrets)
	}
}
