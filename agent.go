package agentrt

import "context"

// StepInput is what an agent is handed for one step. Nothing the agent does
// to it reaches the driver, the store, the policy, or any later StepInput,
// its own included. Run and Tools are the agent's own copies; Steps and
// Approvals share the record read-only, so a step's cost does not grow with
// the run's length and the run's history is held once, however many
// consumers read it.
type StepInput struct {
	// Run as read when the step started.
	Run Run
	// Steps before this one, in index order.
	Steps Steps
	// Approvals of the run, in creation order.
	Approvals Approvals
	// Tools registered with the driver, sorted by name.
	Tools []ToolSpec
	// Model is the accounted handle to the configured model; nil without
	// Config.Model.
	Model ModelCaller
}

// Agent decides the next step. It is stateless between steps: it renders its
// own context from the recorded steps.
type Agent interface {
	Decide(ctx context.Context, in StepInput) (Decision, error)
}

// AgentFunc adapts a function to Agent.
type AgentFunc func(ctx context.Context, in StepInput) (Decision, error)

// Decide calls f.
func (f AgentFunc) Decide(ctx context.Context, in StepInput) (Decision, error) { return f(ctx, in) }
