// Command worker is an example agentrt worker process for any backend the
// registry links: it opens -db (a SQLite file, or a postgres:// DSN that
// many such processes on many hosts share), creating or migrating it, and
// claims and drives runs until interrupted. Each run asks to send a
// message, which DefaultPolicy holds for a person's approval (agentrt
// approve), then completes. With -enqueue N it enqueues N runs and exits.
//
//	go run ./examples/worker -db "$DSN" -owner w1 &
//	go run ./examples/worker -db "$DSN" -owner w2 &
//	go run ./examples/worker -db "$DSN" -enqueue 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/disclosure"
	_ "github.com/agentrt/agentrt/postgres" // postgres:// DSNs
	"github.com/agentrt/agentrt/scripted"
	_ "github.com/agentrt/agentrt/sqlite" // SQLite files
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", os.Getenv("AGENTRT_DB"), "the runs database: a SQLite file or a postgres:// DSN (default $AGENTRT_DB)")
	owner := fs.String("owner", "", "the lease owner this worker claims as (default host:pid)")
	concurrency := fs.Int("concurrency", 4, "runs driven at once")
	enqueue := fs.Int("enqueue", 0, "enqueue this many runs, print their ids and exit")
	var ckpt checkpoint.Process // folds events into checkpoints (docs/receipts.md)
	ckpt.Flags(fs)
	ckpt.SyncFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *db == "" {
		fmt.Fprintln(stderr, "worker: no database: pass -db PATH or -db postgres://… or set AGENTRT_DB")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, integ, err := open(ctx, *db, ckpt, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 1
	}
	defer st.Close()
	defer integ.Stop()
	name := *owner
	send := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "send", Description: "send a message", SideEffect: agentrt.RemoteMutation, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to","text"]}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			fmt.Fprintf(stdout, "%s: sent for run %s: %s\n", name, c.RunID, c.Args)
			return agentrt.ToolResult{Content: json.RawMessage(`{"sent":true}`), Summary: "sent"}, nil
		},
	}
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("send", `{"to":"ops@example.com","text":"nightly report"}`, "send the report"),
		scripted.Complete(`{"done":true}`),
	}}
	// Known secret formats in a tool's outcome are redacted before it is
	// recorded or read by the agent (docs/disclosure.md).
	rules, err := disclosure.New(disclosure.Default())
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 1
	}
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{send}, LeaseOwner: *owner,
			Disclosure: rules, AwaitCheckpoint: integ.EngineAwait()},
		Agent:       agent,
		Concurrency: *concurrency,
		OnError:     func(runID string, err error) { fmt.Fprintf(stderr, "worker: run %s: %v\n", runID, err) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 2
	}
	name = w.Owner()
	if *enqueue > 0 {
		for i := 0; i < *enqueue; i++ {
			r, err := w.Driver().Enqueue(ctx, "send the nightly report", agentrt.DefaultLimits())
			if err != nil {
				fmt.Fprintf(stderr, "worker: %v\n", err)
				return 1
			}
			fmt.Fprintln(stdout, r.ID)
		}
		return 0
	}
	fmt.Fprintf(stderr, "worker: %s claiming runs in %s\n", w.Owner(), backend.Redact(*db))
	if err := w.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 1
	}
	return 0
}

// open creates or migrates the database and runs the checkpoint
// integrator on it (on PostgreSQL, one process of many folds at a time).
func open(ctx context.Context, db string, ckpt checkpoint.Process, stderr io.Writer) (agentrt.Store, *checkpoint.Running, error) {
	st, err := backend.Create(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	integ, err := ckpt.Start(st, func(err error) { fmt.Fprintf(stderr, "worker: checkpoint: %v\n", err) })
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, integ, nil
}
