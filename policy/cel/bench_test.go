package cel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
)

// ruleFile writes n rules: a step budget first, then rules each matching
// its own tool with a when over args and the run, then a catch-all with a
// when, then the default.
func ruleFile(n int) string {
	var b strings.Builder
	b.WriteString("rules:\n  - name: budget\n    when: run.steps > 50 || run.cost_micros > 5000000\n    outcome: abort\n")
	for i := 1; i < n-1; i++ {
		fmt.Fprintf(&b, "  - name: rule-%d\n    match: {tools: [\"svc%d.*\"], side_effects: [read_only, local_mutation]}\n", i, i)
		fmt.Fprintf(&b, "    when: args.path.startsWith(\"/project/%d/\") && !args.path.contains(\"..\") && run.tokens < 100000\n", i)
		b.WriteString("    outcome: allow\n")
	}
	b.WriteString("  - name: pay\n    match: {tools: [pay]}\n    when: args.amount > 1000\n    outcome: require_approval\n    presentation: {amount: args.amount}\n")
	b.WriteString("default: {outcome: deny}\n")
	return b.String()
}

func benchEvaluate(b *testing.B, p *cel.Policy, req agentrt.ToolRequest, want agentrt.PolicyOutcome) {
	view := agentrt.RunView{Run: agentrt.Run{ID: "run-1", StepCount: 7, Usage: agentrt.Usage{InputTokens: 900, OutputTokens: 100}}}
	ctx := context.Background()
	if pd, err := p.Evaluate(ctx, req, view); err != nil || pd.Outcome != want {
		b.Fatalf("Evaluate = %+v, %v; want %s", pd, err, want)
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		_, err := p.Evaluate(ctx, req, view)
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkEvaluate_50Rules judges a request that the 25th of 50 rules
// allows: the match skips the rules for other tools, two whens run.
func BenchmarkEvaluate_50Rules(b *testing.B) {
	p := mustParse(b, ruleFile(50))
	benchEvaluate(b, p, request("svc25.read", agentrt.ReadOnly, `{"path":"/project/25/src/main.go"}`), agentrt.Allow)
}

// BenchmarkEvaluate_50RulesApproval judges a payment that the last rule
// sends for approval, with its presentation built.
func BenchmarkEvaluate_50RulesApproval(b *testing.B) {
	p := mustParse(b, ruleFile(50))
	benchEvaluate(b, p, request("pay", agentrt.RemoteMutation, `{"amount":2500,"to":"acme"}`), agentrt.RequireApproval)
}

// BenchmarkEvaluate_50WhensNoneTrue is the worst case for a 50-rule file:
// every rule matches the tool, every when runs, none holds, the default
// decides.
func BenchmarkEvaluate_50WhensNoneTrue(b *testing.B) {
	var s strings.Builder
	s.WriteString("rules:\n")
	for i := range 50 {
		fmt.Fprintf(&s, "  - name: r%d\n    when: args.path.startsWith(\"/p%d/\")\n    outcome: allow\n", i, i)
	}
	s.WriteString("default: {outcome: deny}\n")
	benchEvaluate(b, mustParse(b, s.String()), request("fs.read", agentrt.ReadOnly, `{"path":"/project/x"}`), agentrt.Deny)
}

// BenchmarkLoad_500Rules parses, checks and compiles a 500-rule file.
func BenchmarkLoad_500Rules(b *testing.B) {
	src := []byte(ruleFile(500))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := cel.Parse(src, cel.YAML); err != nil {
			b.Fatal(err)
		}
	}
}
