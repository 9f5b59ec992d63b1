package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

var agentrtBin struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// buildAgentrt builds the real agentrt once per test binary.
func buildAgentrt(t *testing.T) string {
	t.Helper()
	agentrtBin.once.Do(func() {
		agentrtBin.path = filepath.Join(t.TempDir(), "agentrt")
		cmd := exec.Command("go", "build", "-o", agentrtBin.path, "./agentrt")
		cmd.Dir = filepath.Join("..", "cmd")
		agentrtBin.out, agentrtBin.err = cmd.CombinedOutput()
	})
	if agentrtBin.err != nil {
		t.Fatalf("go build ./cmd/agentrt: %v\n%s", agentrtBin.err, agentrtBin.out)
	}
	return agentrtBin.path
}

// The CLI's show and the console's run page print one size for one
// argument (view.ValueSize): a string with escapes by its decoded bytes,
// any other value by its compact JSON, whatever spaces the model put in.
func TestSizes_ShowAndTheRunPagePrintTheSameSizeForAnArgument(t *testing.T) {
	bin := buildAgentrt(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "write", Description: "write a file", SideEffect: agentrt.LocalMutation,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Summary: "wrote"}, nil
		}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{write}, Policy: agentrt.SideEffectPolicy{agentrt.LocalMutation: agentrt.RequireApproval}},
		Agent:        &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("write", `{"note": "a\nb\"c", "list": [1, 2, 3], "n": 286}`, "write it")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.Start(context.Background(), "write a note", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("run %+v, %v; want it waiting on the write", run, err)
	}
	want := map[string]int{"note": 5, "list": 7, "n": 3}

	cmd := exec.Command(bin, "-db", path, "show", run.ID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt show: %v\n%s", err, out)
	}
	page := signedIn(t, st)
	get := func(path string) string { return page(path).Body.String() }
	as, err := st.ListApprovals(context.Background(), run.ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals %v, %v; want one", as, err)
	}
	runPage, approvalPage := get("/runs/"+run.ID), get("/runs/"+run.ID+"/approvals/"+as[0].ID)
	for name, size := range want {
		cli := regexp.MustCompile(`(?m)^\s+` + name + ` \((\d+) bytes\):`).FindStringSubmatch(string(out))
		web := regexp.MustCompile(`<dt>` + name + ` <span class="size">(\d+) bytes?</span>`).FindStringSubmatch(runPage)
		ap := regexp.MustCompile(`<th>` + name + `</th><td class="size">(\d+) bytes?</td>`).FindStringSubmatch(approvalPage)
		if cli == nil || web == nil || ap == nil {
			t.Fatalf("argument %s: show printed %q, the run page %q, the approval page %q; want all three\nshow:\n%s\nrun page:\n%s\napproval page:\n%s",
				name, cli, web, ap, out, runPage, approvalPage)
		}
		if cli[1] != web[1] || cli[1] != ap[1] || cli[1] != fmt.Sprint(size) {
			t.Errorf("argument %s: show says %s bytes, the run page %s, the approval page %s; want all %d", name, cli[1], web[1], ap[1], size)
		}
	}
}
