package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// scribble writes over everything reachable from v that a consumer could
// write: every byte of every byte slice up to its capacity, every string,
// number, flag and time, every element of every slice (to its capacity),
// every map entry, every pointee, and then the pointers themselves. Types
// that hand out values only through methods (Len and At) are walked
// through what At returns.
func scribble(v reflect.Value, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		scribble(v.Elem(), seen)
		if v.CanSet() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return
	case reflect.Interface:
		if !v.IsNil() {
			inner := reflect.New(v.Elem().Type()).Elem()
			inner.Set(v.Elem())
			scribble(inner, seen)
			if v.Elem().Kind() == reflect.Pointer {
				scribble(v.Elem(), seen)
			}
		}
		return
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		full := v.Slice3(0, v.Cap(), v.Cap())
		for i := 0; i < full.Len(); i++ {
			scribble(full.Index(i), seen)
		}
		if v.CanSet() {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
		}
		return
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scribble(v.Index(i), seen)
		}
		return
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e, seen)
			v.SetMapIndex(k, e)
		}
		return
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.CanSet() {
				v.Set(reflect.ValueOf(time.Unix(1, 0)))
			}
			return
		}
		if at := methodOf(v, "At"); at.IsValid() {
			n := methodOf(v, "Len").Call(nil)[0].Interface().(int)
			for i := 0; i < n; i++ {
				got := at.Call([]reflect.Value{reflect.ValueOf(i)})[0]
				own := reflect.New(got.Type()).Elem()
				own.Set(got)
				scribble(own, seen)
			}
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i), seen)
			}
		}
		return
	}
	if !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("evil")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint8:
		v.SetUint('X')
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(v.Uint() + 7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 7)
	}
}

// viaAt is every step of l as At returns it, back in record form.
func viaAt(l agentrt.Steps) []agentrt.Step {
	var out []agentrt.Step
	for _, st := range l.All() {
		out = append(out, st.Step())
	}
	if l.Len() > 0 && !reflect.DeepEqual(l.At(l.Len()-1).Step(), out[len(out)-1]) {
		panic("At and All disagree")
	}
	return out
}

func methodOf(v reflect.Value, name string) reflect.Value {
	if m := v.MethodByName(name); m.IsValid() {
		return m
	}
	if v.CanAddr() {
		return v.Addr().MethodByName(name)
	}
	return reflect.Value{}
}

// scribbleAll scribbles over each of vs (pointers to what was handed).
func scribbleAll(vs ...any) {
	seen := map[uintptr]bool{}
	for _, v := range vs {
		scribble(reflect.ValueOf(v).Elem(), seen)
	}
}

// Every consumer writes over everything it is handed, on every call, with
// reflection: the run, every step's decision, arguments, policy and
// observation bytes, approvals, tools, requests, events, down to the
// capacity of every slice. Every later view, the writer's own included, of
// steps that did not change still equals the store, and so does every
// view of the other consumers; the tools run with the recorded arguments.
// The run has several steps in one session before a pause and several
// after the resume, so each consumer is handed the same unchanged steps
// and approval again and again.
func caseDriver_ConsumersCannotCorruptTheirOwnLaterViews(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	big := json.RawMessage(fmt.Sprintf(`{"rows":[%q,%q]}`, "<row one>", "row two"))
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: append(json.RawMessage(nil), big...), Summary: "read " + string(c.Args)}, nil
	})
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	rm := kit.NewTool("rm", agentrt.Destructive, kit.PathSchema, nil)
	specs := []agentrt.ToolSpec{read.Spec(), rm.Spec(), send.Spec()}
	decisions := []agentrt.Decision{
		kit.Call("read", `{"path":"/a"}`), kit.Call("rm", `{"path":"/"}`), kit.Call("read", `{"path":7}`),
		kit.Call("read", `{"path":"/b"}`), kit.Call("send", `{"path":"/c"}`),
		kit.Call("read", `{"path":"/d"}`), kit.Call("read", `{"path":"/e"}`), kit.Call("read", `{"path":"/f"}`),
		kit.Complete(`{"r":1}`),
	}

	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	calls := map[string]int{}
	compare := func(who string, run agentrt.Run, list agentrt.Steps, approvals []agentrt.Approval) {
		calls[who]++
		fresh := kit.MustSteps(t, e.Store, "run-1")
		for _, steps := range [][]agentrt.Step{list.Records(), viaAt(list)} {
			if len(steps) > len(fresh) || !reflect.DeepEqual(steps, nilIfEmpty(fresh[:len(steps)])) {
				fail("%s, call %d, was handed steps\n %+v\nthe store holds\n %+v", who, calls[who], steps, fresh)
			}
		}
		if fa := kit.MustApprovals(t, e.Store, "run-1"); !reflect.DeepEqual(approvals, fa) {
			fail("%s, call %d, was handed approvals\n %+v\nthe store holds\n %+v", who, calls[who], approvals, fa)
		}
		if fr := kit.MustRun(t, e.Store, "run-1"); run.ID != fr.ID || run.Goal != fr.Goal || run.StepCount != fr.StepCount || run.Status != fr.Status {
			fail("%s, call %d, was handed the run %+v; the store holds %+v", who, calls[who], run, fr)
		}
	}

	var handedBack []any // what consumers returned, written over once the driver has it
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		scribbleAll(handedBack...)
		handedBack = nil
		compare("the agent", in.Run, in.Steps, in.Approvals.Records())
		if !reflect.DeepEqual(in.Tools, specs) {
			fail("the agent, call %d, was handed tools %+v", calls["the agent"], in.Tools)
		}
		d := decisions[in.Steps.Len()]
		d.Args, d.Result = append(json.RawMessage(nil), d.Args...), append(json.RawMessage(nil), d.Result...)
		scribbleAll(&in)
		handedBack = append(handedBack, &d)
		return d, nil
	})
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		scribbleAll(handedBack...)
		handedBack = nil
		compare("the policy", view.Run, view.Steps, view.Approvals.Records())
		pd, err := agentrt.DefaultPolicy().Evaluate(ctx, req, view)
		scribbleAll(&req, &view)
		handedBack = append(handedBack, &pd)
		return pd, err
	})
	cfg := e.Config(agent, policy, read, rm, send)
	cfg.Observer = func(ev agentrt.Event) { scribbleAll(&ev) }
	d := e.DriverFor(cfg)

	startPaused(t, d, "run-1", kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }))
	a := kit.PendingApproval(t, e.Store, "run-1")
	e.approve(t, a, "")
	resumeCompletes(t, d, "run-1")
	for _, p := range problems {
		t.Error(p)
	}
	if calls["the agent"] != len(decisions) || calls["the policy"] != 8 {
		t.Errorf("the agent was asked %d times and the policy %d; want %d and 8", calls["the agent"], calls["the policy"], len(decisions))
	}
	if got, want := read.Args(), []string{`{"path":"/a"}`, `{"path":"/b"}`, `{"path":"/d"}`, `{"path":"/e"}`, `{"path":"/f"}`}; !reflect.DeepEqual(got, want) {
		t.Errorf("read ran with %q, want %q", got, want)
	}
	if got := send.Args(); !reflect.DeepEqual(got, []string{`{"path":"/c"}`}) {
		t.Errorf("send ran with %q", got)
	}
	if n := len(rm.Args()); n != 0 {
		t.Errorf("rm ran %d times", n)
	}
	steps := kit.MustSteps(t, e.Store, "run-1")
	for i, want := range decisions {
		got := steps[i].Decision
		if got == nil || got.Kind != want.Kind || got.Tool != want.Tool || string(got.Args) != string(want.Args) && got.InvalidArgs == "" {
			t.Errorf("step %d decision stored as %+v, want %+v", i, got, want)
		}
	}
	for _, i := range []int{0, 3, 5, 6, 7} {
		if o := steps[i].Observation; o == nil || string(o.Content) != `{"rows":["\u003crow one\u003e","row two"]}` {
			t.Errorf("step %d observation stored as %+v", i, o)
		}
	}
	if as := kit.MustApprovals(t, e.Store, "run-1"); len(as) != 1 || as[0].Hash != a.Hash || agentrt.VerifyApproval(as[0]) != nil {
		t.Errorf("approvals = %+v", as)
	}
}
