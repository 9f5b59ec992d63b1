package cel

import (
	"fmt"
	"strings"
	"unicode/utf8"

	celgo "cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	agentrt "github.com/agentrt/agentrt"
)

// The variables every expression may read. Each is declared with its type,
// so a misspelt name or a wrong type is refused at load.
const (
	varToolName     = "tool.name"
	varToolSide     = "tool.side_effect"
	varToolSpecHash = "tool.spec_hash"
	varArgs         = "args"
	varSecrets      = "request.secrets"
	varRunSteps     = "run.steps"
	varRunModel     = "run.model_calls"
	varRunTokens    = "run.tokens"
	varRunInput     = "run.input_tokens"
	varRunOutput    = "run.output_tokens"
	varRunCost      = "run.cost_micros"
	varRunActive    = "run.active_time"
	varRunApprovals = "run.approvals"
)

// newEnv is the one CEL environment every policy compiles in: the standard
// library, the strings extension, nfc and clean_path, numbers compared
// across int and double (JSON numbers arrive as either), and the declared
// variables.
func newEnv() (*celgo.Env, error) {
	return celgo.NewEnv(append(helperFunctions(),
		ext.Strings(),
		celgo.CrossTypeNumericComparisons(true),
		celgo.ParserExpressionSizeLimit(MaxExpressionBytes),
		celgo.ParserRecursionLimit(64),
		celgo.Variable(varToolName, celgo.StringType),
		celgo.Variable(varToolSide, celgo.StringType),
		celgo.Variable(varToolSpecHash, celgo.StringType),
		celgo.Variable(varArgs, celgo.MapType(celgo.StringType, celgo.DynType)),
		celgo.Variable(varSecrets, celgo.ListType(celgo.MapType(celgo.StringType, celgo.StringType))),
		celgo.Variable(varRunSteps, celgo.IntType),
		celgo.Variable(varRunModel, celgo.IntType),
		celgo.Variable(varRunTokens, celgo.IntType),
		celgo.Variable(varRunInput, celgo.IntType),
		celgo.Variable(varRunOutput, celgo.IntType),
		celgo.Variable(varRunCost, celgo.IntType),
		celgo.Variable(varRunActive, celgo.DurationType),
		celgo.Variable(varRunApprovals, celgo.IntType),
	)...)
}

// expr is one compiled expression.
type expr struct {
	src      string
	prg      celgo.Program
	usesArgs bool
	usesHash bool
	// constant is the expression's value when it reads no variable
	// (after folding), for check's warnings; nil otherwise.
	constant *bool
}

// rule is one compiled rule.
type rule struct {
	name        string
	line, col   int
	tools       []string // globs; empty matches any
	sideEffects []agentrt.SideEffect
	when        *expr
	decision    agentrt.PolicyDecision // Outcome, Reason, Kind, TTL
	// presentation and capability, sorted by key.
	presentation, capability []field
	isDefault                bool
}

type field struct {
	key string
	ex  *expr
}

// compiler compiles a file's expressions and places each error in the file.
type compiler struct {
	env       *celgo.Env
	data      []byte
	costLimit uint64
}

// compile compiles src, written at n, as a field of rule; wantBool says it
// must be a boolean.
func (c *compiler) compile(rule, fieldName string, n *node, wantBool bool) (*expr, error) {
	src := n.str
	checked, iss := c.env.Compile(src)
	if iss != nil && iss.Err() != nil {
		e := iss.Errors()[0]
		line, col := c.place(n, e.Location.Line(), e.Location.Column())
		return nil, &FileError{Rule: rule, Field: fieldName, Line: line, Column: col, Reason: e.Message}
	}
	if wantBool && !checked.OutputType().IsExactType(types.BoolType) {
		return nil, &FileError{Rule: rule, Field: fieldName, Line: n.line, Column: n.col,
			Reason: fmt.Sprintf("must be a boolean expression, but %q is %s; compare it, for example == true", src, checked.OutputType())}
	}
	prg, err := c.env.Program(checked,
		celgo.CostLimit(c.costLimit),
		celgo.EvalOptions(celgo.OptOptimize),
	)
	if err != nil {
		return nil, &FileError{Rule: rule, Field: fieldName, Line: n.line, Column: n.col, Reason: err.Error()}
	}
	ex := &expr{src: src, prg: prg}
	refs := map[string]bool{}
	for _, r := range checked.NativeRep().ReferenceMap() {
		if r.Name != "" {
			refs[r.Name] = true
		}
	}
	ex.usesArgs, ex.usesHash = refs[varArgs], refs[varToolSpecHash]
	if wantBool {
		ex.constant = constantBool(c.env, checked)
	}
	return ex, nil
}

// constantBool reports the value of a boolean expression that reads no
// variable, folded by CEL's optimizer; nil when it depends on the request.
func constantBool(env *celgo.Env, checked *celgo.Ast) *bool {
	for _, r := range checked.NativeRep().ReferenceMap() {
		if r.Name != "" {
			return nil
		}
	}
	folder, err := celgo.NewConstantFoldingOptimizer()
	if err != nil {
		return nil
	}
	opt, err := celgo.NewStaticOptimizer(folder)
	if err != nil {
		return nil
	}
	folded, iss := opt.Optimize(env, checked)
	if iss != nil && iss.Err() != nil {
		return nil
	}
	e := folded.NativeRep().Expr()
	if e.Kind() != ast.LiteralKind {
		return nil
	}
	b, ok := e.AsLiteral().(types.Bool)
	if !ok {
		return nil
	}
	v := bool(b)
	return &v
}

// place turns a position inside an expression (1-based line, 0-based
// column) into a position in the file: exact when the expression sits on
// one line of the file as written, else the expression's own start.
func (c *compiler) place(n *node, line, col int) (int, int) {
	if line == 1 && !strings.ContainsAny(n.str, "\n\\") {
		start := n.col
		if n.quoted {
			start++
		}
		return n.line, start + col
	}
	return n.line, n.col
}

// compileFile compiles every rule of fs in order; the first error is
// returned.
func compileFile(fs *fileSpec, data []byte) ([]*rule, *rule, error) {
	env, err := newEnv()
	if err != nil {
		return nil, nil, err
	}
	c := &compiler{env: env, data: data, costLimit: fs.costLimit}
	rules := make([]*rule, 0, len(fs.rules))
	for i := range fs.rules {
		r, err := c.rule(&fs.rules[i])
		if err != nil {
			return nil, nil, err
		}
		rules = append(rules, r)
	}
	def, err := c.rule(&fs.def)
	if err != nil {
		return nil, nil, err
	}
	return rules, def, nil
}

func (c *compiler) rule(rs *ruleSpec) (*rule, error) {
	r := &rule{name: rs.name, line: rs.line, col: rs.col, tools: rs.tools, sideEffects: rs.sideEffects, isDefault: rs.isDefault,
		decision: agentrt.PolicyDecision{Outcome: rs.outcome, Reason: rs.reason, Kind: rs.kind, TTL: rs.ttl, RequireSignature: rs.requireSignature,
			Requirement: rs.requirement}}
	if r.decision.Reason == "" {
		r.decision.Reason = fmt.Sprintf("rule %s: %s", rs.name, rs.outcome)
	}
	for _, g := range rs.tools {
		if err := checkGlob(g); err != nil {
			return nil, &FileError{Rule: rs.name, Field: "match.tools", Line: rs.line, Column: rs.col, Reason: err.Error()}
		}
	}
	if rs.when != nil {
		ex, err := c.compile(rs.name, "when", rs.when, true)
		if err != nil {
			return nil, err
		}
		r.when = ex
	}
	for _, set := range []struct {
		name string
		in   []fieldSpec
		out  *[]field
	}{{"presentation", rs.presentation, &r.presentation}, {"capability", rs.capability, &r.capability}} {
		for _, f := range set.in {
			ex, err := c.compile(rs.name, set.name+"."+f.key, f.expr, false)
			if err != nil {
				return nil, err
			}
			*set.out = append(*set.out, field{key: f.key, ex: ex})
		}
	}
	return r, nil
}

// checkGlob refuses a tool pattern that is not a name with * (any run of
// characters) and ? (one character).
func checkGlob(g string) error {
	for _, r := range g {
		switch r {
		case '[', ']', '\\', '{', '}':
			return fmt.Errorf("the tool pattern %q uses %q; patterns know only * and ?", g, r)
		}
	}
	return nil
}

// globMatch reports whether name matches the pattern, where * is any run of
// characters (none included) and ? is exactly one. It does not allocate and
// takes time linear in len(name)*len(pattern) at worst.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			if pattern[p] == '?' {
				// ? is one character, not one byte.
				_, size := utf8.DecodeRuneInString(name[n:])
				n += size
			} else {
				n++
			}
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
