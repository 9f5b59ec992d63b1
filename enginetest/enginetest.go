// Package enginetest is the engine's behaviour suite run on a storage
// backend: drivers, resumes, leases, interrupted side effects, workers,
// gates, approvals and approvers, cancels, signed grants and their
// forgeries, and re-checks, through the public API, on whatever stores a
// Backend opens. The root package runs each case on SQLite as its own
// top-level test; the postgres module runs them all on a real cluster, so
// the database-clock paths are exercised by the same behaviours as
// SQLite's. It is for this module's backends and is not a stable API.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/scripted"
)

// cases is the suite. The first are the backend behaviours it began with;
// the rest are the root package's engine tests, each under its test name
// without the Test prefix.
var cases = []Case{
	{Name: "DriverRunsAToolOnceAndTheChainVerifies", fn: legacy(driverRuns)},
	{Name: "ApprovalPausesAndApprovedRunResumes", fn: legacy(approvalResumes)},
	{Name: "RejectCancelsAndRunsNothing", fn: legacy(rejectCancels)},
	{Name: "CancelEndsAWaitingRun", fn: legacy(cancelWaiting)},
	{Name: "ChangedApprovalIsNotDecided", fn: legacy(changedApproval)},
	{Name: "WorkerClaimsAnApprovedRunByItself", fn: legacy(workerApproved)},
	{Name: "WorkerEndsARunWhoseApprovalExpired", fn: legacy(workerExpired)},
	{Name: "WorkerTakesOverALapsedLease", fn: legacy(workerTakeover)},
	{Name: "TwoWorkersRunEachEnqueuedRunOnce", fn: legacy(twoWorkers)},
	{Name: "HeldLeaseRefusesASecondDriver", fn: legacy(heldLease)},
	{Name: "UnsignedGrantIsRefusedWhenSignaturesAreRequired", fn: legacy(unsignedGrant)},
	{Name: "SignedGrantIsRecordedAndRunsOnce", fn: legacy(signedGrant)},
	{Name: "InterruptedSideEffectWaitsForAnOperator", fn: legacy(interruptedSideEffect), serial: true},
	{Name: "GateExecutesTheApprovedRequest", fn: legacy(gateApproved)},
	{Name: "RecheckReportsWhatAPolicyWouldDecideNow", fn: legacy(recheck)},
	{Name: "BudgetSettlesActualUsageAndRefusesBeforeTransport", fn: legacy(budgetSettlesTruthfully)},
	{Name: "UncertainReservationHoldsUntilReconciled", fn: legacy(budgetUncertainHolds)},
	{Name: "EgressDeniedRequestNeverLeaves", fn: legacy(egressDenied)},
	{Name: "Driver_CompletesAndPersists", fn: caseDriver_CompletesAndPersists},
	{Name: "Driver_InvalidArgumentsBecomeObservation", fn: caseDriver_InvalidArgumentsBecomeObservation},
	{Name: "Driver_InvalidArgumentsAreRecordedOutOfBand", fn: caseDriver_InvalidArgumentsAreRecordedOutOfBand},
	{Name: "Driver_PseudoDecisionKindsAreInvalid", fn: caseDriver_PseudoDecisionKindsAreInvalid},
	{Name: "Driver_PolicyDenyIsObservation", fn: caseDriver_PolicyDenyIsObservation},
	{Name: "Driver_PolicyAbortEndsRun", fn: caseDriver_PolicyAbortEndsRun},
	{Name: "Driver_StepLimit", fn: caseDriver_StepLimit},
	{Name: "Driver_IdenticalCallAndResultStops", fn: caseDriver_IdenticalCallAndResultStops},
	{Name: "Driver_TerminalToolCommitsWithTheRun", fn: caseDriver_TerminalToolCommitsWithTheRun},
	{Name: "Driver_ConsumersCannotCorruptEachOther", fn: caseDriver_ConsumersCannotCorruptEachOther},
	{Name: "Driver_CachedViewEqualsReloadedView", fn: caseDriver_CachedViewEqualsReloadedView},
	{Name: "Driver_DeepJSONIsRefusedWhereItEnters", fn: caseDriver_DeepJSONIsRefusedWhereItEnters},
	{Name: "Driver_HugeNumbersAreRefusedWhereTheyEnter", fn: caseDriver_HugeNumbersAreRefusedWhereTheyEnter},
	{Name: "Driver_CancelledContextAfterToolKeepsTheObservation", fn: caseDriver_CancelledContextAfterToolKeepsTheObservation},
	{Name: "NewDriver_SchemaReferencesOutsideItselfAreRefused", fn: caseNewDriver_SchemaReferencesOutsideItselfAreRefused},
	{Name: "Driver_LimitsEndTheRunBeforeTheNextStep", fn: caseDriver_LimitsEndTheRunBeforeTheNextStep},
	{Name: "Driver_PanicsAreErrorsOfTheirOwner", fn: caseDriver_PanicsAreErrorsOfTheirOwner},
	{Name: "Driver_ConsumersCannotCorruptTheirOwnLaterViews", fn: caseDriver_ConsumersCannotCorruptTheirOwnLaterViews},
	{Name: "Resume_OnlyTheLatestApprovalOfAStepGrants", fn: caseResume_OnlyTheLatestApprovalOfAStepGrants},
	{Name: "Resume_ApprovedArgumentsMeetTheCurrentSchema", fn: caseResume_ApprovedArgumentsMeetTheCurrentSchema},
	{Name: "Resume_ChangedSpecIsAnotherRequest", fn: caseResume_ChangedSpecIsAnotherRequest},
	{Name: "Resume_ConcurrentResumeExecutesOnce", fn: caseResume_ConcurrentResumeExecutesOnce},
	{Name: "Resume_CrashAfterResumeKeepsTheApprovedRequest", fn: caseResume_CrashAfterResumeKeepsTheApprovedRequest},
	{Name: "Resume_GrantNotResumedWithinTheTTLExpires", fn: caseResume_GrantNotResumedWithinTheTTLExpires},
	{Name: "Resume_ConcurrentRepauseAddsOneApproval", fn: caseResume_ConcurrentRepauseAddsOneApproval},
	{Name: "Lease_ResumeOfALiveRunIsRefused", fn: caseLease_ResumeOfALiveRunIsRefused},
	{Name: "Lease_LoopThatLosesItsLeaseStopsBeforeTheNextToolCall", fn: caseLease_LoopThatLosesItsLeaseStopsBeforeTheNextToolCall},
	{Name: "Lease_LapsedLeaseStartsNoSideEffect", fn: caseLease_LapsedLeaseStartsNoSideEffect},
	{Name: "Lease_SameLeaseOwnerNameIsTwoOwners", fn: caseLease_SameLeaseOwnerNameIsTwoOwners},
	{Name: "Resume_InterruptedStepIsReconciledAndContinued", fn: caseResume_InterruptedStepIsReconciledAndContinued, serial: true},
	{Name: "Resume_InterruptedSideEffectWaitsForAnOperator", fn: caseResume_InterruptedSideEffectWaitsForAnOperator, serial: true},
	{Name: "Worker_SharesEnqueuedRunsAndRunsEachOnce", fn: caseWorker_SharesEnqueuedRunsAndRunsEachOnce},
	{Name: "Worker_ApprovedRunResumesByItself", fn: caseWorker_ApprovedRunResumesByItself},
	{Name: "Worker_TakesOverALapsedLease", fn: caseWorker_TakesOverALapsedLease},
	{Name: "Worker_StopsAtAStepBoundaryAndReleasesTheLease", fn: caseWorker_StopsAtAStepBoundaryAndReleasesTheLease},
	{Name: "Worker_ConfigIsValidated", fn: caseWorker_ConfigIsValidated},
	{Name: "Gate_ApprovedStepExecutesTheRecordedRequest", fn: caseGate_ApprovedStepExecutesTheRecordedRequest},
	{Name: "Gate_GrantTTLHoldsUntilExecute", fn: caseGate_GrantTTLHoldsUntilExecute},
	{Name: "Gate_AbandonedAfterAllowedRunsNothing", fn: caseGate_AbandonedAfterAllowedRunsNothing},
	{Name: "Gate_AbandonedDuringExecutePausesForAnOperator", fn: caseGate_AbandonedDuringExecutePausesForAnOperator},
	{Name: "Gate_CallsAfterTheLeaseIsLostAreRefused", fn: caseGate_CallsAfterTheLeaseIsLostAreRefused},
	{Name: "Gate_HugeNumberIsAnInvalidDecision", fn: caseGate_HugeNumberIsAnInvalidDecision},
	{Name: "Policy_GateProposeAndAttachHandedTheSameBytes", fn: casePolicy_GateProposeAndAttachHandedTheSameBytes},
	{Name: "Gate_MisuseIsRefused", fn: caseGate_MisuseIsRefused},
	{Name: "Gate_ConcurrentStepsOfOneRunRunWhileASiblingWaits", fn: caseGate_ConcurrentStepsOfOneRunRunWhileASiblingWaits},
	{Name: "Gate_AwaitReturnsWhenDecidedExpiredOrCancelled", fn: caseGate_AwaitReturnsWhenDecidedExpiredOrCancelled},
	{Name: "Gate_AttachTellsPendingLeasedAndEndedApart", fn: caseGate_AttachTellsPendingLeasedAndEndedApart},
	{Name: "Gate_ExecuteFuncRunsTheCallersBodyOnce", fn: caseGate_ExecuteFuncRunsTheCallersBodyOnce},
	{Name: "Gate_ExecuteFuncIsNotRunAgainAfterACrash", fn: caseGate_ExecuteFuncIsNotRunAgainAfterACrash},
	{Name: "Gate_CrashApprovalDoesNotOverrideADeny", fn: caseGate_CrashApprovalDoesNotOverrideADeny},
	{Name: "Gate_RequestKeyFindsAnEarlierAnswerInAnotherRun", fn: caseGate_RequestKeyFindsAnEarlierAnswerInAnotherRun},
	{Name: "Gate_SpecOnlyGrantIsLeftForItsCaller", fn: caseGate_SpecOnlyGrantIsLeftForItsCaller},
	{Name: "Gate_TwoWaitingCallsAreAttachedOneAtATime", fn: caseGate_TwoWaitingCallsAreAttachedOneAtATime},
	{Name: "Gate_EveryCallCutOffByACrashIsAskedAbout", fn: caseGate_EveryCallCutOffByACrashIsAskedAbout},
	{Name: "Gate_SiblingGoesOnWhileAStepsWriteCommits", fn: caseGate_SiblingGoesOnWhileAStepsWriteCommits},
	{Name: "Gate_SiblingsWritingAtOnceKeepEachStepsOrder", fn: caseGate_SiblingsWritingAtOnceKeepEachStepsOrder},
	{Name: "Gate_CallRunsAllowedSiblingsWhileAWriteWaits", fn: caseGate_CallRunsAllowedSiblingsWhileAWriteWaits},
	{Name: "Gate_CallCollectsWhatIsRecordedInsteadOfAskingAgain", fn: caseGate_CallCollectsWhatIsRecordedInsteadOfAskingAgain},
	{Name: "Gate_CallCutOffByACrashAsksOnceAndRunsOnce", fn: caseGate_CallCutOffByACrashAsksOnceAndRunsOnce},
	{Name: "Gate_CallRefusesWhatItCannotRun", fn: caseGate_CallRefusesWhatItCannotRun},
	{Name: "Gate_AllowedCallCommitsTwice", fn: caseGate_AllowedCallCommitsTwice},
	{Name: "Approval_ApproveThenResumeExecutesRecordedRequest", fn: caseApproval_ApproveThenResumeExecutesRecordedRequest},
	{Name: "Approval_TamperedRowRefused", fn: caseApproval_TamperedRowRefused},
	{Name: "Approval_ShownDecisionIsAtomic", fn: caseApproval_ShownDecisionIsAtomic},
	{Name: "ApprovalHash_ErrorsRatherThanSubstituting", fn: caseApprovalHash_ErrorsRatherThanSubstituting},
	{Name: "Approval_PendingApprovalExpiresAfterTheTTL", fn: caseApproval_PendingApprovalExpiresAfterTheTTL},
	{Name: "Approvers_SignedDecisionIsRecordedAndVerifiesOffline", fn: caseApprovers_SignedDecisionIsRecordedAndVerifiesOffline},
	{Name: "Approvers_SignedDecisionMustBeThisOne", fn: caseApprovers_SignedDecisionMustBeThisOne},
	{Name: "Resume_RefusesAnUnsignedGrantOfARunThatRequiresOne", fn: caseResume_RefusesAnUnsignedGrantOfARunThatRequiresOne},
	{Name: "Resume_PolicyRequiredSignature", fn: caseResume_PolicyRequiredSignature},
	{Name: "Resume_PinnedKeysExcludeKeysEnrolledOnlyInTheDatabase", fn: caseResume_PinnedKeysExcludeKeysEnrolledOnlyInTheDatabase},
	{Name: "Approvers_InvitationIsOneTimeAndExpires", fn: caseApprovers_InvitationIsOneTimeAndExpires},
	{Name: "Cancel_LiveLoopStopsAtItsNextWrite", fn: caseCancel_LiveLoopStopsAtItsNextWrite},
	{Name: "Cancel_ToolOutcomeIsAppendedLate", fn: caseCancel_ToolOutcomeIsAppendedLate},
	{Name: "Cancel_LeavesNoApprovalPending", fn: caseCancel_LeavesNoApprovalPending},
	{Name: "Erase_RefusesARunWhoseToolIsStillRunning", fn: caseErase_RefusesARunWhoseToolIsStillRunning},
	{Name: "Erase_RefusesARunHoldingAnUnsettledReservation", fn: caseErase_RefusesARunHoldingAnUnsettledReservation},
	{Name: "Resume_GrantMustEqualWhatTheChainRecorded", fn: caseResume_GrantMustEqualWhatTheChainRecorded},
	{Name: "Resume_GrantCheckReadsOnlyItsStepsEvents", fn: caseResume_GrantCheckReadsOnlyItsStepsEvents},
	{Name: "Grant_DatabaseWriterCannotForge", fn: caseGrant_DatabaseWriterCannotForge},
	{Name: "Grant_SwappedSignatureIsRefused", fn: caseGrant_SwappedSignatureIsRefused},
	{Name: "Quorum_TwoOfThreeExecutesOnceAfterTheSecondVote", fn: caseQuorum_TwoOfThreeExecutesOnceAfterTheSecondVote},
	{Name: "Quorum_DatabaseWriterCannotForgeAVote", fn: caseQuorum_DatabaseWriterCannotForgeAVote},
	{Name: "Quorum_VoteOutsideTheOpenStageIsRefused", fn: caseQuorum_VoteOutsideTheOpenStageIsRefused},
	{Name: "Quorum_DenyByAnyoneInScopeEndsIt", fn: caseQuorum_DenyByAnyoneInScopeEndsIt},
	{Name: "Quorum_RemovedApproverNoLongerCounts", fn: caseQuorum_RemovedApproverNoLongerCounts},
	{Name: "Quorum_ChangedRequirementDoesNotInheritVotes", fn: caseQuorum_ChangedRequirementDoesNotInheritVotes},
	{Name: "Quorum_EachExpiryEndsWithItsOwnNamedReason", fn: caseQuorum_EachExpiryEndsWithItsOwnNamedReason},
	{Name: "Quorum_ScopeBindsSingleDecisions", fn: caseQuorum_ScopeBindsSingleDecisions},
	{Name: "Recheck_ByteReadingPolicyDecidesAlike", fn: caseRecheck_ByteReadingPolicyDecidesAlike},
	{Name: "Recheck_ReportsWhatItCannotAskAgain", fn: caseRecheck_ReportsWhatItCannotAskAgain},
	{Name: "Recheck_ChangedRequirementIsADifference", fn: caseRecheck_ChangedRequirementIsADifference},
}

// legacy adapts a case written against an opener of one database's stores.
func legacy(fn func(*testing.T, func(*testing.T) agentrt.Store)) func(*testing.T, *Backend) {
	return func(t *testing.T, b *Backend) {
		d := b.fresh(t)
		fn(t, func(t *testing.T) agentrt.Store { return d.openUnclosed(t) })
	}
}

// tool counts its calls.
type tool struct {
	spec agentrt.ToolSpec
	n    atomic.Int64
}

func simpleTool(name string, se agentrt.SideEffect) *tool {
	return &tool{spec: agentrt.ToolSpec{Name: name, Description: name, SideEffect: se, Timeout: 10 * time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func (c *tool) Spec() agentrt.ToolSpec { return c.spec }
func (c *tool) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	c.n.Add(1)
	return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}, nil
}

func closeLater(t *testing.T, st agentrt.Store) agentrt.Store {
	t.Cleanup(func() { st.Close() })
	return st
}

func verify(t *testing.T, st agentrt.Store) {
	t.Helper()
	rep, err := st.VerifyEvents(context.Background(), 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

func driver(t *testing.T, st agentrt.Store, agent agentrt.Agent, tools ...agentrt.Tool) *agentrt.Driver {
	t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: tools}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func driverRuns(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	note := simpleTool("note", agentrt.LocalMutation)
	d := driver(t, st, &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{}`, "a"), scripted.Complete(`{"ok":true}`)}}, note)
	r, err := d.Start(context.Background(), "g", agentrt.DefaultLimits())
	if err != nil || r.Status != agentrt.RunCompleted || note.n.Load() != 1 {
		t.Fatalf("run = %s, %v, %d calls; want COMPLETED with one call", r.Status, err, note.n.Load())
	}
	steps, err := st.ListSteps(context.Background(), r.ID)
	if err != nil || len(steps) != 2 || steps[0].Status != agentrt.StepDone {
		t.Fatalf("steps = %+v, %v", steps, err)
	}
	verify(t, st)
}

// startWaiting starts a run that pauses on an approval of send and returns
// the driver, the tool, the run and its pending approval.
func startWaiting(t *testing.T, st agentrt.Store, limits agentrt.Limits) (*agentrt.Driver, *tool, agentrt.Run, agentrt.Approval) {
	t.Helper()
	send := simpleTool("send", agentrt.RemoteMutation)
	d := driver(t, st, &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{"to":"x"}`, "send"), scripted.Complete(`{}`)}}, send)
	r, err := d.Start(context.Background(), "send x", limits)
	if err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("run = %s, %v; want WAITING_FOR_APPROVAL", r.Status, err)
	}
	return d, send, r, kit.PendingApproval(t, st, r.ID)
}

func approvalResumes(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	d, send, r, a := startWaiting(t, st, agentrt.DefaultLimits())
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, a.ID, a.Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, a.ID, a.Hash, "op", "again"); !errors.Is(err, agentrt.ErrNotPending) {
		t.Fatalf("a second decision = %v, want ErrNotPending", err)
	}
	r, err := d.Resume(ctx, r.ID)
	if err != nil || r.Status != agentrt.RunCompleted || send.n.Load() != 1 {
		t.Fatalf("resume = %s, %v, %d calls", r.Status, err, send.n.Load())
	}
	// Resuming an ended run runs nothing again.
	if _, err := d.Resume(ctx, r.ID); err == nil && send.n.Load() != 1 {
		t.Fatalf("a second resume ran the call again")
	}
	verify(t, st)
}

func rejectCancels(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	_, send, r, a := startWaiting(t, st, agentrt.DefaultLimits())
	if err := agentrt.RejectShown(ctx, st, nil, r.ID, a.ID, a.Hash, "op", "no"); err != nil {
		t.Fatal(err)
	}
	if got := kit.MustRun(t, st, r.ID); got.Status != agentrt.RunCancelled || send.n.Load() != 0 {
		t.Fatalf("after reject: %s, %d calls; want CANCELLED and none", got.Status, send.n.Load())
	}
	verify(t, st)
}

func cancelWaiting(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	d, send, r, a := startWaiting(t, st, agentrt.DefaultLimits())
	got, err := agentrt.Cancel(ctx, st, nil, r.ID, "op", "stop")
	if err != nil || got.Status != agentrt.RunCancelled {
		t.Fatalf("cancel = %s, %v", got.Status, err)
	}
	if _, err := agentrt.Cancel(ctx, st, nil, r.ID, "op", "again"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("cancel of a cancelled run = %v, want ErrRunState", err)
	}
	if _, err := d.Resume(ctx, r.ID); err == nil && send.n.Load() != 0 {
		t.Fatal("a cancelled run ran its call")
	}
	after, err := st.GetApproval(ctx, r.ID, a.ID)
	if err != nil || after.Status != agentrt.ApprovalCancelled {
		t.Fatalf("approval after cancel = %s, %v; want cancelled", after.Status, err)
	}
	verify(t, st)
}

func changedApproval(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	_, send, r, a := startWaiting(t, st, agentrt.DefaultLimits())
	wrong := fmt.Sprintf("%064x", 1)
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, a.ID, wrong, "op", "ok"); !errors.Is(err, agentrt.ErrApprovalChanged) {
		t.Fatalf("approve with another hash = %v, want ErrApprovalChanged", err)
	}
	if got := kit.PendingApproval(t, st, r.ID); got.Status != agentrt.ApprovalPending || send.n.Load() != 0 {
		t.Fatalf("approval is %s after a refused decision", got.Status)
	}
}

// worker starts a worker on st, with the default policy and a 5ms poll
// unless cfg names others, and returns a stop; the test's end stops it too.
func worker(t *testing.T, st agentrt.Store, cfg agentrt.WorkerConfig) (*agentrt.Worker, func()) {
	t.Helper()
	cfg.Store = st
	withDefaultPolicy(&cfg.EngineConfig)
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	w, stop := startWorker(t, cfg)
	var once sync.Once
	stopOnce := func() { once.Do(stop) }
	t.Cleanup(stopOnce)
	return w, stopOnce
}

// await waits for cond, polling the store, for up to a minute.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func workerApproved(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	send := simpleTool("send", agentrt.RemoteMutation)
	w, _ := worker(t, st, agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Tools: []agentrt.Tool{send}},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{}`, "s"), scripted.Complete(`{}`)}}})
	r, err := w.Driver().Enqueue(ctx, "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the approval", func() bool { return kit.MustRun(t, st, r.ID).Status == agentrt.RunWaiting })
	a := kit.PendingApproval(t, st, r.ID)
	// The decision is made on a second store, as an operator's process would.
	op := open(t)
	if err := agentrt.ApproveShown(ctx, op, nil, r.ID, a.ID, a.Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	op.Close()
	await(t, "the run to complete", func() bool { return kit.MustRun(t, st, r.ID).Status == agentrt.RunCompleted })
	if send.n.Load() != 1 {
		t.Fatalf("the approved call ran %d times, want once", send.n.Load())
	}
	verify(t, st)
}

func workerExpired(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	send := simpleTool("send", agentrt.RemoteMutation)
	limits := agentrt.DefaultLimits()
	limits.ApprovalTTL = time.Minute
	w, _ := worker(t, st, agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Tools: []agentrt.Tool{send}, Now: now},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{}`, "s"), scripted.Complete(`{}`)}}})
	r, err := w.Driver().Enqueue(ctx, "g", limits)
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the approval", func() bool { return kit.MustRun(t, st, r.ID).Status == agentrt.RunWaiting })
	a := kit.PendingApproval(t, st, r.ID)
	if a.ExpiresAt.IsZero() {
		t.Fatal("the approval has no expiry")
	}
	// Nobody decides; the engine's clock passes the expiry.
	skew.Store(int64(2 * time.Minute))
	await(t, "the worker to end the run", func() bool { return kit.MustRun(t, st, r.ID).Status != agentrt.RunWaiting })
	got := kit.MustRun(t, st, r.ID)
	if got.Status != agentrt.RunCancelled || got.Reason != agentrt.ReasonApprovalExpired || send.n.Load() != 0 {
		t.Fatalf("run = %s (%s), %d calls; want ended approval_expired with no call", got.Status, got.Reason, send.n.Load())
	}
	if a, err := st.GetApproval(ctx, r.ID, a.ID); err != nil || a.Status != agentrt.ApprovalExpired {
		t.Fatalf("approval = %s, %v; want expired", a.Status, err)
	}
	verify(t, st)
}

func workerTakeover(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	insertLapsedRun(t, st)
	worker(t, st, agentrt.WorkerConfig{Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.Complete(`{}`)}}})
	await(t, "the takeover", func() bool { return kit.MustRun(t, st, "r1").Status == agentrt.RunCompleted })
	evs, err := st.ListEvents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, ev := range evs {
		if ev.Type == agentrt.EventLeaseTakenOver {
			taken++
		}
	}
	if taken != 1 {
		t.Fatalf("takeovers recorded = %d, want 1", taken)
	}
	verify(t, st)
}

func twoWorkers(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	var mu sync.Mutex
	calls := map[string]int{}
	note := agentrt.ToolFunc{ToolSpec: simpleTool("note", agentrt.LocalMutation).spec,
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			mu.Lock()
			calls[c.RunID]++
			mu.Unlock()
			return agentrt.ToolResult{Content: json.RawMessage(`{}`)}, nil
		}}
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{}`, "a"), scripted.Complete(`{}`)}}
	w1, _ := worker(t, st, agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Tools: []agentrt.Tool{note}, LeaseOwner: "w1"}, Agent: agent, Concurrency: 2})
	second := closeLater(t, open(t))
	worker(t, second, agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Tools: []agentrt.Tool{note}, LeaseOwner: "w2"}, Agent: agent, Concurrency: 2})
	var ids []string
	for i := 0; i < 12; i++ {
		r, err := w1.Driver().Enqueue(ctx, "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		await(t, "run "+id, func() bool { return kit.MustRun(t, st, id).Status == agentrt.RunCompleted })
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if calls[id] != 1 {
			t.Errorf("run %s ran its call %d times, want once", id, calls[id])
		}
	}
	verify(t, st)
}

func heldLease(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		once.Do(func() { close(entered) })
		<-release
		return scripted.Complete(`{}`), nil
	})
	d1 := driver(t, st, agent)
	r, err := d1.Enqueue(ctx, "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := d1.Resume(ctx, r.ID); done <- err }()
	<-entered
	d2 := driver(t, closeLater(t, open(t)), &scripted.Agent{Decisions: []agentrt.Decision{scripted.Complete(`{}`)}})
	_, err = d2.Resume(ctx, r.ID)
	var le *agentrt.RunLeasedError
	if !errors.As(err, &le) {
		t.Fatalf("a second driver on a held run = %v, want *RunLeasedError", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := kit.MustRun(t, st, r.ID); got.Status != agentrt.RunCompleted {
		t.Fatalf("run = %s", got.Status)
	}
}

func unsignedGrant(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	ctx := context.Background()
	limits := agentrt.DefaultLimits()
	limits.RequireSignedGrant = true
	d, send, r, a := startWaiting(t, st, limits)
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, a.ID, a.Hash, "op", "ok"); !errors.Is(err, agentrt.ErrUnsignedGrant) {
		t.Fatalf("an unsigned grant = %v, want ErrUnsignedGrant", err)
	}
	if _, err := d.Resume(ctx, r.ID); err == nil || send.n.Load() != 0 {
		t.Fatalf("resume after a refused grant = %v, %d calls; want an error and none", err, send.n.Load())
	}
	if got := kit.PendingApproval(t, st, r.ID); got.Status != agentrt.ApprovalPending {
		t.Fatalf("approval is %s", got.Status)
	}
}
