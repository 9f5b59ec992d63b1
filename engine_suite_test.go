package agentrt_test

import (
	"context"
	"database/sql"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/sqlite"
)

// sqliteBackend is the engine suite's SQLite: a file per test.
var sqliteBackend = enginetest.Backend{
	Name:  "sqlite",
	Fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "runs.db") },
	Open: func(_ context.Context, path string) (agentrt.Store, error) {
		st, err := sqlite.Open(path)
		if err != nil {
			return nil, err
		}
		return st, nil
	},
	Raw: func(path string) (*sql.DB, error) {
		return sql.Open("sqlite", "file://"+path+"?_pragma=busy_timeout(5000)")
	},
}

// The engine suite's first behaviours on SQLite; the postgres module runs
// every case of the suite on a real cluster (TestEngine_Suite there).
func TestEngine_Suite(t *testing.T) {
	for _, name := range enginetest.Names() {
		if !strings.Contains(name, "_") {
			t.Run(name, func(t *testing.T) { enginetest.Run(t, sqliteBackend, name) })
		}
	}
}

// onSQLite runs the suite's case named as the calling test, less its Test
// prefix, on SQLite.
func onSQLite(t *testing.T) {
	t.Helper()
	enginetest.Run(t, sqliteBackend, strings.TrimPrefix(t.Name(), "Test"))
}

// Every Subject_Behaviour case of the suite is a top-level test here, so
// it runs on SQLite under the name the issues and docs/status.md give it.
func TestEngine_EveryCaseRunsOnSQLite(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "engine_suite_test.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			defined[fn.Name.Name] = true
		}
	}
	for _, name := range enginetest.Names() {
		if strings.Contains(name, "_") && !defined["Test"+name] {
			t.Errorf("enginetest case %s has no Test%s in engine_suite_test.go", name, name)
		}
	}
}

// The suite's cases on SQLite, one top-level test each.
func TestDriver_CompletesAndPersists(t *testing.T)                           { onSQLite(t) }
func TestDriver_InvalidArgumentsBecomeObservation(t *testing.T)              { onSQLite(t) }
func TestDriver_InvalidArgumentsAreRecordedOutOfBand(t *testing.T)           { onSQLite(t) }
func TestDriver_PseudoDecisionKindsAreInvalid(t *testing.T)                  { onSQLite(t) }
func TestDriver_PolicyDenyIsObservation(t *testing.T)                        { onSQLite(t) }
func TestDriver_PolicyAbortEndsRun(t *testing.T)                             { onSQLite(t) }
func TestDriver_StepLimit(t *testing.T)                                      { onSQLite(t) }
func TestDriver_IdenticalCallAndResultStops(t *testing.T)                    { onSQLite(t) }
func TestDriver_TerminalToolCommitsWithTheRun(t *testing.T)                  { onSQLite(t) }
func TestDriver_ConsumersCannotCorruptEachOther(t *testing.T)                { onSQLite(t) }
func TestDriver_CachedViewEqualsReloadedView(t *testing.T)                   { onSQLite(t) }
func TestDriver_DeepJSONIsRefusedWhereItEnters(t *testing.T)                 { onSQLite(t) }
func TestDriver_HugeNumbersAreRefusedWhereTheyEnter(t *testing.T)            { onSQLite(t) }
func TestDriver_CancelledContextAfterToolKeepsTheObservation(t *testing.T)   { onSQLite(t) }
func TestNewDriver_SchemaReferencesOutsideItselfAreRefused(t *testing.T)     { onSQLite(t) }
func TestDriver_LimitsEndTheRunBeforeTheNextStep(t *testing.T)               { onSQLite(t) }
func TestDriver_PanicsAreErrorsOfTheirOwner(t *testing.T)                    { onSQLite(t) }
func TestDriver_ConsumersCannotCorruptTheirOwnLaterViews(t *testing.T)       { onSQLite(t) }
func TestResume_OnlyTheLatestApprovalOfAStepGrants(t *testing.T)             { onSQLite(t) }
func TestResume_ApprovedArgumentsMeetTheCurrentSchema(t *testing.T)          { onSQLite(t) }
func TestResume_ChangedSpecIsAnotherRequest(t *testing.T)                    { onSQLite(t) }
func TestResume_ConcurrentResumeExecutesOnce(t *testing.T)                   { onSQLite(t) }
func TestResume_CrashAfterResumeKeepsTheApprovedRequest(t *testing.T)        { onSQLite(t) }
func TestResume_GrantNotResumedWithinTheTTLExpires(t *testing.T)             { onSQLite(t) }
func TestResume_ConcurrentRepauseAddsOneApproval(t *testing.T)               { onSQLite(t) }
func TestLease_ResumeOfALiveRunIsRefused(t *testing.T)                       { onSQLite(t) }
func TestLease_LoopThatLosesItsLeaseStopsBeforeTheNextToolCall(t *testing.T) { onSQLite(t) }
func TestLease_LapsedLeaseStartsNoSideEffect(t *testing.T)                   { onSQLite(t) }
func TestLease_SameLeaseOwnerNameIsTwoOwners(t *testing.T)                   { onSQLite(t) }
func TestResume_InterruptedStepIsReconciledAndContinued(t *testing.T)        { onSQLite(t) }
func TestResume_InterruptedSideEffectWaitsForAnOperator(t *testing.T)        { onSQLite(t) }
func TestWorker_SharesEnqueuedRunsAndRunsEachOnce(t *testing.T)              { onSQLite(t) }
func TestWorker_ApprovedRunResumesByItself(t *testing.T)                     { onSQLite(t) }
func TestWorker_TakesOverALapsedLease(t *testing.T)                          { onSQLite(t) }
func TestWorker_StopsAtAStepBoundaryAndReleasesTheLease(t *testing.T)        { onSQLite(t) }
func TestWorker_ConfigIsValidated(t *testing.T)                              { onSQLite(t) }
func TestGate_ApprovedStepExecutesTheRecordedRequest(t *testing.T)           { onSQLite(t) }
func TestGate_GrantTTLHoldsUntilExecute(t *testing.T)                        { onSQLite(t) }
func TestGate_AbandonedAfterAllowedRunsNothing(t *testing.T)                 { onSQLite(t) }
func TestGate_AbandonedDuringExecutePausesForAnOperator(t *testing.T)        { onSQLite(t) }
func TestGate_CallsAfterTheLeaseIsLostAreRefused(t *testing.T)               { onSQLite(t) }
func TestGate_HugeNumberIsAnInvalidDecision(t *testing.T)                    { onSQLite(t) }
func TestPolicy_GateProposeAndAttachHandedTheSameBytes(t *testing.T)         { onSQLite(t) }
func TestGate_MisuseIsRefused(t *testing.T)                                  { onSQLite(t) }
func TestGate_ConcurrentStepsOfOneRunRunWhileASiblingWaits(t *testing.T)     { onSQLite(t) }
func TestGate_AwaitReturnsWhenDecidedExpiredOrCancelled(t *testing.T)        { onSQLite(t) }
func TestGate_AttachTellsPendingLeasedAndEndedApart(t *testing.T)            { onSQLite(t) }
func TestGate_ExecuteFuncRunsTheCallersBodyOnce(t *testing.T)                { onSQLite(t) }
func TestGate_ExecuteFuncIsNotRunAgainAfterACrash(t *testing.T)              { onSQLite(t) }
func TestGate_CrashApprovalDoesNotOverrideADeny(t *testing.T)                { onSQLite(t) }
func TestGate_RequestKeyFindsAnEarlierAnswerInAnotherRun(t *testing.T)       { onSQLite(t) }
func TestGate_SpecOnlyGrantIsLeftForItsCaller(t *testing.T)                  { onSQLite(t) }
func TestGate_TwoWaitingCallsAreAttachedOneAtATime(t *testing.T)             { onSQLite(t) }
func TestGate_EveryCallCutOffByACrashIsAskedAbout(t *testing.T)              { onSQLite(t) }
func TestGate_SiblingGoesOnWhileAStepsWriteCommits(t *testing.T)             { onSQLite(t) }
func TestGate_SiblingsWritingAtOnceKeepEachStepsOrder(t *testing.T)          { onSQLite(t) }
func TestGate_CallRunsAllowedSiblingsWhileAWriteWaits(t *testing.T)          { onSQLite(t) }
func TestGate_CallCollectsWhatIsRecordedInsteadOfAskingAgain(t *testing.T)   { onSQLite(t) }
func TestGate_CallCutOffByACrashAsksOnceAndRunsOnce(t *testing.T)            { onSQLite(t) }
func TestGate_CallRefusesWhatItCannotRun(t *testing.T)                       { onSQLite(t) }
func TestGate_AllowedCallCommitsTwice(t *testing.T)                          { onSQLite(t) }
func TestApproval_ApproveThenResumeExecutesRecordedRequest(t *testing.T)     { onSQLite(t) }
func TestApproval_TamperedRowRefused(t *testing.T)                           { onSQLite(t) }
func TestApproval_ShownDecisionIsAtomic(t *testing.T)                        { onSQLite(t) }
func TestApprovalHash_ErrorsRatherThanSubstituting(t *testing.T)             { onSQLite(t) }
func TestApproval_PendingApprovalExpiresAfterTheTTL(t *testing.T)            { onSQLite(t) }
func TestApprovers_SignedDecisionIsRecordedAndVerifiesOffline(t *testing.T)  { onSQLite(t) }
func TestApprovers_SignedDecisionMustBeThisOne(t *testing.T)                 { onSQLite(t) }
func TestResume_RefusesAnUnsignedGrantOfARunThatRequiresOne(t *testing.T)    { onSQLite(t) }
func TestResume_PolicyRequiredSignature(t *testing.T)                        { onSQLite(t) }
func TestResume_PinnedKeysExcludeKeysEnrolledOnlyInTheDatabase(t *testing.T) { onSQLite(t) }
func TestApprovers_InvitationIsOneTimeAndExpires(t *testing.T)               { onSQLite(t) }
func TestCancel_LiveLoopStopsAtItsNextWrite(t *testing.T)                    { onSQLite(t) }
func TestCancel_ToolOutcomeIsAppendedLate(t *testing.T)                      { onSQLite(t) }
func TestCancel_LeavesNoApprovalPending(t *testing.T)                        { onSQLite(t) }
func TestErase_RefusesARunWhoseToolIsStillRunning(t *testing.T)              { onSQLite(t) }
func TestErase_RefusesARunHoldingAnUnsettledReservation(t *testing.T)        { onSQLite(t) }
func TestResume_GrantMustEqualWhatTheChainRecorded(t *testing.T)             { onSQLite(t) }
func TestResume_GrantCheckReadsOnlyItsStepsEvents(t *testing.T)              { onSQLite(t) }
func TestGrant_DatabaseWriterCannotForge(t *testing.T)                       { onSQLite(t) }
func TestGrant_SwappedSignatureIsRefused(t *testing.T)                       { onSQLite(t) }
func TestRecheck_ByteReadingPolicyDecidesAlike(t *testing.T)                 { onSQLite(t) }
func TestRecheck_ReportsWhatItCannotAskAgain(t *testing.T)                   { onSQLite(t) }
func TestRecheck_ChangedRequirementIsADifference(t *testing.T)               { onSQLite(t) }

// Multi-party approvals (issue 43).
func TestQuorum_TwoOfThreeExecutesOnceAfterTheSecondVote(t *testing.T) { onSQLite(t) }
func TestQuorum_DatabaseWriterCannotForgeAVote(t *testing.T)           { onSQLite(t) }
func TestQuorum_VoteOutsideTheOpenStageIsRefused(t *testing.T)         { onSQLite(t) }
func TestQuorum_DenyByAnyoneInScopeEndsIt(t *testing.T)                { onSQLite(t) }
func TestQuorum_RemovedApproverNoLongerCounts(t *testing.T)            { onSQLite(t) }
func TestQuorum_ChangedRequirementDoesNotInheritVotes(t *testing.T)    { onSQLite(t) }
func TestQuorum_EachExpiryEndsWithItsOwnNamedReason(t *testing.T)      { onSQLite(t) }
func TestQuorum_ScopeBindsSingleDecisions(t *testing.T)                { onSQLite(t) }
