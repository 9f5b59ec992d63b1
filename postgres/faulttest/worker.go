// Package faulttest holds the fault tests of the Postgres backend and its
// workers: real worker processes (this package's test binary, run again in
// the worker role) on a real cluster, killed with SIGKILL, cut off behind a
// relay that stops forwarding, and left without their database while it
// restarts. Each test checks the same invariants at the end: every run
// completed or waiting on an interrupted_side_effect approval, no tool call
// journaled twice unless an operator approved its re-run, one decision per
// step and no gap in a run's step indexes, and one chain that verifies.
package faulttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/postgres"
)

// Worker-role settings, passed in the environment.
const (
	envRole    = "AGENTRT_FAULT_ROLE"
	envDSN     = "AGENTRT_FAULT_DSN"
	envJournal = "AGENTRT_FAULT_JOURNAL"
	envOwner   = "AGENTRT_FAULT_OWNER"
	envTTL     = "AGENTRT_FAULT_TTL"
	envToolMS  = "AGENTRT_FAULT_TOOL_MS"
	// envChainless "true" makes the worker write events unchained: a
	// benchmark's ceiling, never a fault test's (their chain must verify).
	envChainless = "AGENTRT_FAULT_CHAINLESS"
	// envCheckpoint "true" runs the integrator in the worker, as the
	// agentrt worker does by default (one folds; the others stand by).
	envCheckpoint = "AGENTRT_FAULT_CHECKPOINT"
)

// Steps is the script every fault-test run follows: two journaled tool
// calls, then complete.
const Steps = 3

// journal appends one line per tool call and per decision to a file
// shared by every worker: "J run step pid unixnano" for a call, "D run
// index pid unixnano" for a decision. O_APPEND writes of one short line
// are whole, and a SIGKILL loses nothing already written.
type journal struct{ f *os.File }

func (j journal) line(kind, run, step string) error {
	_, err := fmt.Fprintf(j.f, "%s %s %s %d %d\n", kind, run, step, os.Getpid(), time.Now().UnixNano())
	return err
}

// RunWorker is the worker role: a Worker on the DSN, journaling, until
// SIGTERM (a clean stop) or SIGKILL.
func RunWorker() int {
	ttl, _ := time.ParseDuration(os.Getenv(envTTL))
	if ttl <= 0 {
		ttl = 2 * time.Second
	}
	toolMS, _ := strconv.Atoi(os.Getenv(envToolMS))
	if os.Getenv(envChainless) == "true" {
		postgres.ChainlessForBenchmarks()
	}
	f, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "journal:", err)
		return 1
	}
	j := journal{f}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var st *postgres.Store
	for {
		// The database may be restarting: keep trying.
		st, err = postgres.OpenWith(ctx, os.Getenv(envDSN), postgres.Options{IdleInTransaction: ttl})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return 0
	}
	defer st.Close()
	if os.Getenv(envCheckpoint) == "true" {
		integ, err := checkpoint.Process{}.Start(st, func(err error) { fmt.Fprintln(os.Stderr, "checkpoint:", err) })
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer integ.Stop()
	}
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "journal", Description: "append a line to the journal", SideEffect: agentrt.LocalMutation,
			Timeout: 30 * time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			if err := j.line("J", c.RunID, c.StepID); err != nil {
				return agentrt.ToolResult{}, err
			}
			if toolMS > 0 {
				time.Sleep(time.Duration(toolMS) * time.Millisecond)
			}
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		},
	}
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		n := in.Steps.Len()
		if err := j.line("D", in.Run.ID, strconv.Itoa(n)); err != nil {
			return agentrt.Decision{}, err
		}
		if n < Steps-1 {
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "journal", Args: json.RawMessage(`{}`), Reason: "journal it"}, nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"ok":true}`)}, nil
	})
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:      st,
			Policy:     agentrt.DefaultPolicy(),
			Tools:      []agentrt.Tool{tool},
			LeaseOwner: os.Getenv(envOwner),
			LeaseTTL:   ttl,
		},
		Agent:       agent,
		Concurrency: 8,
		Poll:        20 * time.Millisecond,
		Grace:       5 * time.Second,
		OnError: func(runID string, err error) {
			kind := "error"
			if errors.Is(err, agentrt.ErrLeaseLost) || errors.Is(err, agentrt.ErrRunState) || errors.Is(err, agentrt.ErrRunLeased) {
				kind = "refused"
			}
			fmt.Fprintf(os.Stderr, "%s %s %d %v\n", kind, runID, time.Now().UnixNano(), err)
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// IsWorker reports whether this process was started in the worker role.
func IsWorker() bool { return os.Getenv(envRole) == "worker" }
