package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RecheckResult says how a recorded policy decision compares with what the
// policy of today decides about the same request.
type RecheckResult string

const (
	// RecheckSame: the policy decides as it did. For require_approval, it
	// asks for the approval the recorded decision asked for, by hash;
	// reasons are never compared.
	RecheckSame RecheckResult = "same"
	// RecheckDifferent: another outcome, another approval, a policy error,
	// or a request the current tool no longer accepts.
	RecheckDifferent RecheckResult = "different"
	// RecheckNotRecheckable: the record lacks what asking again needs: the
	// policy's answer (it failed), the tool's spec, or a readable row.
	RecheckNotRecheckable RecheckResult = "not_recheckable"
)

// RecheckOptions configure Recheck.
type RecheckOptions struct {
	// Tools give the current spec of a tool whose recorded spec is not
	// stored. Nil means such a step is not recheckable. A recorded spec is
	// always preferred: it is what the policy was handed.
	Tools []Tool
	// Disclosure, when it scans arguments (ArgumentScanner), fills each
	// request's Secrets as the engine did, so a policy that judged them
	// decides alike. Nil hands the policy no findings.
	Disclosure Disclosure
}

// RecheckedEvaluation is one recorded policy decision asked again.
type RecheckedEvaluation struct {
	StepIndex int
	StepID    string
	Tool      string
	// Recorded is the outcome the run recorded; Now is today's, empty when
	// the policy was not or could not be asked.
	Recorded PolicyOutcome
	Now      PolicyOutcome
	Result   RecheckResult
	// Detail says why a result is not RecheckSame.
	Detail string
}

// RecheckReport is what Recheck found, in step order.
type RecheckReport struct {
	RunID       string
	Evaluations []RecheckedEvaluation
}

// Same reports whether every evaluation was re-checked and decided alike.
// A run with no recorded evaluation is trivially the same.
func (r RecheckReport) Same() bool {
	for _, ev := range r.Evaluations {
		if ev.Result != RecheckSame {
			return false
		}
	}
	return true
}

// Differences returns the evaluations the policy of today decides
// differently.
func (r RecheckReport) Differences() []RecheckedEvaluation {
	var out []RecheckedEvaluation
	for _, ev := range r.Evaluations {
		if ev.Result == RecheckDifferent {
			out = append(out, ev)
		}
	}
	return out
}

// Complete reports whether every recorded evaluation could be asked again.
func (r RecheckReport) Complete() bool {
	for _, ev := range r.Evaluations {
		if ev.Result == RecheckNotRecheckable {
			return false
		}
	}
	return true
}

// Recheck asks policy again about every policy decision run runID recorded
// (each tool_call step with a policy record) and reports, per step, whether
// it decides the same. The policy is handed what the loop handed it: the
// request in PolicyJSON form (the recorded arguments, the schema of the spec
// recorded with the decision), and a view rebuilt from the record: the run,
// the steps before the evaluated one, and the approvals that existed when it
// was evaluated. The view's run carries today's counters and the status
// (RUNNING, or WAITING on resume) and step count of the evaluation; a policy
// that decides from counters, the clock or state outside the record cannot
// be held to its record. A step whose policy failed, so that no answer was
// recorded, is listed as not recheckable; a pause the runtime made itself for
// an interrupted side effect is not a policy decision and is not listed.
// Recheck writes nothing. A missing run is ErrNotFound.
func Recheck(ctx context.Context, store StoreReader, runID string, policy Policy, opts RecheckOptions) (RecheckReport, error) {
	if policy == nil {
		return RecheckReport{}, &ConfigError{Field: "policy", Reason: "is required"}
	}
	version, err := policyIDOf(policy)
	if err != nil {
		return RecheckReport{}, err
	}
	current := map[string]*ToolSchema{}
	for i, t := range opts.Tools {
		if t == nil {
			return RecheckReport{}, &ConfigError{Field: fmt.Sprintf("RecheckOptions.Tools[%d]", i), Reason: "is nil"}
		}
		ts, err := CompileTool(t.Spec())
		if err != nil {
			return RecheckReport{}, err
		}
		current[ts.spec.Name] = ts
	}
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		return RecheckReport{}, err
	}
	steps, err := store.ListSteps(ctx, runID)
	if err != nil {
		return RecheckReport{}, err
	}
	approvals, err := store.ListApprovals(ctx, runID)
	if err != nil {
		return RecheckReport{}, err
	}
	events, err := store.ListEvents(ctx, runID)
	if err != nil {
		return RecheckReport{}, err
	}
	// The spec the policy was handed is the one named by the step's last
	// step.policy event: on resume it is the tool's spec then, which may
	// not be the one recorded with the decision.
	policySpec := map[string]string{}
	for _, ev := range events {
		if ev.Type != EventStepPolicy || ev.StepID == "" {
			continue
		}
		if p, err := PayloadAs[StepPolicyPayload](ev); err == nil && p.SpecHash != "" {
			policySpec[ev.StepID] = p.SpecHash
		}
	}
	index := map[string]int{}
	for i, st := range steps {
		index[st.ID] = i
	}
	rc := &rechecker{ctx: ctx, store: store, policy: policy, version: version, current: current, run: run, steps: steps,
		approvals: approvals, index: index, policySpec: policySpec, disclosure: opts.Disclosure}
	rep := RecheckReport{RunID: runID}
	for i := range steps {
		if ev, ok := rc.step(i); ok {
			rep.Evaluations = append(rep.Evaluations, ev)
		}
	}
	return rep, nil
}

type rechecker struct {
	ctx        context.Context
	store      StoreReader
	policy     Policy
	version    string // the policy's id, as the engine binds it
	current    map[string]*ToolSchema
	run        Run
	steps      []Step
	approvals  []Approval
	index      map[string]int // step id -> position
	policySpec map[string]string
	disclosure Disclosure
}

// step re-checks the step at position i; false means it recorded no policy
// decision.
func (rc *rechecker) step(i int) (RecheckedEvaluation, bool) {
	st := rc.steps[i]
	ev := RecheckedEvaluation{StepIndex: st.Index, StepID: st.ID}
	notRecheckable := func(detail string) (RecheckedEvaluation, bool) {
		ev.Result, ev.Detail = RecheckNotRecheckable, detail
		return ev, true
	}
	if st.DecodeError != "" {
		return notRecheckable("the step's row will not decode: " + st.DecodeError)
	}
	d := st.Decision
	if d == nil || d.Kind != KindToolCall {
		return ev, false
	}
	ev.Tool = d.Tool
	args := d.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if st.Policy == nil {
		// The policy was asked about a valid request whose step then
		// failed without its answer: a policy error or an outcome the
		// runtime does not know. A request refused before the policy is
		// not an evaluation.
		if st.Status != StepFailed || st.Observation == nil || st.Observation.Kind != ObsInvalidDecision || d.InvalidArgs != "" {
			return ev, false
		}
		ts, _, err := rc.spec(st, "")
		if err != nil || ts.Check(args) != nil {
			return ev, false
		}
		return notRecheckable("the policy was asked but no answer was recorded (a policy error or an unknown outcome)")
	}
	recorded := *st.Policy
	ev.Recorded = recorded.Outcome
	if recorded.Outcome == RequireApproval && recorded.Kind == InterruptedSideEffect {
		return ev, false
	}
	ts, fromCurrent, err := rc.spec(st, rc.policySpec[st.ID])
	if err != nil {
		return notRecheckable(err.Error())
	}
	if fromCurrent {
		if err := ts.Check(args); err != nil {
			ev.Result, ev.Detail = RecheckDifferent, "the current tool refuses the arguments: "+err.Error()
			return ev, true
		}
	}
	pargs, err := PolicyJSON(args)
	if err != nil {
		return notRecheckable("the recorded arguments are not acceptable JSON: " + err.Error())
	}
	spec := copySpec(ts.spec)
	spec.InputSchema = copyRaw(ts.policySchema)
	req := ToolRequest{RunID: rc.run.ID, StepID: st.ID, Spec: spec, Args: pargs}
	now, perr := rc.evaluate(req, rc.view(i, recorded.Outcome))
	ev.Now = now.Outcome
	if perr != nil {
		ev.Now = ""
	}
	bound := ToolRequest{RunID: rc.run.ID, StepID: st.ID, Spec: copySpec(ts.spec), Args: args}
	was := boundDecision{PolicyDecision: recorded, version: rc.recordedVersion(st)}
	ev.Result, ev.Detail = compareDecisions(was, boundDecision{PolicyDecision: now, version: rc.version}, perr, bound)
	return ev, true
}

// boundDecision is a policy's decision with the id of the policy that made
// it, which an approval's hash binds when the decision has a Requirement.
type boundDecision struct {
	PolicyDecision
	version string
}

// recordedVersion is the policy id the step's recorded decision was bound
// with: the one its approval carries (the pause that recorded the decision
// created the step's last approval), else the step's.
func (rc *rechecker) recordedVersion(st Step) string {
	for i := len(rc.approvals) - 1; i >= 0; i-- {
		if a := rc.approvals[i]; a.StepID == st.ID {
			return a.PolicyVersion
		}
	}
	return st.PolicyID
}

// compareDecisions says whether the policy's answer now (or its error)
// decides the request bound as recorded did: the same outcome and, for an
// approval, the same approval hash, requirement and policy version included
// as the engine binds them, so votes would carry over.
func compareDecisions(recorded, now boundDecision, perr error, bound ToolRequest) (RecheckResult, string) {
	switch {
	case perr != nil:
		return RecheckDifferent, "policy error: " + perr.Error()
	case !now.Outcome.Valid():
		return RecheckDifferent, fmt.Sprintf("the policy now answers %q, an outcome the runtime does not know", now.Outcome)
	case now.Outcome != recorded.Outcome:
		return RecheckDifferent, fmt.Sprintf("was %s, now %s", recorded.Outcome, now.Outcome)
	case now.Outcome != RequireApproval:
		return RecheckSame, ""
	}
	was, werr := ApprovalHashWith(recorded.Kind, recorded.Capability, recorded.Presentation, bound, recorded.Requirement, recorded.version)
	is, ierr := ApprovalHashWith(now.Kind, now.Capability, now.Presentation, bound, now.Requirement, now.version)
	switch {
	case ierr != nil:
		return RecheckDifferent, "the approval asked for now will not hash: " + ierr.Error()
	case werr != nil:
		return RecheckDifferent, "the recorded approval will not hash: " + werr.Error()
	case was == is:
		return RecheckSame, ""
	}
	// Name the first part that differs, as the hash binds each.
	plainWas, _ := ApprovalHash(recorded.Kind, recorded.Capability, recorded.Presentation, bound)
	plainIs, _ := ApprovalHash(now.Kind, now.Capability, now.Presentation, bound)
	underOld, _ := ApprovalHashWith(now.Kind, now.Capability, now.Presentation, bound, now.Requirement, recorded.version)
	switch {
	case plainWas != plainIs:
		return RecheckDifferent, "asks for another approval (kind, capability or presentation differ)"
	case underOld != was:
		return RecheckDifferent, "asks for another requirement of votes (stages, quantifiers or approvers differ)"
	}
	return RecheckDifferent, fmt.Sprintf("the policy's version changed (was %q, now %q), so the votes of the recorded approval would not carry over", recorded.version, now.version)
}

// spec resolves the spec a step's policy was handed: the stored spec under
// hash (or the one recorded with the decision), else the current tool of
// that name. fromCurrent says it came from RecheckOptions.Tools.
func (rc *rechecker) spec(st Step, hash string) (ts *ToolSchema, fromCurrent bool, err error) {
	if hash == "" {
		hash = st.SpecHash
	}
	if hash != "" {
		raw, gerr := rc.store.GetSpec(rc.ctx, hash)
		switch {
		case gerr == nil:
			var spec ToolSpec
			if err := json.Unmarshal(raw, &spec); err != nil {
				return nil, false, fmt.Errorf("the stored spec %s will not decode: %v", hash, err)
			}
			if h, _, err := specHash(spec); err != nil || h != hash {
				return nil, false, fmt.Errorf("the stored spec %s does not match its hash", hash)
			}
			ts, err := CompileTool(spec)
			if err != nil {
				return nil, false, fmt.Errorf("the stored spec %s will not compile: %v", hash, err)
			}
			return ts, false, nil
		case !errors.Is(gerr, ErrNotFound):
			return nil, false, gerr
		}
	}
	if ts := rc.current[st.Decision.Tool]; ts != nil {
		return ts, true, nil
	}
	return nil, false, fmt.Errorf("no spec of tool %q is recorded or given", st.Decision.Tool)
}

// view rebuilds what the policy was handed for the step at position i.
func (rc *rechecker) view(i int, recorded PolicyOutcome) RunView {
	st := rc.steps[i]
	// The step's own approvals existed before its last evaluation, except
	// the one a pause created.
	var own []Approval
	for _, a := range rc.approvals {
		if a.StepID == st.ID {
			own = append(own, a)
		}
	}
	if recorded == RequireApproval && len(own) > 0 {
		own = own[:len(own)-1]
	}
	onResume := len(own) > 0
	var apps []Approval
	for _, a := range rc.approvals {
		if j, ok := rc.index[a.StepID]; ok && j < i {
			apps = append(apps, a)
		}
	}
	apps = append(apps, own...)
	run := copyRun(rc.run)
	run.Status = RunRunning
	if onResume {
		run.Status = RunWaiting
	}
	run.StepCount = st.Index + 1
	run.Reason, run.ReasonDetail, run.Result, run.FinishedAt = "", "", nil, time.Time{}
	run.LeaseOwner, run.LeaseExpiresAt = "", time.Time{}
	// The steps are the rechecker's own, read only; apps is built for
	// this view.
	return RunView{Run: run, Steps: Steps{rc.steps[:i:i]}, Approvals: Approvals{apps}}
}

// evaluate asks the policy, with the arguments' secrets as the engine
// found them, recovering a panic as an error.
func (rc *rechecker) evaluate(req ToolRequest, view RunView) (pd PolicyDecision, err error) {
	if req.Secrets, err = scanArguments(rc.ctx, rc.disclosure, req.Spec, req.Args); err != nil {
		return pd, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("policy panicked: %v", p)
		}
	}()
	return rc.policy.Evaluate(rc.ctx, req, view)
}
