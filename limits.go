package agentrt

import (
	"fmt"
	"time"
)

// Limits bound a run. Zero means "off" for every field but the first three,
// which must be positive. Durations encode as integer nanoseconds.
type Limits struct {
	// MaxSteps is how many steps a run may start.
	MaxSteps int `json:"max_steps"`
	// MaxConsecutiveToolFailures ends the run when this many trailing steps failed.
	MaxConsecutiveToolFailures int `json:"max_consecutive_tool_failures"`
	// LoopThreshold ends the run when the same call gets the same result this many
	// times in a row.
	LoopThreshold int `json:"loop_threshold"`
	// MaxModelCalls counts every model attempt, retries included; 0 = unlimited.
	MaxModelCalls int `json:"max_model_calls,omitempty"`
	// MaxOutputTokensPerCall clamps each request's output cap; 0 leaves it.
	MaxOutputTokensPerCall int64 `json:"max_output_tokens_per_call,omitempty"`
	// MaxTotalTokens bounds input+output tokens, projected before each call.
	MaxTotalTokens int64 `json:"max_total_tokens,omitempty"`
	// MaxEstimatedCost bounds cost in micros, projected before each call.
	MaxEstimatedCost Micros `json:"max_estimated_cost_micros,omitempty"`
	// MaxActiveTime bounds time spent in steps while RUNNING (waits excluded).
	MaxActiveTime time.Duration `json:"max_active_time,omitempty"`
	// MaxElapsedTime bounds time since the run was created, waits included.
	MaxElapsedTime time.Duration `json:"max_elapsed_time,omitempty"`
	// ApprovalTTL bounds how long an approval may stay pending.
	ApprovalTTL time.Duration `json:"approval_ttl,omitempty"`
	// GrantTTL bounds how long an approved grant may wait to be executed.
	GrantTTL time.Duration `json:"grant_ttl,omitempty"`
	// RequireSignedGrant makes every grant of the run need a signature by
	// an enrolled, unremoved approver over the approval's hash: an
	// unsigned ApproveShown is refused, and Resume executes no grant
	// without one (ErrUnsignedGrant).
	RequireSignedGrant bool `json:"require_signed_grant,omitempty"`
	// Labels are the run's scope labels, "k=v" pairs in the canonical
	// form agentrt.Labels makes ("agent=triage,tenant=acme"). They are
	// fixed when the run starts, recorded in run.created, and decide
	// which shared budgets its model calls reserve against: every budget
	// whose scope they cover.
	Labels string `json:"labels,omitempty"`
}

// DefaultLimits returns 50 steps, 3 consecutive failures and a loop threshold
// of 3, with every other limit off.
func DefaultLimits() Limits {
	return Limits{MaxSteps: 50, MaxConsecutiveToolFailures: 3, LoopThreshold: 3}
}

// Validate names the first field out of bounds.
func (l Limits) Validate() error {
	pos := []struct {
		name string
		v    int
	}{{"Limits.MaxSteps", l.MaxSteps}, {"Limits.MaxConsecutiveToolFailures", l.MaxConsecutiveToolFailures}, {"Limits.LoopThreshold", l.LoopThreshold}}
	for _, p := range pos {
		if p.v <= 0 {
			return &ConfigError{Field: p.name, Reason: fmt.Sprintf("must be positive, got %d", p.v)}
		}
	}
	nonneg := []struct {
		name string
		v    int64
	}{
		{"Limits.MaxModelCalls", int64(l.MaxModelCalls)},
		{"Limits.MaxOutputTokensPerCall", l.MaxOutputTokensPerCall},
		{"Limits.MaxTotalTokens", l.MaxTotalTokens},
		{"Limits.MaxEstimatedCost", int64(l.MaxEstimatedCost)},
		{"Limits.MaxActiveTime", int64(l.MaxActiveTime)},
		{"Limits.MaxElapsedTime", int64(l.MaxElapsedTime)},
		{"Limits.ApprovalTTL", int64(l.ApprovalTTL)},
		{"Limits.GrantTTL", int64(l.GrantTTL)},
	}
	for _, p := range nonneg {
		if p.v < 0 {
			return &ConfigError{Field: p.name, Reason: fmt.Sprintf("must not be negative, got %d", p.v)}
		}
	}
	if l.Labels != "" {
		return checkCanonicalLabels("Limits.Labels", l.Labels)
	}
	return nil
}
