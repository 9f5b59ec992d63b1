package disclosure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/sqlite"
)

// benignResult is about size bytes of the JSON a lookup tool returns:
// records with ids, names, emails, timestamps and a line of prose.
func benignResult(size int) json.RawMessage {
	type row struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Email   string `json:"email"`
		Created string `json:"created"`
		Note    string `json:"note"`
	}
	var rows []row
	for i := 0; ; i++ {
		rows = append(rows, row{fmt.Sprintf("cus_%06d", i), "Ada Lovelace", fmt.Sprintf("ada%d@example.com", i),
			"2026-03-04T05:06:07Z", "renewed the annual plan after the trial; asked about invoices"})
		b, _ := json.Marshal(map[string]any{"rows": rows})
		if len(b) >= size {
			return b
		}
	}
}

// BenchmarkDriver is a run of 100 read-only steps whose tool returns a
// benign result of 1 KiB or 16 KiB, with disclosure off and with the
// default rules on: the difference per step is what disclosure costs.
func BenchmarkDriver(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("obs=%dKiB/disclosure=%v", size>>10, on), func(b *testing.B) {
				content := benignResult(size)
				var d agentrt.Disclosure
				if on {
					d = rules(b, disclosure.Default())
				}
				benchRuns(b, content, d, 100)
			})
		}
	}
}

func benchRuns(b *testing.B, content json.RawMessage, d agentrt.Disclosure, steps int) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tool := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "lookup", Description: "x", SideEffect: agentrt.ReadOnly,
		Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: content, Summary: "rows"}, nil
		}}
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if i := in.Steps.Len(); i < steps-1 {
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}, nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{tool}, Disclosure: d}, Agent: agent})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := drv.StartWithID(context.Background(), fmt.Sprintf("r%d", i), "g", agentrt.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "µs/step")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*steps), "cpu-µs/step")
}

// cpuTime is the process's user and system CPU time: on a shared machine
// wall time per operation says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRules_Disclose is the default rules alone on a benign result,
// reported per KiB.
func BenchmarkRules_Disclose(b *testing.B) {
	r := rules(b, disclosure.Default())
	for _, size := range []int{1 << 10, 16 << 10} {
		content := benignResult(size)
		in := agentrt.DisclosureInput{Tool: agentrt.ToolSpec{Name: "lookup"}, Kind: agentrt.ObsToolResult, Content: content, Summary: "rows"}
		b.Run(fmt.Sprintf("obs=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(content)))
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := r.Disclose(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			kib := float64(b.N) * float64(len(content)) / 1024
			b.ReportMetric(float64(b.Elapsed().Microseconds())/kib, "µs/KiB")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/kib, "cpu-µs/KiB")
		})
	}
}
