package agentrt_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/agentrt/agentrt"
)

// metadataFields are the text fields of what the chain and the step,
// approval and model-call rows record that are not content, each with who
// writes it. None is a value a model, a server or a tool chooses: those
// are content, removed by erasure. A new text field is one or the other,
// and TestCatalogue_EveryTextFieldIsContentOrNamedMetadata says so.
var metadataFields = map[string]string{
	"RunCreatedPayload.Tools":                "the registered tools' specs: configuration",
	"DisclosureAppliedPayload.Tool":          "a registered tool's name",
	"DisclosureAppliedPayload.Rules":         "the operator's disclosure rule ids: configuration",
	"DisclosureFindingRecord.Rule":           "the operator's disclosure rule id: configuration",
	"ArgumentSecret.Kind":                    "a disclosure rule id: configuration",
	"RunCreatedPayload.Disclosure":           "the operator's disclosure configuration, as it describes itself",
	"DisclosureFindingRecord.Action":         "a disclosure action: runtime enum",
	"Limits.Labels":                          "the caller's labels: configuration",
	"ApprovalVotedPayload.ApprovalID":        "an id the runtime made",
	"ApprovalVotedPayload.ApproverID":        "an enrolled approver's id",
	"ApprovalVotedPayload.By":                "an enrolled approver's name",
	"ApprovalVotedPayload.CredentialID":      "an enrolled credential's id",
	"ApprovalVotedPayload.Decision":          "approve or reject: runtime enum",
	"ApproverAccessSetPayload.ApproverID":    "an enrolled approver's id",
	"ApproverAccessSetPayload.By":            "the operator who set the roles",
	"ApproverAccessSetPayload.Name":          "an enrolled approver's name",
	"ApproverAccessSetPayload.Roles":         "role names the operator set: configuration",
	"ApproverScope.Kinds":                    "approval kinds the operator scoped: configuration",
	"ApproverScope.Labels":                   "run labels the operator scoped: configuration",
	"ApproverScope.SideEffects":              "side-effect classes the operator scoped: configuration",
	"ApproverScope.Tools":                    "tool names the operator scoped: configuration",
	"Stage.Approvers":                        "approver ids or names the policy's author names",
	"Stage.Exclude":                          "requester or nothing: validated",
	"Stage.Quantifier":                       "all, any or m_of_n: validated",
	"Stage.Roles":                            "role names the policy's author names",
	"ApprovalRequestedPayload.PolicyVersion": "the policy's id: runtime",
	"ApprovalDecidedPayload.Expiry":          "which expiry: runtime enum",
	"RunClaimedPayload.Owner":                "the worker's lease owner name: configuration",
	"RunClaimedPayload.Status":               "a run status: runtime enum",
	"RunFinishedPayload.By":                  "the operator who cancelled",
	"RunFinishedPayload.Reason":              "a terminal reason: runtime enum",
	"RunFinishedPayload.Status":              "a run status: runtime enum",
	"RunResumedPayload.After":                "what the run resumed after: runtime enum",
	"RunResumedPayload.ApprovalID":           "an id the runtime made",
	"RunWaitingPayload.ApprovalIDs":          "ids the runtime made",
	"RunErasedPayload.By":                    "the operator who erased",
	"RunErasedPayload.Reason":                "the operator's reason for the erasure",
	"RunErasedPayload.Rows":                  "counts keyed by table name: runtime",
	"ErasedEvent.Digest":                     "a keyed digest whose key the erasure deleted",
	"ErasedEvent.Kept":                       "the hash of what erasure kept",
	"Decision.Kind":                          "the agent's decision kind (an unknown one is recorded and refused)",
	"PolicyDecision.Outcome":                 "a policy outcome: runtime enum, validated",
	"PolicyDecision.Kind":                    "the approval kind the policy's author names",
	"StepPolicyPayload.PolicyID":             "a hash of the policy: runtime",
	"StepPolicyPayload.SpecHash":             "a hash of the registered spec: runtime",
	"ViewSummary.Status":                     "a run status: runtime enum",
	"ToolStartedPayload.Tool":                "a registered tool's name (only a registered tool starts)",
	"ToolStartedPayload.ApprovalID":          "an id the runtime made",
	"ToolFinishedPayload.Tool":               "a registered tool's name",
	"BlockDigest.Type":                       "a block type, validated (an unknown one becomes text)",
	"Observation.Kind":                       "an observation kind: runtime enum",
	"StepFailedPayload.Observation":          "an observation kind: runtime enum",
	"StepInterruptedPayload.PreviousStatus":  "a step status: runtime enum",
	"ApprovalRequestedPayload.ApprovalID":    "an id the runtime made",
	"ApprovalRequestedPayload.Kind":          "the approval kind the policy's author names",
	"ApprovalDecidedPayload.ApprovalID":      "an id the runtime made",
	"ApprovalDecidedPayload.ApproverID":      "an enrolled approver's id",
	"ApprovalDecidedPayload.By":              "the person who decided, as enrolled or named by the operator",
	"ApprovalDecidedPayload.CredentialID":    "an enrolled credential's id",
	"ApprovalDecidedPayload.Status":          "an approval status: runtime enum",
	"LimitExceededPayload.Reason":            "a terminal reason: runtime enum",
	"LoopDetectedPayload.Tool":               "a registered tool's name (only calls that ran repeat)",
	"LeaseTakenOverPayload.Owner":            "a lease owner name: configuration",
	"LeaseTakenOverPayload.PreviousOwner":    "a lease owner name: configuration",
	"LeaseTakenOverPayload.Status":           "a run status: runtime enum",
	"ModelDispatchedPayload.CallID":          "an id the runtime made",
	"ModelDispatchedPayload.Model":           "the configured model's name",
	"ModelDispatchedPayload.Provider":        "the configured provider's name",
	"ModelDispatchedPayload.PriceVersion":    "a hash of the price table: runtime",
	"EgressManifest.CallID":                  "an id the runtime made",
	"EgressManifest.Provider":                "the configured provider's name",
	"EgressManifest.Model":                   "the configured model's name",
	"EgressManifest.Host":                    "the configured endpoint's host",
	"BudgetHold.BudgetID":                    "an id the runtime made",
	"BudgetHold.Budget":                      "a budget's name: configuration",
	"ModelCallFinishedPayload.CallID":        "an id the runtime made",
	"ModelCallFinishedPayload.Status":        "a model call status: runtime enum",
	"ModelCallFinishedPayload.Model":         "the configured model's name",
	"ModelCallFinishedPayload.PriceVersion":  "a hash of the price table: runtime",
	"SettlementNote.BudgetID":                "an id the runtime made",
	"SettlementNote.Budget":                  "a budget's name: configuration",
	"SettlementNote.Status":                  "a reservation status: runtime enum",
	"EgressDeniedPayload.Reason":             "the runtime's sentence naming the configured value refused",
	"PriceVersionAddedPayload.ID":            "a hash of the price table: runtime",
	"PriceVersionAddedPayload.Table":         "the configured prices, keyed by model name",
	"BudgetChangedPayload.Action":            "runtime enum",
	"BudgetChangedPayload.By":                "the operator",
	"Budget.ID":                              "an id the runtime made",
	"Budget.Name":                            "a budget's name: configuration",
	"Budget.Scope":                           "a budget's scope: configuration",
	"Budget.Window":                          "a budget window: runtime enum",
	"Budget.CreatedBy":                       "the operator",
	"Budget.UpdatedBy":                       "the operator",
	"Budget.RetiredBy":                       "the operator",
	"BudgetReconciledPayload.CallID":         "an id the runtime made",
	"BudgetReconciledPayload.BudgetID":       "an id the runtime made",
	"BudgetReconciledPayload.Budget":         "a budget's name: configuration",
	"BudgetReconciledPayload.From":           "a reservation status: runtime enum",
	"BudgetReconciledPayload.By":             "the operator",
	"ApproverInvitedPayload.By":              "the operator",
	"ApproverInvitedPayload.ExpiresAt":       "a time the runtime computed",
	"ApproverInvitedPayload.InviteID":        "an id the runtime made",
	"ApproverInvitedPayload.Name":            "the approver's name as the operator gave it",
	"ApproverEnrolledPayload.Algorithm":      "a signature algorithm, validated",
	"ApproverEnrolledPayload.ApproverID":     "an id the runtime made",
	"ApproverEnrolledPayload.By":             "the operator",
	"ApproverEnrolledPayload.CredentialID":   "the enrolled credential's id",
	"ApproverEnrolledPayload.InviteID":       "an id the runtime made",
	"ApproverEnrolledPayload.Kind":           "a credential kind, validated",
	"ApproverEnrolledPayload.Name":           "the approver's name as the operator gave it",
	"ApproverEnrolledPayload.Origin":         "the console's configured origin",
	"ApproverEnrolledPayload.PublicKey":      "the enrolled public key",
	"ApproverEnrolledPayload.RPID":           "the console's configured relying party id",
	"ApproverRemovedPayload.ApproverID":      "an id the runtime made",
	"ApproverRemovedPayload.By":              "the operator",
	"ApproverRemovedPayload.Name":            "the approver's name as the operator gave it",
	"ToolRequest.RunID":                      "an id",
	"ToolRequest.StepID":                     "an id the runtime made",
	"ToolSpec.Name":                          "a registered tool's name: configuration",
	"ToolSpec.Description":                   "a registered tool's description: configuration",
	"ToolSpec.InputSchema":                   "a registered tool's schema: configuration",
	"ToolSpec.SideEffect":                    "a side-effect class, validated",
}

// textFields lists, as Type.Field, every exported field of t (at any
// depth, not inside a field tagged content or digest) that can hold text:
// strings, bytes and raw JSON, and maps keyed by strings.
func textFields(t reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != reflect.TypeOf(agentrt.Run{}).PkgPath() {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("audit") == "content" || f.Tag.Get("audit") == "digest" {
			continue
		}
		if f.Anonymous {
			textFields(f.Type, seen, out)
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.String, ft.Kind() == reflect.Slice, ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String:
			out[t.Name()+"."+f.Name] = true
		}
		textFields(ft, seen, out)
	}
}

// Every text field of every event payload, and of the decision, policy
// decision, observation and request the step and approval rows keep, is
// tagged content (or a content digest) or listed as metadata saying who
// writes it: a field a model, a server or a tool could fill cannot be
// added without erasure removing it, unless someone says why it is not
// theirs to fill.
func TestCatalogue_EveryTextFieldIsContentOrNamedMetadata(t *testing.T) {
	got := map[string]bool{}
	seen := map[reflect.Type]bool{}
	for _, k := range agentrt.EventCatalogue() {
		textFields(reflect.TypeOf(k.Payload), seen, got)
	}
	for _, v := range []any{agentrt.Decision{}, agentrt.PolicyDecision{}, agentrt.Observation{}, agentrt.ToolRequest{}} {
		textFields(reflect.TypeOf(v), seen, got)
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := metadataFields[n]; !ok {
			t.Errorf("%s holds text and is not tagged content: tag it audit:\"content\", or list it in metadataFields saying who writes it", n)
		}
	}
	for n := range metadataFields {
		if !got[n] {
			t.Errorf("metadataFields lists %s, which is not an untagged text field of the catalogue", n)
		}
	}
}
