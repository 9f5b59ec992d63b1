package export_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// A two-step run, then a follower that delivers its events once and
// remembers where it stopped in a cursor file.
func ExampleFollower() {
	dir, err := os.MkdirTemp("", "agentrt-export")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "runs.db")
	store, err := sqlite.Open(db)
	if err != nil {
		log.Fatal(err)
	}
	read := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read_file", Description: "read a file", InputSchema: []byte(`{"type":"object"}`),
			SideEffect: agentrt.ReadOnly, Timeout: time.Second},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: []byte(`{"text":"hello"}`), Summary: "read"}, nil
		},
	}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{read},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{
			scripted.ToolCall("read_file", `{"path":"notes.txt"}`, "look first"),
			scripted.Complete(`{"summary":"hello"}`),
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Start(context.Background(), "summarise notes.txt", agentrt.DefaultLimits()); err != nil {
		log.Fatal(err)
	}
	store.Close()

	// The follower's own read-only view of the database.
	ro, err := sqlite.OpenExisting(db, true)
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	f := export.Follower{Store: ro, Cursor: export.FileCursor{Path: filepath.Join(dir, "cursor")}, Once: true}
	err = f.Follow(context.Background(), func(e agentrt.Event) error {
		fmt.Println(e.Seq, e.Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := f.Head(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered up to seq", h.Seq)
	// Output:
	// 1 run.created
	// 2 run.started
	// 3 step.started
	// 4 step.decided
	// 5 step.policy
	// 6 step.tool_started
	// 7 step.tool_finished
	// 8 step.started
	// 9 step.decided
	// 10 run.finished
	// delivered up to seq 10
}
