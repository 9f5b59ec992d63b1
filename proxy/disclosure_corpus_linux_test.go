//go:build linux

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/disclosure/disclosuretest"
	"github.com/agentrt/agentrt/internal/otlptest"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// otelBinary builds agentrt-otel once per test process.
func otelBinary(t *testing.T) string {
	t.Helper()
	return goBinary(t, "agentrt-otel", "github.com/agentrt/agentrt/export/otel/cmd/agentrt-otel")
}

// rawOTLP is an OTLP/HTTP trace receiver that keeps each request's body
// as it arrived (gunzipped), for a test to grep: what a collector stores.
type rawOTLP struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []byte
}

func newRawOTLP(t *testing.T) *rawOTLP {
	r := &rawOTLP{}
	r.srv = otlptest.Start(t, func(b []byte) error {
		r.mu.Lock()
		r.bodies = append(r.bodies, b...)
		r.mu.Unlock()
		return nil
	})
	return r
}

func (r *rawOTLP) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.bodies...)
}

// The planted corpus in a file the real filesystem server reads, through
// the real agentrt-proxy binary under its default rules: no secret of it
// reaches the host, the database file, its WAL or shm (while the proxy
// runs and after it stops), agentrt show, show -json and events -json, the
// follower's JSON Lines (agentrt follow -json) or the spans agentrt-otel
// sends to an OTLP/HTTP receiver, grepped as raw bytes. With every rule
// off for the tool, the host, the files and show hold every secret, so
// those checks can fail; the proxy's events carry a result's hash, not
// its content, so there the control shows that the read's record is
// exported (TestProcess_OTelSpansOfADriverRunHoldNoPlantedSecret has
// spans that carry content).
func TestProcess_PlantedCorpusReachesNeitherTheHostNorAnyRecord(t *testing.T) {
	otel := otelBinary(t)
	all, err := disclosure.New(disclosure.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("disclosure=%v", on), func(t *testing.T) {
			s := newProcSetup(t)
			if !on {
				setConfigKey(t, s.config, "disclosure", map[string]any{"off": map[string]any{"fs_read_text_file": all.RuleIDs()}})
			}
			secrets := writeFile(t, filepath.Join(s.sandbox, "secrets.env"), disclosuretest.File())
			h := s.start(t)
			content := map[string][]byte{}
			content["the host"] = []byte(h.expect("", "fs_read_text_file", fmt.Sprintf(`{"path":%q}`, secrets)))
			content["the database files while the proxy runs"] = testrig.DBFiles(t, s.db)
			h.cs.Close()
			_ = h.cmd.Wait() // the proxy ends when its host hangs up
			content["the database files after it stopped"] = testrig.DBFiles(t, s.db)
			run := onlyRun(t, s.db)
			content["agentrt show"] = []byte(s.agentrt(t, "show", run))
			content["agentrt show -json"] = []byte(s.agentrt(t, "-json", "show", run))
			record := map[string][]byte{
				"agentrt events -json": []byte(s.agentrt(t, "-json", "events", run)),
				"agentrt follow -json": []byte(s.agentrt(t, "-json", "follow", "-once")),
				"the OTel spans":       exportSpans(t, otel, s.db),
			}
			for name, b := range content {
				checkCorpus(t, name, b, on, len(disclosuretest.Corpus()))
			}
			for name, b := range record {
				checkCorpus(t, name, b, on, 0)
				if !bytes.Contains(b, []byte("fs_read_text_file")) {
					t.Errorf("%s holds no record of the read", name)
				}
			}
		})
	}
}

// The spans agentrt-otel sends for a Driver run whose tool returned the
// planted corpus, in its content and its summary (a span attribute, cut
// at 1 KiB), hold none of it under the default rules, grepped as the OTLP receiver got them; with
// no disclosure they hold secrets, so the check can fail.
func TestProcess_OTelSpansOfADriverRunHoldNoPlantedSecret(t *testing.T) {
	otel := otelBinary(t)
	for _, on := range []bool{true, false} {
		db := filepath.Join(t.TempDir(), "runs.db")
		st, err := sqlite.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		var d agentrt.Disclosure
		if on {
			if d, err = disclosure.New(disclosure.Default()); err != nil {
				t.Fatal(err)
			}
		}
		runCorpusDriver(t, st, d)
		st.Close()
		checkCorpus(t, fmt.Sprintf("the OTel spans (disclosure=%v)", on), exportSpans(t, otel, db), on, 1)
	}
}

// runCorpusDriver runs one Driver step whose read-only tool returns the
// planted corpus file, and names it all in its summary.
func runCorpusDriver(t *testing.T, st agentrt.Store, d agentrt.Disclosure) {
	t.Helper()
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "fs_read_text_file", Description: "reads a file", SideEffect: agentrt.ReadOnly,
			Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			c, _ := json.Marshal(map[string]string{"text": disclosuretest.File()})
			return agentrt.ToolResult{Content: c, Summary: "read " + disclosuretest.File()}, nil
		},
	}
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: tool.Name, Args: json.RawMessage(`{}`)}, nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{tool}, Disclosure: d}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.StartWithID(context.Background(), "driver", "read the env file", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
}

// checkCorpus fails when b, what name received, holds a planted secret
// with disclosure on, or with it off holds fewer than min of them (then
// the check could not have failed).
func checkCorpus(t *testing.T, name string, b []byte, on bool, min int) {
	t.Helper()
	if len(b) == 0 {
		t.Errorf("%s is empty: nothing was checked", name)
		return
	}
	got := disclosuretest.Leaks(b)
	switch {
	case on && len(got) > 0:
		t.Errorf("%s holds %v", name, got)
	case !on && len(got) < min:
		t.Errorf("with disclosure off %s holds only %v; the check proves nothing", name, got)
	}
}

// setConfigKey sets one top-level key of the proxy's configuration file.
func setConfigKey(t *testing.T, path, key string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc[key] = v
	b, _ = json.MarshalIndent(doc, "", "  ")
	writeFile(t, path, string(b))
}

// onlyRun is the id of the one run in db.
func onlyRun(t *testing.T, db string) string {
	t.Helper()
	st := readStore(t, db)
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs in %s: %d, %v", db, len(runs), err)
	}
	return runs[0].ID
}

// exportSpans runs agentrt-otel -once on db against a raw OTLP receiver
// and returns every byte it received.
func exportSpans(t *testing.T, bin, db string) []byte {
	t.Helper()
	r := newRawOTLP(t)
	cmd := exec.Command(bin, "-db", db, "-once")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+r.srv.URL, "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agentrt-otel: %v\n%s", err, out)
	}
	b := r.bytes()
	if !bytes.Contains(b, []byte("fs_read_text_file")) {
		t.Fatalf("the receiver got no span of the read (%d bytes)", len(b))
	}
	return b
}
