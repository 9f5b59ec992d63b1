package eventlog_test

import (
	"encoding/json"
	"os"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
)

func ExampleJSONL() {
	obs := eventlog.JSONL(os.Stdout)
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
