package agentrt

import "context"

// StepInput is what an agent is handed for one step. Everything in it is the
// agent's own copy: nothing the agent does to it reaches the driver, the
// store or the policy. To keep a step's cost independent of the run's
// length, the copies are kept per consumer and refreshed when a row changes,
// so a change the agent makes to a step it was handed may show again in its
// own later views of that unchanged step.
type StepInput struct {
	// Run as read when the step started.
	Run Run
	// Steps before this one, in index order.
	Steps []Step
	// Approvals of the run, in creation order.
	Approvals []Approval
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
