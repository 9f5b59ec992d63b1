package agentrt_test

import (
	"context"
	"encoding/json"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// providerModel is mcModel that also names its provider.
type providerModel struct{ *mcModel }

func (providerModel) Provider() string { return "openai" }

// A model that names its provider (agentrt.ModelProvider) has it recorded
// in model.dispatched, and a completed attempt records the provider's stop
// reason in model.completed; a model that does not name one records none.
func TestModel_EventsNameTheProviderAndTheStopReason(t *testing.T) {
	for _, tc := range []struct {
		name     string
		model    agentrt.Model
		provider string
	}{
		{"named", providerModel{&mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 3, OutputTokens: 2})}}, "openai"},
		{"unnamed", &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 3, OutputTokens: 2})}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := mcSetup(t, tc.model, agentrt.ModelConfig{}, &mcOnce{req: mcReq(16)})
			env.start(t, "greet", mcLimits(nil))
			evs, err := env.store.ListEvents(context.Background(), "r")
			if err != nil {
				t.Fatal(err)
			}
			var dispatched, completed map[string]any
			for _, e := range evs {
				switch e.Type {
				case agentrt.EventModelDispatched:
					json.Unmarshal(e.Payload, &dispatched)
				case agentrt.EventModelCompleted:
					json.Unmarshal(e.Payload, &completed)
				}
			}
			got, has := dispatched["provider"]
			if tc.provider == "" && has || tc.provider != "" && got != tc.provider {
				t.Fatalf("model.dispatched provider = %v (present %v), want %q: %v", got, has, tc.provider, dispatched)
			}
			if completed["stop_reason"] != agentrt.StopEndTurn {
				t.Fatalf("model.completed stop_reason = %v, want %q", completed["stop_reason"], agentrt.StopEndTurn)
			}
		})
	}
}
