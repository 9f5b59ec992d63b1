package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// Fuzz generates arguments for a tool from its input schema: valid ones,
// deterministic for a Seed, and invalid ones at the boundary the runtime
// guards (JSON it refuses) and just outside the schema (near misses).
// Zero fields take the defaults named below.
type Fuzz struct {
	Seed uint64
	// Count is how many valid arguments Valid returns; zero means 32.
	Count int
	// MaxItems bounds generated arrays; zero means 4.
	MaxItems int
	// MaxLength bounds generated strings in runes; zero means 32.
	MaxLength int
	// MaxDepth bounds how deep optional structure goes; zero means 4.
	MaxDepth int
}

// Case is one generated argument with what it exercises.
type Case struct {
	Name string
	Args json.RawMessage
}

func (f Fuzz) defaults() Fuzz {
	if f.Count == 0 {
		f.Count = 32
	}
	if f.MaxItems == 0 {
		f.MaxItems = 4
	}
	if f.MaxLength == 0 {
		f.MaxLength = 32
	}
	if f.MaxDepth == 0 {
		f.MaxDepth = 4
	}
	return f
}

// Valid returns up to Count distinct arguments that the tool's compiled
// schema accepts, the same ones for the same Seed. A schema the generator
// cannot satisfy (a pattern, say) yields fewer; none at all is an error.
func (f Fuzz) Valid(spec agentrt.ToolSpec) ([]json.RawMessage, error) {
	f = f.defaults()
	ts, root, err := compile(spec)
	if err != nil {
		return nil, err
	}
	g := &gen{f: f, root: root, rnd: rand.New(rand.NewPCG(f.Seed, 0x7465_7374_6b69_74))}
	seen := map[string]bool{}
	var out []json.RawMessage
	for try := 0; try < f.Count*20 && len(out) < f.Count; try++ {
		v := g.value(root, 0, try%3 == 0)
		b, err := json.Marshal(v)
		if err != nil || seen[string(b)] || ts.Check(b) != nil {
			continue
		}
		seen[string(b)] = true
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("testkit: generated no arguments that tool %q's schema accepts", spec.Name)
	}
	return out, nil
}

// Invalid returns arguments the runtime must refuse before the tool is
// called: JSON it refuses whatever the schema (nesting past 256 levels, a
// duplicate key, invalid UTF-8, an unpaired surrogate, truncated JSON, two
// values, a number past the bound) and near misses of the schema (a
// required property missing, a wrong type, a bound, length, count or enum
// just missed, an unknown property where none are allowed). Every near
// miss returned is one the schema refuses.
func (f Fuzz) Invalid(spec agentrt.ToolSpec) ([]Case, error) {
	f = f.defaults()
	ts, root, err := compile(spec)
	if err != nil {
		return nil, err
	}
	valid, err := f.Valid(spec)
	if err != nil {
		return nil, err
	}
	base := valid[0]
	var cases []Case
	add := func(name string, b []byte) { cases = append(cases, Case{Name: name, Args: b}) }

	add("depth", []byte(`{"deep":`+strings.Repeat("[", 300)+strings.Repeat("]", 300)+`}`))
	add("duplicate key", []byte(`{"dup":1,"dup":2}`))
	add("duplicate key after unescaping", []byte(`{"dup":1,"d\u0075p":2}`))
	add("invalid UTF-8", []byte("{\"s\":\"\xff\xfe\"}"))
	add("unpaired surrogate", []byte(`{"s":"\ud800"}`))
	add("truncated JSON", base[:len(base)/2])
	add("two values", append(append([]byte{}, base...), []byte(` {}`)...))
	add("huge exponent", []byte(`{"n":1e100000}`))
	add("long number", []byte(`{"n":1`+strings.Repeat("0", 10001)+`}`))

	for _, c := range nearMisses(root, base) {
		if ts.Check(c.Args) != nil {
			cases = append(cases, c)
		}
	}
	return cases, nil
}

// Check exercises each tool: every valid argument must pass the runtime's
// check and reach the tool without a panic (the tool's errors are its
// business), and every invalid one must be refused by the runtime, so the
// tool never sees it. Check calls the tools: give it stand-ins, or tools
// safe to call in a test.
func (f Fuzz) Check(t testing.TB, tools ...agentrt.Tool) {
	t.Helper()
	for _, tl := range tools {
		spec := tl.Spec()
		valid, err := f.Valid(spec)
		if err != nil {
			t.Errorf("Fuzz: %v", err)
			continue
		}
		for i, args := range valid {
			if err := agentrt.CheckArgs(spec, args); err != nil {
				t.Errorf("Fuzz: tool %q: generated arguments %s refused: %v", spec.Name, args, err)
				continue
			}
			if p := callNoPanic(tl, fmt.Sprintf("testkit-fuzz-%d", i), args); p != "" {
				t.Errorf("Fuzz: tool %q panicked on %s: %s", spec.Name, args, p)
			}
		}
		invalid, err := f.Invalid(spec)
		if err != nil {
			t.Errorf("Fuzz: %v", err)
			continue
		}
		for _, c := range invalid {
			if err := agentrt.CheckArgs(spec, c.Args); err == nil {
				t.Errorf("Fuzz: tool %q: the runtime accepted %s: %q", spec.Name, c.Name, c.Args)
			}
		}
	}
}

func callNoPanic(tl agentrt.Tool, stepID string, args json.RawMessage) (p string) {
	defer func() {
		if r := recover(); r != nil {
			p = fmt.Sprint(r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), tl.Spec().Timeout)
	defer cancel()
	_, _ = tl.Call(ctx, agentrt.ToolCall{RunID: "testkit-fuzz", StepID: stepID, Args: append(json.RawMessage(nil), args...)})
	return ""
}

func compile(spec agentrt.ToolSpec) (*agentrt.ToolSchema, map[string]any, error) {
	ts, err := agentrt.CompileTool(spec)
	if err != nil {
		return nil, nil, err
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(spec.InputSchema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, nil, err
	}
	m, _ := root.(map[string]any)
	if m == nil {
		m = map[string]any{} // true: anything
	}
	return ts, m, nil
}

// gen builds values from a schema.
type gen struct {
	f    Fuzz
	root map[string]any
	rnd  *rand.Rand
}

// resolve follows a local $ref.
func (g *gen) resolve(s map[string]any) map[string]any {
	for range 16 {
		ref, ok := s["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return s
		}
		var cur any = g.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
			if part == "" {
				continue
			}
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			m, _ := cur.(map[string]any)
			cur = m[part]
		}
		next, _ := cur.(map[string]any)
		if next == nil {
			return s
		}
		s = next
	}
	return s
}

// value generates a value for s; edge prefers boundary values.
func (g *gen) value(s map[string]any, depth int, edge bool) any {
	s = g.resolve(s)
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[g.rnd.IntN(len(e))]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if bs, ok := s[key].([]any); ok && len(bs) > 0 {
			if b, ok := bs[g.rnd.IntN(len(bs))].(map[string]any); ok {
				return g.value(b, depth, edge)
			}
		}
	}
	if bs, ok := s["allOf"].([]any); ok && len(bs) > 0 {
		merged := map[string]any{}
		for _, b := range bs {
			if m, ok := b.(map[string]any); ok {
				for k, v := range g.resolve(m) {
					merged[k] = v
				}
			}
		}
		for k, v := range s {
			if k != "allOf" {
				merged[k] = v
			}
		}
		return g.value(merged, depth, edge)
	}
	switch g.typeOf(s, depth) {
	case "object":
		return g.object(s, depth, edge)
	case "array":
		return g.array(s, depth, edge)
	case "string":
		return g.str(s, edge)
	case "integer":
		return g.integer(s, edge)
	case "number":
		return g.number(s, edge)
	case "boolean":
		return g.rnd.IntN(2) == 0
	default:
		return nil
	}
}

func (g *gen) typeOf(s map[string]any, depth int) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if n, ok := t[g.rnd.IntN(len(t))].(string); ok {
				return n
			}
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil || s["prefixItems"] != nil:
		return "array"
	case s["minLength"] != nil || s["maxLength"] != nil || s["pattern"] != nil:
		return "string"
	case s["minimum"] != nil || s["maximum"] != nil || s["multipleOf"] != nil:
		return "number"
	}
	kinds := []string{"string", "integer", "boolean", "null"}
	if depth < g.f.MaxDepth {
		kinds = append(kinds, "object", "array")
	}
	return kinds[g.rnd.IntN(len(kinds))]
}

func (g *gen) object(s map[string]any, depth int, edge bool) any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok {
				required[n] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !required[n] && (depth >= g.f.MaxDepth || g.rnd.IntN(2) == 0) {
			continue
		}
		ps, _ := props[n].(map[string]any)
		if ps == nil {
			ps = map[string]any{}
		}
		out[n] = g.value(ps, depth+1, edge)
	}
	for n := range required {
		if _, ok := out[n]; !ok {
			out[n] = g.value(map[string]any{}, depth+1, edge)
		}
	}
	if min := intOf(s["minProperties"], 0); len(out) < min {
		for i := 0; len(out) < min; i++ {
			out[fmt.Sprintf("extra%d", i)] = g.rnd.IntN(100)
		}
	}
	return out
}

func (g *gen) array(s map[string]any, depth int, edge bool) any {
	lo := intOf(s["minItems"], 0)
	hi := intOf(s["maxItems"], g.f.MaxItems)
	hi = min(hi, max(lo, g.f.MaxItems))
	if depth >= g.f.MaxDepth {
		hi = lo
	}
	n := lo
	if hi > lo {
		n = lo + g.rnd.IntN(hi-lo+1)
	}
	if edge && g.rnd.IntN(2) == 0 {
		n = hi
	}
	var prefix []any
	if p, ok := s["prefixItems"].([]any); ok {
		prefix = p
	}
	items, _ := s["items"].(map[string]any)
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		is := items
		if i < len(prefix) {
			is, _ = prefix[i].(map[string]any)
		}
		if is == nil {
			is = map[string]any{"type": "integer"}
		}
		out = append(out, g.value(is, depth+1, edge))
	}
	return out
}

// runes is what generated strings are made of: letters, and what breaks
// careless handling of text (quotes, escapes, markup, separators, wide
// and combining characters).
var runes = []rune("abcxyzABC019 _-.\"\\/<>&'\n\t\u00e9\u4e2d\u0301\u2028\U0001F600")

func (g *gen) str(s map[string]any, edge bool) any {
	lo := intOf(s["minLength"], 0)
	hi := min(intOf(s["maxLength"], g.f.MaxLength), max(lo, g.f.MaxLength))
	n := lo
	if hi > lo {
		n = lo + g.rnd.IntN(hi-lo+1)
	}
	if edge {
		if g.rnd.IntN(2) == 0 {
			n = lo
		} else {
			n = hi
		}
	}
	var b strings.Builder
	for range n {
		b.WriteRune(runes[g.rnd.IntN(len(runes))])
	}
	return b.String()
}

// bounds returns the inclusive range a number must lie in, as far as the
// schema says.
func bounds(s map[string]any, def float64) (lo, hi float64) {
	lo, hi = -def, def
	if v, ok := floatOf(s["minimum"]); ok {
		lo = v
	}
	if v, ok := floatOf(s["exclusiveMinimum"]); ok {
		lo = math.Nextafter(v, math.Inf(1))
	}
	if v, ok := floatOf(s["maximum"]); ok {
		hi = v
	}
	if v, ok := floatOf(s["exclusiveMaximum"]); ok {
		hi = math.Nextafter(v, math.Inf(-1))
	}
	if lo > hi {
		hi = lo
	}
	return lo, hi
}

func (g *gen) integer(s map[string]any, edge bool) any {
	lo, hi := bounds(s, 1000)
	lo, hi = max(lo, -1e15), min(hi, 1e15)
	ilo, ihi := int64(math.Ceil(lo)), int64(math.Floor(hi))
	if ihi < ilo {
		ihi = ilo
	}
	if hi-lo > 1e12 {
		ihi = ilo + 1e12
	}
	v := ilo + g.rnd.Int64N(ihi-ilo+1)
	if edge {
		v = []int64{ilo, ihi}[g.rnd.IntN(2)]
	}
	if m, ok := floatOf(s["multipleOf"]); ok && m >= 1 && m == math.Trunc(m) {
		step := int64(m)
		v = (v / step) * step
		if v < ilo {
			v += step
		}
	}
	return json.Number(fmt.Sprint(v))
}

func (g *gen) number(s map[string]any, edge bool) any {
	if g.rnd.IntN(2) == 0 {
		return g.integer(s, edge)
	}
	lo, hi := bounds(s, 1000)
	v := lo + g.rnd.Float64()*(hi-lo)
	if edge {
		v = []float64{lo, hi}[g.rnd.IntN(2)]
	}
	if m, ok := floatOf(s["multipleOf"]); ok && m > 0 {
		v = math.Round(v/m) * m
	}
	return json.Number(fmt.Sprint(v))
}

// nearMisses derives arguments just outside the schema from a valid one.
func nearMisses(root map[string]any, base json.RawMessage) []Case {
	var cases []Case
	add := func(name string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			cases = append(cases, Case{Name: name, Args: b})
		}
	}
	for _, top := range []struct {
		name string
		v    any
	}{{"array", []any{}}, {"string", "arguments"}, {"number", json.Number("1")}, {"null", nil}, {"boolean", true}} {
		add("top level "+top.name, top.v)
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(base))
	dec.UseNumber()
	if dec.Decode(&obj) != nil || obj == nil {
		return cases
	}
	clone := func() map[string]any {
		out := make(map[string]any, len(obj))
		for k, v := range obj {
			out[k] = v
		}
		return out
	}
	if ap, ok := root["additionalProperties"].(bool); ok && !ap {
		m := clone()
		m["testkit_unknown"] = 1
		add("unknown property", m)
	}
	if rs, ok := root["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok {
				m := clone()
				delete(m, n)
				add("missing required "+n, m)
			}
		}
	}
	props, _ := root["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		if ps == nil {
			continue
		}
		with := func(what string, v any) {
			m := clone()
			m[n] = v
			add(n+": "+what, m)
		}
		for _, wrong := range []struct {
			name string
			v    any
		}{{"string", "string"}, {"integer", json.Number("12")}, {"number", json.Number("1.5")}, {"boolean", true},
			{"null", nil}, {"array", []any{}}, {"object", map[string]any{}}} {
			with("wrong type "+wrong.name, wrong.v)
		}
		if v, ok := floatOf(ps["minimum"]); ok {
			with("below minimum", json.Number(fmt.Sprint(v-1)))
		}
		if v, ok := floatOf(ps["maximum"]); ok {
			with("above maximum", json.Number(fmt.Sprint(v+1)))
		}
		if v, ok := floatOf(ps["exclusiveMinimum"]); ok {
			with("at exclusive minimum", json.Number(fmt.Sprint(v)))
		}
		if v, ok := floatOf(ps["exclusiveMaximum"]); ok {
			with("at exclusive maximum", json.Number(fmt.Sprint(v)))
		}
		if v := intOf(ps["maxLength"], -1); v >= 0 {
			with("one past maxLength", strings.Repeat("x", v+1))
		}
		if v := intOf(ps["minLength"], 0); v > 0 {
			with("one short of minLength", strings.Repeat("x", v-1))
		}
		if v := intOf(ps["maxItems"], -1); v >= 0 {
			with("one past maxItems", make([]any, v+1))
		}
		if v := intOf(ps["minItems"], 0); v > 0 {
			with("one short of minItems", make([]any, v-1))
		}
		if e, ok := ps["enum"].([]any); ok && len(e) > 0 {
			with("not in enum", fmt.Sprintf("%v-testkit", e[0]))
		}
		if c, ok := ps["const"]; ok {
			with("not the const", fmt.Sprintf("%v-testkit", c))
		}
	}
	return cases
}

func floatOf(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

func intOf(v any, def int) int {
	if f, ok := floatOf(v); ok && f >= 0 && f < 1<<31 {
		return int(f)
	}
	return def
}
