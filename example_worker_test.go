package agentrt_test

import (
	"context"
	"fmt"
	"log"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
)

// A worker claims an enqueued run; the run pauses on a remote write; once
// an operator approves it, the same worker picks the run up by itself and
// finishes it. Nobody calls Resume.
func ExampleWorker() {
	ctx := context.Background()
	store, cleanup := exampleStore()
	defer cleanup()

	paused, finished := make(chan string, 1), make(chan string, 1)
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(), // remote_mutation waits for approval
			Tools:  []agentrt.Tool{fileTool("send_file", agentrt.RemoteMutation, `{"sent":true}`)},
			Observer: func(ev agentrt.Event) {
				switch ev.Type {
				case agentrt.EventApprovalRequest:
					paused <- ev.RunID
				case agentrt.EventRunFinished:
					finished <- ev.RunID
				}
			},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send_file", `{"path":"notes.txt"}`, "share it"), scripted.Complete(`{}`)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	run, err := w.Driver().Enqueue(ctx, "share the notes", agentrt.DefaultLimits())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("enqueued:", run.Status)
	<-paused
	a, _ := store.ListApprovals(ctx, run.ID)
	fmt.Println("waiting for:", a[0].Kind)
	if err := agentrt.ApproveShown(ctx, store, nil, run.ID, a[0].ID, a[0].Hash, "alice", "fine"); err != nil {
		log.Fatal(err)
	}
	<-finished
	stop()
	<-done
	run, _ = store.GetRun(ctx, run.ID)
	fmt.Println("then, by itself:", run.Status, run.Reason)
	// Output:
	// enqueued: ENQUEUED
	// waiting for: remote_mutation
	// then, by itself: COMPLETED goal_completed
}
