package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

var bigContent = func() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"rows":[`)
	for i := 0; b.Len() < 8<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row %d","value":"%s"}`, i, i, strings.Repeat("v", 40))
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}()

// echoTool is the benchmarks' echo; big answers every call with
// bigContent instead of its arguments.
func echoTool(big bool) agentrt.Tool {
	if big {
		return kit.EchoTool(bigContent)
	}
	return kit.EchoTool(nil)
}

func benchStore(b testing.TB) *sqlite.Store {
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchStoreT(t *testing.T) *sqlite.Store { return benchStore(t) }

// BenchmarkDriver measures a run of N steps (N-1 allowed tool calls with
// distinct arguments, then complete) on a file-backed WAL store with
// synchronous=FULL. ns/step is the figure to compare with the commit floor.
func BenchmarkDriver(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, obs := range []string{"small", "8KiB"} {
			b.Run(fmt.Sprintf("steps=%d/obs=%s", n, obs), func(b *testing.B) {
				d, limits := kit.BenchDriver(b, benchStore(b), echoTool(obs == "8KiB"), n)
				kit.BenchRuns(b, d, limits, n)
			})
		}
	}
}

// BenchmarkCommitFloor is one synced single-row insert transaction on the
// same driver and pragmas: the physical floor a durable step is measured
// against.
func BenchmarkCommitFloor(b *testing.B) { kit.BenchCommitFloor(b, benchStore(b)) }

// BenchmarkConcurrentRuns runs 1, 16 and then 32 runs at once on one database
// file, each of 20 steps; the figure is aggregate steps per second, and the
// ratio of the two is the group-commit speed-up.
func BenchmarkConcurrentRuns(b *testing.B) {
	for _, runs := range []int{1, 16, 32} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			const n = 20
			s := benchStore(b)
			d, limits := kit.BenchDriver(b, s, echoTool(false), n)
			drivers := slices.Repeat([]*agentrt.Driver{d}, runs)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kit.StartAll(b, drivers, limits)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*runs*n)/b.Elapsed().Seconds(), "steps/s")
			st := s.Stats()
			b.ReportMetric(float64(st.Updates)/float64(st.Commits), "updates/commit")
		})
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	doc := bigContent
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := agentrt.ContentHash(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckArgs(b *testing.B) {
	spec := echoTool(false).Spec()
	args := json.RawMessage(`{"i":42,"text":"hello"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := agentrt.CheckArgs(spec, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyEvents reports events verified per second.
func BenchmarkVerifyEvents(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	const events = 20000
	kit.SeedEvents(b, s, "v", events)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := s.VerifyEvents(ctx, 0, 0)
		if err != nil || !rep.Intact() || rep.Checked != events {
			b.Fatalf("verify: %+v %v", rep, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
}

// heapContent is a JSON document of about n bytes.
func heapContent(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"rows":[`)
	for i := 0; b.Len() < n-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"value":"%s"}`, i, strings.Repeat("v", 80))
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// heapMetrics reads the live heap (as marked by the last GC) and every
// allocated heap object not yet swept, garbage included.
func heapMetrics() (live, objects uint64) {
	ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(ms)
	return ms[0].Value.Uint64(), ms[1].Value.Uint64()
}

// BenchmarkDriverPeakHeap runs 1,000 steps whose observations are 100 KB
// each and reports what the driver holds: peak-live-B is the live heap at
// the last step (after a forced GC, when the history is at its longest,
// or the highest live figure any GC of the run marked, if higher),
// peak-heap-B the most heap in use at any sample, garbage included, both
// above the heap before the run; stored-B is the run's steps as the store
// encodes them, and the ratios are to it.
func BenchmarkDriverPeakHeap(b *testing.B) {
	const n = 1000
	content := heapContent(100 << 10)
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read", Description: "Read.", SideEffect: agentrt.ReadOnly, Timeout: time.Minute,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: content, Summary: "rows"}, nil
		},
	}
	var atEnd uint64
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if i := in.Steps.Len(); i < n-1 {
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}, nil
		}
		runtime.GC()
		atEnd, _ = heapMetrics()
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	s := benchStore(b)
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = n + 1
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: s, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}}, Agent: agent})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var peakLive, peakHeap, stored float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		base, baseObjects := heapMetrics()
		var maxLive, maxObjects uint64
		done, sampled := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				live, objects := heapMetrics()
				maxLive, maxObjects = max(maxLive, live), max(maxObjects, objects)
				select {
				case <-done:
					return
				case <-tick.C:
				}
			}
		}()
		b.StartTimer()
		id := fmt.Sprintf("heap-%d", i)
		r, err := d.StartWithID(ctx, id, "bench", limits)
		b.StopTimer()
		close(done)
		<-sampled
		if err != nil || r.Status != agentrt.RunCompleted {
			b.Fatalf("run: %v %s %s", err, r.Status, r.ReasonDetail)
		}
		steps, err := s.ListSteps(ctx, id)
		if err != nil || len(steps) != n {
			b.Fatalf("steps: %d, %v", len(steps), err)
		}
		var sum int
		for _, st := range steps {
			raw, err := json.Marshal(st)
			if err != nil {
				b.Fatal(err)
			}
			sum += len(raw)
		}
		stored = float64(sum)
		peakLive = max(peakLive, float64(max(atEnd, maxLive))-float64(base))
		peakHeap = max(peakHeap, float64(maxObjects)-float64(baseObjects))
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(peakLive, "peak-live-B")
	b.ReportMetric(peakHeap, "peak-heap-B")
	b.ReportMetric(stored, "stored-B")
	b.ReportMetric(peakLive/stored, "live/stored")
	b.ReportMetric(peakHeap/stored, "heap/stored")
}
