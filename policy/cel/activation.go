package cel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	agentrt "github.com/agentrt/agentrt"
)

// Bounds on what an approval's presentation and capability may become.
const (
	maxValueDepth = 32
	// MaxApprovalBytes bounds the JSON of one presentation or capability.
	MaxApprovalBytes = 64 << 10
)

// activation hands one request to the expressions. Each variable is built
// the first time an expression reads it, and at most once per request: a
// file whose rules never read args never decodes them.
type activation struct {
	p    *Policy
	req  agentrt.ToolRequest
	view agentrt.RunView

	name, side, hash ref.Val
	secrets          ref.Val
	args             ref.Val
	argsErr          error
	hashErr          error
}

var _ interpreter.Activation = (*activation)(nil)

func (p *Policy) newActivation(req agentrt.ToolRequest, view agentrt.RunView) *activation {
	return &activation{p: p, req: req, view: view}
}

// runCounters is the one place a policy reads the run it is shown, so a
// change to RunView's shape is a change here only.
func runCounters(v *agentrt.RunView) (steps, modelCalls int, usage agentrt.Usage, cost agentrt.Micros, active time.Duration, approvals int) {
	r := &v.Run
	return r.StepCount, r.ModelCalls, r.Usage, r.EstimatedCost, r.ActiveTime, v.Approvals.Len()
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varToolName:
		if a.name == nil {
			a.name = types.String(a.req.Spec.Name)
		}
		return a.name, true
	case varToolSide:
		if a.side == nil {
			a.side = types.String(a.req.Spec.SideEffect)
		}
		return a.side, true
	case varToolSpecHash:
		if a.hash == nil {
			h, err := a.p.specHash(a.req.Spec)
			if err != nil {
				a.hashErr = err
				a.hash = types.NewErr("the tool's spec hash: %v", err)
			} else {
				a.hash = types.String(h)
			}
		}
		return a.hash, true
	case varSecrets:
		if a.secrets == nil {
			list := make([]map[string]string, 0, len(a.req.Secrets))
			for _, s := range a.req.Secrets {
				list = append(list, map[string]string{"pointer": s.Pointer, "kind": s.Kind})
			}
			a.secrets = types.NewDynamicList(types.DefaultTypeAdapter, list)
		}
		return a.secrets, true
	case varArgs:
		if a.args == nil {
			v, err := decodeArgs(a.req.Args, a.p.argsBytes)
			if err != nil {
				a.argsErr = err
				a.args = types.NewErr("args: %v", err)
			} else {
				a.args = v
			}
		}
		return a.args, true
	}
	steps, calls, usage, cost, active, approvals := runCounters(&a.view)
	switch name {
	case varRunSteps:
		return types.Int(steps), true
	case varRunModel:
		return types.Int(calls), true
	case varRunTokens:
		return types.Int(usage.InputTokens + usage.OutputTokens), true
	case varRunInput:
		return types.Int(usage.InputTokens), true
	case varRunOutput:
		return types.Int(usage.OutputTokens), true
	case varRunCost:
		return types.Int(cost), true
	case varRunActive:
		return types.Duration{Duration: active}, true
	case varRunApprovals:
		return types.Int(approvals), true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// failure turns an evaluation error into an EvalError, naming the input
// that could not be built when that was the cause.
func (a *activation) failure(r *rule, fieldName string, ex *expr, err error) error {
	switch {
	case ex.usesArgs && a.argsErr != nil:
		return &EvalError{Rule: r.name, Field: "args", Reason: a.argsErr.Error()}
	case ex.usesHash && a.hashErr != nil:
		return &EvalError{Rule: r.name, Field: "tool.spec_hash", Reason: a.hashErr.Error()}
	}
	return evalError(r.name, fieldName, err)
}

func (a *activation) evalBool(r *rule, ex *expr) (bool, error) {
	out, _, err := ex.prg.Eval(a)
	if err != nil {
		return false, a.failure(r, "when", ex, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &EvalError{Rule: r.name, Field: "when", Reason: fmt.Sprintf("the expression gave %s, not a boolean", out.Type())}
	}
	return bool(b), nil
}

// outcome is rule r's decision about the request: for require_approval, its
// presentation and capability evaluated into JSON objects.
func (a *activation) outcome(r *rule) (agentrt.PolicyDecision, error) {
	pd := r.decision
	if pd.Outcome != agentrt.RequireApproval {
		return pd, nil
	}
	var err error
	if pd.Presentation, err = a.object(r, "presentation", r.presentation); err != nil {
		return agentrt.PolicyDecision{}, err
	}
	if pd.Capability, err = a.object(r, "capability", r.capability); err != nil {
		return agentrt.PolicyDecision{}, err
	}
	return pd, nil
}

func (a *activation) object(r *rule, what string, fields []field) (json.RawMessage, error) {
	if len(fields) == 0 {
		return json.RawMessage("{}"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields { // sorted by key at load
		out, _, err := f.ex.prg.Eval(a)
		if err != nil {
			return nil, a.failure(r, what+"."+f.key, f.ex, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, f.key)
		b.WriteByte(':')
		if err := writeValue(&b, out, 0); err != nil {
			return nil, &EvalError{Rule: r.name, Field: what + "." + f.key, Reason: err.Error()}
		}
		if b.Len() > MaxApprovalBytes {
			return nil, &EvalError{Rule: r.name, Field: what, Reason: fmt.Sprintf("the %s is more than %d bytes of JSON", what, MaxApprovalBytes)}
		}
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes()), nil
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a Go string always encodes
	b.Write(enc)
}

// writeValue writes a CEL value as JSON: booleans, numbers, strings and
// null as themselves, lists and string-keyed maps (keys sorted) as JSON
// arrays and objects, durations and timestamps as strings. Anything else
// (bytes, types, non-finite numbers, other map keys) is an error.
func writeValue(b *bytes.Buffer, v ref.Val, depth int) error {
	if depth > maxValueDepth {
		return fmt.Errorf("the value is nested deeper than %d levels", maxValueDepth)
	}
	if b.Len() > MaxApprovalBytes {
		return fmt.Errorf("the value is more than %d bytes of JSON", MaxApprovalBytes)
	}
	if done, err := writeScalar(b, v); done {
		return err
	}
	switch v.Type() {
	case types.ListType:
		if l, ok := v.(traits.Lister); ok {
			return writeList(b, l, depth)
		}
	case types.MapType:
		if m, ok := v.(traits.Mapper); ok {
			return writeMap(b, m, depth)
		}
	}
	return fmt.Errorf("a value of type %s has no JSON form", v.Type())
}

// writeScalar writes v when it is a boolean, number, string, null,
// duration or timestamp (done), or returns the error v is.
func writeScalar(b *bytes.Buffer, v ref.Val) (done bool, err error) {
	switch x := v.(type) {
	case types.Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case types.Int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case types.Uint:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case types.Double:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return true, fmt.Errorf("the number %v has no JSON form", f)
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case types.String:
		writeString(b, string(x))
	case types.Null:
		b.WriteString("null")
	case types.Duration:
		writeString(b, x.Duration.String())
	case types.Timestamp:
		writeString(b, x.Time.UTC().Format(time.RFC3339Nano))
	case *types.Err:
		return true, x
	default:
		return false, nil
	}
	return true, nil
}

func writeList(b *bytes.Buffer, l traits.Lister, depth int) error {
	b.WriteByte('[')
	it := l.Iterator()
	for i := 0; it.HasNext() == types.True; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeValue(b, it.Next(), depth+1); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// writeMap writes a map with string keys as a JSON object, keys sorted.
func writeMap(b *bytes.Buffer, m traits.Mapper, depth int) error {
	var keys []string
	it := m.Iterator()
	for it.HasNext() == types.True {
		k, ok := it.Next().(types.String)
		if !ok {
			return errors.New("a map with non-string keys has no JSON form")
		}
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		if err := writeValue(b, m.Get(types.String(k)), depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// decodeArgs turns a request's arguments (PolicyJSON) into the CEL map the
// expressions read as args. Integers that fit in 64 bits are ints, other
// numbers doubles; a number beyond a double's range or that a double
// cannot hold exactly (an *InexactNumberError), arguments larger than
// max bytes, or arguments that are not a JSON object are errors.
func decodeArgs(raw json.RawMessage, max int) (ref.Val, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if len(raw) > max {
		return nil, fmt.Errorf("the arguments are %d bytes; this policy reads at most %d (limits.args_bytes)", len(raw), max)
	}
	v, err := parseArgs(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the arguments are not a JSON object")
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, m), nil
}

func number(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	return exactDouble(string(n))
}

// specHashEntry is a tool's spec and its hash.
type specHashEntry struct {
	spec agentrt.ToolSpec
	hash string
}

// specHash is the hash the runtime records for spec: the SHA-256 of the
// canonical JSON of the whole spec. It is cached per tool name and reused
// only for an identical spec.
func (p *Policy) specHash(spec agentrt.ToolSpec) (string, error) {
	if e, ok := p.hashes.Load(spec.Name); ok {
		if ent := e.(*specHashEntry); sameSpec(ent.spec, spec) {
			return ent.hash, nil
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	h, err := agentrt.ContentHash(b)
	if err != nil {
		return "", err
	}
	keep := spec
	keep.InputSchema = append(json.RawMessage(nil), spec.InputSchema...)
	p.hashes.Store(spec.Name, &specHashEntry{spec: keep, hash: h})
	return h, nil
}

// sameSpec compares every field of ToolSpec (a test pins the field count,
// so a new field cannot be missed here).
func sameSpec(a, b agentrt.ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.SideEffect == b.SideEffect &&
		a.Timeout == b.Timeout && a.Terminal == b.Terminal && bytes.Equal(a.InputSchema, b.InputSchema)
}
