package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// JSON nested deeper than 256 levels is refused where it enters: arguments
// and a result as invalid decisions kept out of band, tool content as a tool
// error keeping the bytes, a capability or presentation by failing the run.
// Nothing deep is stored as JSON, hashed, judged or executed.
func caseDriver_DeepJSONIsRefusedWhereItEnters(t *testing.T, bk *Backend) {
	const anySchema = `{"type":"object"}`
	deepArgs := `{"a":` + kit.Nested(256, "1") + `}`  // 257 levels
	limitArgs := `{"a":` + kit.Nested(255, "1") + `}` // 256 levels: accepted
	deep := kit.Nested(257, "1")

	t.Run("arguments", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, anySchema, nil)
		policy := kit.Recording(agentrt.DefaultPolicy())
		d := e.Driver(kit.Script(kit.Call("any", deepArgs), kit.Call("any", limitArgs), kit.Complete(`{}`)), policy, tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if args, _ := policy.Seen(); !reflect.DeepEqual(args, []string{limitArgs}) {
			t.Fatalf("policy saw %d requests, want only the one 256 deep", len(args))
		}
		if got := tool.Args(); !reflect.DeepEqual(got, []string{limitArgs}) {
			t.Fatalf("tool ran %d times, want only with the request 256 deep", len(got))
		}
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if st.Decision.Args != nil || st.Decision.InvalidArgs != deepArgs {
			t.Fatal("deep arguments not kept out of band")
		}
		if !strings.Contains(kit.ObsContent(t, st)["error"].(string), "256") {
			t.Fatalf("refusal does not say why: %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvToolStep, kit.EvComplete)
	})
	t.Run("result", func(t *testing.T) {
		e := newEnv(t, bk)
		d := e.Driver(kit.Script(kit.Complete(deep), kit.Complete(`{"ok":1}`)), agentrt.DefaultPolicy())
		run := startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if string(run.Result) != `{"ok":1}` {
			t.Fatalf("result = %.40s", run.Result)
		}
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if st.Decision.Result != nil || st.Decision.InvalidResult != deep {
			t.Fatal("deep result not kept out of band")
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvComplete)
	})
	t.Run("tool content", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, anySchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(deep)}, nil
		})
		d := e.Driver(kit.Script(kit.Call("any", `{}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if c := kit.ObsContent(t, st); c["content"] != deep || c["failure"] != "invalid_content" {
			t.Fatalf("tool error does not keep the bytes: %.200s", st.Observation.Content)
		}
		if st.Status != agentrt.StepFailed {
			t.Fatalf("step is %s", st.Status)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	for _, field := range []string{"capability", "presentation"} {
		t.Run(field, func(t *testing.T) {
			e := newEnv(t, bk)
			tool := kit.NewTool("send", agentrt.RemoteMutation, anySchema, nil)
			pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "k", Reason: "r",
				Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`)}
			if field == "capability" {
				pd.Capability = json.RawMessage(deep)
			} else {
				pd.Presentation = json.RawMessage(deep)
			}
			d := e.Driver(kit.Script(kit.Call("send", `{}`), kit.Complete(`{}`)), kit.Fixed(pd), tool)
			run := startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)
			if !strings.Contains(run.ReasonDetail, field) {
				t.Fatalf("detail %q does not name the %s", run.ReasonDetail, field)
			}
			if tool.N() != 0 {
				t.Fatal("tool ran")
			}
			if n := e.db.countRows(t, "SELECT * FROM approvals"); n != 0 {
				t.Fatalf("%d approvals written", n)
			}
			pe := kit.EventsOf(t, e.Store, "run-1", kit.StepPolicy)
			if len(pe) != 1 || strings.Contains(string(pe[0].Payload), "[[[[") {
				t.Fatalf("step.policy stores the deep value: %.200s", pe[0].Payload)
			}
			st := kit.MustSteps(t, e.Store, "run-1")[0]
			if st.Policy == nil || st.Policy.Capability != nil || st.Policy.Presentation != nil {
				t.Fatalf("step policy stores the deep value: %+v", st.Policy)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.StepFailed, kit.RunFinished})
		})
	}
	t.Run("tool schema", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, `{"type":"object","default":`+deep+`}`, nil)
		if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); !errors.Is(err, agentrt.ErrInvalidJSON) {
			t.Fatalf("NewDriver with a deep schema = %v, want ErrInvalidJSON", err)
		}
	})
}

// Numbers whose literal or exponent is past the bound are refused where they
// enter, against a schema that bounds them, without a panic: arguments and a
// result as invalid decisions, tool content as a tool error, a capability by
// failing the run, and a tool schema at registration.
func caseDriver_HugeNumbersAreRefusedWhereTheyEnter(t *testing.T, bk *Backend) {
	const numSchema = `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":1e9,"multipleOf":0.5}},"additionalProperties":false}`
	long := "1" + strings.Repeat("0", 10000) // 10,001 characters
	refused := []string{
		`{"n":1e-10000000}`,
		`{"n":0.1e-9223372036854775808}`,
		`{"n":1e10001}`,
		`{"n":` + long + `}`,
		`{"n":0.` + strings.Repeat("0", 10001) + `1}`,
	}
	t.Run("arguments and result", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.ReadOnly, numSchema, nil)
		var ds []agentrt.Decision
		for _, a := range refused {
			ds = append(ds, kit.Call("num", a))
		}
		ds = append(ds, kit.Complete(`{"n":1e20000}`), kit.Call("num", `{"n":1.5}`), kit.Complete(`{}`))
		policy := kit.Recording(agentrt.DefaultPolicy())
		d := e.Driver(kit.Script(ds...), policy, tool)
		startEnds(t, d, kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if args, _ := policy.Seen(); !reflect.DeepEqual(args, []string{`{"n":1.5}`}) {
			t.Fatalf("policy saw %q", args)
		}
		if got := tool.Args(); !reflect.DeepEqual(got, []string{`{"n":1.5}`}) {
			t.Fatalf("tool ran with %q", got)
		}
		steps := kit.MustSteps(t, e.Store, "run-1")
		for i := 0; i <= len(refused); i++ {
			kit.RequireObs(t, steps[i], agentrt.ObsInvalidDecision)
			if dec := steps[i].Decision; dec.Args != nil || dec.Result != nil {
				t.Fatalf("step %d stores the number as JSON", i)
			}
		}
		var want [][]kit.E
		want = append(want, kit.EvStart)
		for i := 0; i <= len(refused); i++ {
			want = append(want, kit.EvInvalid)
		}
		want = append(want, kit.EvToolStep, kit.EvComplete)
		kit.RequireEvents(t, e.Store, "run-1", want...)
	})
	t.Run("tool content", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.ReadOnly, numSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"n":1e-100000}`)}, nil
		})
		d := e.Driver(kit.Script(kit.Call("num", `{"n":1}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if c := kit.ObsContent(t, st); c["content"] != `{"n":1e-100000}` {
			t.Fatalf("tool error does not keep the bytes: %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	t.Run("capability", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.RemoteMutation, numSchema, nil)
		pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "k", Capability: json.RawMessage(`{"n":1e100000}`)}
		d := e.Driver(kit.Script(kit.Call("num", `{"n":1}`)), kit.Fixed(pd), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)
		if tool.N() != 0 || e.db.countRows(t, "SELECT * FROM approvals") != 0 {
			t.Fatal("tool ran or an approval was written")
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.StepFailed, kit.RunFinished})
	})
	t.Run("tool schema", func(t *testing.T) {
		for _, s := range []string{`{"type":"number","minimum":1e100000}`, `{"type":"number","maximum":` + long + `}`} {
			spec := agentrt.ToolSpec{Name: "num", InputSchema: json.RawMessage(s), SideEffect: agentrt.ReadOnly, Timeout: 1e9}
			if _, err := agentrt.CompileTool(spec); !errors.Is(err, agentrt.ErrInvalidJSON) {
				t.Fatalf("CompileTool(%.40s) = %v, want ErrInvalidJSON", s, err)
			}
			e := newEnv(t, bk)
			tool := kit.NewTool("num", agentrt.ReadOnly, s, nil)
			if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); !errors.Is(err, agentrt.ErrInvalidJSON) {
				t.Fatalf("NewDriver(%.40s) = %v, want ErrInvalidJSON", s, err)
			}
		}
	})
}

// A schema that refers outside itself, by $ref, $id or $schema, to a URL, a
// file or a relative document, refuses the tool at NewDriver; nothing is
// fetched. References inside the schema and to the standard metaschemas pass.
func caseNewDriver_SchemaReferencesOutsideItselfAreRefused(t *testing.T, bk *Backend) {
	var hits sync.Map
	var hitCount int
	var mu sync.Mutex
	srv := kit.NewCountingServer(t, func(path string) {
		mu.Lock()
		hitCount++
		mu.Unlock()
		hits.Store(path, true)
	})
	e := newEnv(t, bk)
	before := e.db.snapshot(t)
	refused := []struct{ schema, names string }{
		{`{"$ref":"` + srv + `/s.json"}`, srv + "/s.json"},
		{`{"type":"object","properties":{"a":{"$ref":"` + srv + `/s.json#/x"}}}`, srv + "/s.json"},
		{`{"$id":"` + srv + `/root.json","type":"object"}`, srv + "/root.json"},
		{`{"$schema":"` + srv + `/meta","type":"object"}`, srv + "/meta"},
		{`{"$ref":"file:///etc/passwd"}`, "file:///etc/passwd"},
		{`{"$ref":"other.json"}`, "other.json"},
		{`{"$defs":{"x":{"$id":"` + srv + `/x.json"}},"type":"object"}`, srv + "/x.json"},
		{`{"type":"object","items":{"$ref":"/etc/passwd"}}`, "/etc/passwd"},
	}
	for _, r := range refused {
		tool := kit.NewTool("t", agentrt.ReadOnly, r.schema, nil)
		_, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool))
		if err == nil {
			t.Fatalf("NewDriver accepted %s", r.schema)
		}
		if !strings.Contains(err.Error(), r.names) {
			t.Fatalf("NewDriver(%s) = %v; the error does not name %s", r.schema, err, r.names)
		}
		if _, err := agentrt.CompileTool(tool.ToolSpec); err == nil {
			t.Fatalf("CompileTool accepted %s", r.schema)
		}
	}
	for _, ok := range []string{
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`,
	} {
		tool := kit.NewTool("t", agentrt.ReadOnly, ok, nil)
		if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); err != nil {
			t.Fatalf("NewDriver refused a self-contained schema %s: %v", ok, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hitCount != 0 {
		var paths []string
		hits.Range(func(k, _ any) bool { paths = append(paths, k.(string)); return true })
		t.Fatalf("the server was asked for %v", paths)
	}
	e.db.requireUnchanged(t, before, "registering tools")
}
