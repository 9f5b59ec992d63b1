package agentrt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ApprovalExpiry names which of an approval's two expiries ended it, in
// approval.decided's Expiry.
type ApprovalExpiry string

const (
	// ExpiryDecision: still pending past its ApprovalTTL (the policy's
	// TTL where shorter): nobody decided in time.
	ExpiryDecision ApprovalExpiry = "decision_ttl"
	// ExpiryExecution: granted (its last vote cast) but not executed
	// within the run's GrantTTL.
	ExpiryExecution ApprovalExpiry = "execution_ttl"
)

// Quantifier says how many of a stage's approvers must vote to meet it.
type Quantifier string

const (
	// QuantAll: every approver the stage names, or who holds one of its
	// roles, unremoved and in scope when the votes are counted.
	QuantAll Quantifier = "all"
	// QuantAny: one of them.
	QuantAny Quantifier = "any"
	// QuantMofN: M of them.
	QuantMofN Quantifier = "m_of_n"
)

// ExcludeRequester is the one Stage.Exclude value: the run's requester (the
// value of its "requester" label) counts for nothing in the stage.
const ExcludeRequester = "requester"

// RequesterLabel is the run label that names who asked for the run.
const RequesterLabel = "requester"

// Stage is one step of a Requirement: who may vote in it and how many
// must. An approver counts when its id or name is in Approvers or it holds
// one of Roles.
type Stage struct {
	Quantifier Quantifier `json:"quantifier"`
	// M is how many must vote, for QuantMofN; zero otherwise.
	M         int      `json:"m,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	Approvers []string `json:"approvers,omitempty"`
	// Exclude holds ExcludeRequester or nothing.
	Exclude []string `json:"exclude,omitempty"`
}

// Requirement is what a policy asks of an approval: stages met in order,
// each by its own votes. It is part of what the approval's hash binds.
type Requirement struct {
	Stages []Stage `json:"stages"`
}

// maxStages bounds a requirement's stages and each stage's lists.
const maxStages = 8

// Validate names the first stage that cannot be met or is malformed.
func (r Requirement) Validate() error {
	bad := func(i int, why string) error {
		return &ConfigError{Field: fmt.Sprintf("requirement stage %d", i+1), Reason: why}
	}
	if len(r.Stages) == 0 || len(r.Stages) > maxStages {
		return &ConfigError{Field: "requirement", Reason: fmt.Sprintf("must hold 1 to %d stages, has %d", maxStages, len(r.Stages))}
	}
	for i, s := range r.Stages {
		if len(s.Roles)+len(s.Approvers) == 0 {
			return bad(i, "names no role and no approver")
		}
		if len(s.Roles) > 32 || len(s.Approvers) > 32 {
			return bad(i, "names more than 32 roles or approvers")
		}
		for _, x := range append(slices.Clone(s.Roles), s.Approvers...) {
			if x == "" || len(x) > 128 {
				return bad(i, fmt.Sprintf("names %q; a role or approver is 1 to 128 bytes", x))
			}
		}
		for _, x := range s.Exclude {
			if x != ExcludeRequester {
				return bad(i, fmt.Sprintf("excludes %q; only %q can be excluded", x, ExcludeRequester))
			}
		}
		switch s.Quantifier {
		case QuantAll, QuantAny:
			if s.M != 0 {
				return bad(i, fmt.Sprintf("sets m to %d, which only m_of_n takes", s.M))
			}
		case QuantMofN:
			if s.M < 1 || s.M > 32 {
				return bad(i, fmt.Sprintf("needs m from 1 to 32, has %d", s.M))
			}
		default:
			return bad(i, fmt.Sprintf("has quantifier %q; want all, any or m_of_n", s.Quantifier))
		}
	}
	return nil
}

// ApproverScope says which approvals an approver may decide. Each list
// that is not empty must hold the approval's value: its kind, its tool's
// name, its tool's side-effect class, and one of its run's labels ("k=v").
// An empty scope covers every approval.
type ApproverScope struct {
	Kinds       []string `json:"kinds,omitempty"`
	Tools       []string `json:"tools,omitempty"`
	SideEffects []string `json:"side_effects,omitempty"`
	Labels      []string `json:"labels,omitempty"`
}

func (sc ApproverScope) empty() bool {
	return len(sc.Kinds)+len(sc.Tools)+len(sc.SideEffects)+len(sc.Labels) == 0
}

// Covers reports whether the scope covers approval a of a run carrying
// labels (canonical, as Limits.Labels), and if not, which field refuses it.
func (sc ApproverScope) Covers(a Approval, labels string) (bool, string) {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	switch {
	case !in(sc.Kinds, a.Kind):
		return false, fmt.Sprintf("approval kind %q", a.Kind)
	case !in(sc.Tools, a.Request.Spec.Name):
		return false, fmt.Sprintf("tool %q", a.Request.Spec.Name)
	case !in(sc.SideEffects, string(a.Request.Spec.SideEffect)):
		return false, fmt.Sprintf("side effect %q", a.Request.Spec.SideEffect)
	}
	if len(sc.Labels) == 0 {
		return true, ""
	}
	have := strings.Split(labels, ",")
	for _, l := range sc.Labels {
		if slices.Contains(have, l) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("run labels %q", labels)
}

// ApproverAccess is an approver's roles and scope, set with SetApproverAccess
// and recorded as approver.access_set.
type ApproverAccess struct {
	Roles []string      `json:"roles,omitempty"`
	Scope ApproverScope `json:"scope,omitzero"`
}

// check refuses a role or scope value that is empty or not a plain word.
func (ac ApproverAccess) check() error {
	for _, f := range []struct {
		field string
		vals  []string
	}{{"role", ac.Roles}, {"scope kind", ac.Scope.Kinds}, {"scope tool", ac.Scope.Tools},
		{"scope side effect", ac.Scope.SideEffects}, {"scope label", ac.Scope.Labels}} {
		if len(f.vals) > 32 {
			return &ConfigError{Field: f.field, Reason: "at most 32 values"}
		}
		for _, v := range f.vals {
			if v == "" || len(v) > 128 || strings.ContainsAny(v, ", \t\r\n") {
				return &ConfigError{Field: f.field, Reason: fmt.Sprintf("%q must be 1 to 128 bytes without commas or spaces", v)}
			}
		}
	}
	return nil
}

// Vote is one approver's decision on an approval that has a Requirement:
// recorded as approval.voted, and kept in the store so the deciding
// transaction can count. Only the chain's votes grant at execution.
type Vote struct {
	ApprovalID   string             `json:"approval_id"`
	RunID        string             `json:"run_id"`
	ApproverID   string             `json:"approver_id"`
	ApproverName string             `json:"approver_name"`
	Stage        int                `json:"stage"`
	Decision     string             `json:"decision"`
	Note         string             `json:"note,omitempty"`
	At           time.Time          `json:"at"`
	Signature    *DecisionSignature `json:"signature,omitempty"`
}

// StageProgress is how far a stage is: who counted, how many are needed,
// and who may still vote in it.
type StageProgress struct {
	Index   int      `json:"index"`
	Stage   Stage    `json:"stage"`
	Need    int      `json:"need"`
	Counted []string `json:"counted"`
	// Open lists the approvers (by name) who may still vote in the stage.
	Open []string `json:"open,omitempty"`
	Met  bool     `json:"met"`
}

// Quorum errors. A refused vote decides nothing and records nothing.
var (
	// ErrOutOfScope: the approver may not decide this approval (its scope,
	// roles, or being the run's requester).
	ErrOutOfScope = errors.New("agentrt: approver may not decide this approval")
	// ErrAlreadyVoted: the approver has voted on this approval already.
	ErrAlreadyVoted = errors.New("agentrt: approver already voted")
	// ErrStageClosed: the vote is for a stage that is met, or not yet open.
	ErrStageClosed = errors.New("agentrt: the approver's stage is not open")
	// ErrQuorumNotMet: at execution, the chain's votes do not meet the
	// approval's requirement, or a decider was out of scope.
	ErrQuorumNotMet = errors.New("agentrt: approval's requirement is not met by the recorded votes")
)

// VoteError says why a vote was refused, in one sentence. It matches its
// sentinel (ErrOutOfScope, ErrAlreadyVoted or ErrStageClosed).
type VoteError struct {
	ApprovalID string
	Approver   string
	Reason     string
	Err        error
}

func (e *VoteError) Error() string {
	return fmt.Sprintf("agentrt: approver %q may not vote on approval %s: %s; nothing was recorded", e.Approver, e.ApprovalID, e.Reason)
}

// Unwrap returns the sentinel.
func (e *VoteError) Unwrap() error { return e.Err }

// QuorumError says why a grant's votes do not grant at execution. Nothing
// was executed and the run is left as it was. It matches ErrQuorumNotMet.
type QuorumError struct {
	RunID      string
	ApprovalID string
	Reason     string
}

func (e *QuorumError) Error() string {
	return fmt.Sprintf("agentrt: approval %s of run %s grants nothing: %s; nothing was executed", e.ApprovalID, e.RunID, e.Reason)
}

// Is matches ErrQuorumNotMet.
func (e *QuorumError) Is(target error) bool { return target == ErrQuorumNotMet }

// Requester is the run's requester: the value of its "requester" label.
func Requester(labels string) string {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, RequesterLabel+"="); ok {
			return v
		}
	}
	return ""
}
