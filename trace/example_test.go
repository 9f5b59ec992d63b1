package trace_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

func ExampleSanitize() {
	// A file name that reads backwards after the override, a screen clear,
	// a line break that would forge a second line, and a backslash.
	fmt.Println(trace.Sanitize("invoice_\u202Efdp.exe"))
	fmt.Println(trace.Sanitize("\x1b[2Jdone\nFAKE: approved"))
	fmt.Println(trace.Sanitize(`C:\temp`))
	// Ordinary text in any script, and emoji, are unchanged.
	fmt.Println(trace.Sanitize("Привет, 世界 👋🏽"))
	// A flood of combining marks keeps four.
	fmt.Println(strings.Count(trace.Sanitize("Z"+strings.Repeat("\u0336", 50)), "\u0336"))
	fmt.Println(trace.Truncate("a long tool result", 9))
	// Output:
	// invoice_\u{202E}fdp.exe
	// \u{001B}[2Jdone\nFAKE: approved
	// C:\\temp
	// Привет, 世界 👋🏽
	// 4
	// a long…
}

func ExampleJSONL() {
	obs := trace.JSONL(os.Stdout)
	obs(agentrt.Event{
		Seq:     7,
		RunID:   "01HZX4Q7",
		StepID:  "s1",
		At:      time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
		Type:    agentrt.EventStepDecided,
		Payload: json.RawMessage("{\"tool\": \"read\", \"path\": \"a<b>\u202E\"}"),
	})
	// Output:
	// {"seq":7,"run_id":"01HZX4Q7","step_id":"s1","at":"2026-03-14T09:26:53Z","type":"step.decided","payload":{"tool":"read","path":"a<b>\u202e"}}
}
