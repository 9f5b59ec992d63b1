package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/scripted"
	"github.com/jackc/pgx/v5"
)

// noteTool is a read-only tool that returns its arguments.
func noteTool() agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "note", Description: "note a value", SideEffect: agentrt.ReadOnly, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}}}`)},
		Fn: func(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: call.Args, Summary: "noted"}, nil
		},
	}
}

func pgCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cmdline.Run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// `agentrt -db postgres://… verify` checks the chain a Postgres database
// holds, through the backend registry this package joins: intact
// exits 0, an altered event exits 1 naming it.
func TestCLI_VerifyOnAPostgresDSN(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Fresh(t)
	st := open(t, dsn)
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{noteTool()},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{"v":1}`, "r"), scripted.Complete(`{"ok":true}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.Start(ctx, "verify me", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("run = %+v, %v", run, err)
	}
	st.Close()
	seq, _, _ := func() (int64, string, error) {
		s := open(t, dsn)
		defer s.Close()
		return s.ChainHead(ctx)
	}()
	code, out, errOut := pgCLI("-db", dsn, "-json", "verify")
	if code != cmdline.ExitOK || !strings.Contains(out, `"intact":true`) || !strings.Contains(out, `"checked":`) {
		t.Fatalf("verify = %d\n%s\n%s", code, out, errOut)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE events SET type = 'run.forged' WHERE seq = 2"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = pgCLI("-db", dsn, "verify")
	if code != cmdline.ExitFailure || !strings.Contains(out, "2") {
		t.Fatalf("verify of an altered chain (head %d) = %d\n%s", seq, code, out)
	}
}
