package agentrt_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/view"
)

// notStored names the record fields a store does not keep, and why.
var notStored = map[string]string{
	"Step.DecodeError":     "set by a read that could not decode a column, never written",
	"Approval.DecodeError": "set by a read that could not decode a column, never written",
}

// Every field of a step (its decision, policy decision and observation
// included) and of a decided, signed approval comes back from a SQLite
// file, read by a second handle, as it was written: a field a store forgot
// to write or read shows up by its path.
func TestStore_EveryRecordFieldRoundTripsThroughSQLite(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var step agentrt.Step
	agentrt.FillEveryField(t, &step)
	step.RunID, step.Status = "run-1", agentrt.StepAwaitingApproval
	var ap agentrt.Approval
	agentrt.FillEveryField(t, &ap)
	ap.RunID, ap.StepID, ap.Status = "run-1", step.ID, agentrt.ApprovalApproved
	// The approver and key columns are written from the signature.
	ap.ApproverID, ap.CredentialID = ap.Signature.ApproverID, ap.Signature.CredentialID
	pending := ap
	pending.Status = agentrt.ApprovalPending
	_, err := st.Update(ctx, func(tx agentrt.Tx) error {
		run := agentrt.Run{ID: "run-1", Status: agentrt.RunWaiting, Limits: agentrt.DefaultLimits(), CreatedAt: step.StartedAt}
		if err := tx.RunInsert(run); err != nil {
			return err
		}
		if err := tx.StepInsert(step); err != nil {
			return err
		}
		if err := tx.ApprovalInsert(pending); err != nil {
			return err
		}
		return tx.ApprovalDecide(agentrt.ApprovalDecide{ID: ap.ID, RunID: ap.RunID, From: agentrt.ApprovalPending,
			Status: ap.Status, DecidedAt: ap.DecidedAt, DecidedBy: ap.DecidedBy, Note: ap.Note, Signature: ap.Signature})
	})
	if err != nil {
		t.Fatal(err)
	}
	st2 := reopen(t, st)
	steps, err := st2.ListSteps(ctx, "run-1")
	if err != nil || len(steps) != 1 {
		t.Fatalf("ListSteps = %d steps, %v", len(steps), err)
	}
	approvals, err := st2.ListApprovals(ctx, "run-1")
	if err != nil || len(approvals) != 1 {
		t.Fatalf("ListApprovals = %d approvals, %v", len(approvals), err)
	}
	for _, c := range []struct{ wrote, read any }{{step, steps[0]}, {ap, approvals[0]}} {
		for _, p := range agentrt.DiffPaths(c.wrote, c.read) {
			if notStored[p] == "" {
				t.Errorf("%s did not round-trip through SQLite: write and read it in internal/sqlstore, or name it in notStored", p)
			}
		}
	}
	for p := range notStored {
		if !slices.Contains(agentrt.FieldPaths(reflect.TypeOf(step)), p) && !slices.Contains(agentrt.FieldPaths(reflect.TypeOf(ap)), p) {
			t.Errorf("notStored names %s, which no record has: remove it", p)
		}
	}
}

// stepSummaryLeavesOut names the fields of a step that view.SummarizeStep,
// the one line an operator surface prints per step, does not show, and
// why. Every other field must change the line.
var stepSummaryLeavesOut = map[string]string{
	"Step.RunID":    "a summary is listed under its run",
	"Step.SpecHash": "an identifier of the tool's spec; the tool's name is shown",
	"Step.PolicyID": "which policy answered is an audit fact, in the step's events",
	"Step.Policy.Requirement.Stages[0].Quantifier":   "the requirement is shown with its approval's stages ('agentrt show')",
	"Step.Policy.Requirement.Stages[0].M":            "the requirement is shown with its approval's stages ('agentrt show')",
	"Step.Policy.Requirement.Stages[0].Roles[0]":     "the requirement is shown with its approval's stages ('agentrt show')",
	"Step.Policy.Requirement.Stages[0].Approvers[0]": "the requirement is shown with its approval's stages ('agentrt show')",
	"Step.Policy.Requirement.Stages[0].Exclude[0]":   "the requirement is shown with its approval's stages ('agentrt show')",
	"Step.Decision.Result":                           "a completion's result is the run's result, shown with the run",
	"Step.Decision.InvalidArgs":                      "unusable arguments kept verbatim for audit; the observation says they were refused",
	"Step.Decision.InvalidResult":                    "an unusable result kept verbatim for audit; the observation says it was refused",
	"Step.Decision.InvalidBase64":                    "says how InvalidArgs/InvalidResult are written",
	"Step.Policy.Reason":                             "the outcome is shown; its reason is in the step's events and an approval's detail",
	"Step.Policy.Kind":                               "the approval kind, shown with the approval",
	"Step.Policy.Capability":                         "shown with the approval it asked for",
	"Step.Policy.Presentation":                       "shown with the approval it asked for",
	"Step.Policy.TTL":                                "bounds the approval, whose expiry is shown with it",
	"Step.Policy.RequireSignature":                   "a condition on the approval's grant, enforced when it is decided",
	"Step.Observation.Content":                       "the tool's whole result; the summary is its one-line account",
	"Step.Observation.ContentHash":                   "an identifier of the content, for verification",
	"Step.Observation.FailureClass":                  "the observation's kind and summary say the step failed",
	"Step.Observation.FailureMessage":                "the source's own account, bounded, in the step's events",
	"Step.Observation.Blocks[0].Type":                "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].MIMEType":            "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Text":                "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Data":                "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].URI":                 "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Name":                "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Title":               "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Description":         "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Size":                "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].SHA256":              "a result's blocks are content, like Content",
	"Step.Observation.Blocks[0].Truncated":           "a result's blocks are content, like Content",
}

// approvalKeptWhole names the text fields of an approval that
// view.BoundApproval hands on unbounded, and why. Every other text field
// must come back bounded.
var approvalKeptWhole = map[string]string{
	"Approval.ID":                                 "an id names what was stored",
	"Approval.RunID":                              "an id names what was stored",
	"Approval.StepID":                             "an id names what was stored",
	"Approval.Request.RunID":                      "an id names what was stored",
	"Approval.Request.StepID":                     "an id names what was stored",
	"Approval.Request.Spec.SideEffect":            "one of four side-effect classes",
	"Approval.Request.Secrets[0].Pointer":         "never set on an approval: its recorded request leaves the secrets out (ToolRequest.Secrets)",
	"Approval.Request.Secrets[0].Kind":            "never set on an approval: its recorded request leaves the secrets out (ToolRequest.Secrets)",
	"Approval.Hash":                               "the hash a decision must name, never changed",
	"Approval.PolicyVersion":                      "the policy's id, which the hash binds",
	"Approval.Requirement.Stages[0].Quantifier":   "all, any or m_of_n, validated at the pause",
	"Approval.Requirement.Stages[0].Roles[0]":     "a role name of at most 128 bytes, validated at the pause; the hash binds it",
	"Approval.Requirement.Stages[0].Approvers[0]": "an approver id or name of at most 128 bytes, validated at the pause; the hash binds it",
	"Approval.Requirement.Stages[0].Exclude[0]":   "requester, validated at the pause",
	"Approval.Status":                             "one of the approval states",
	"Approval.ApproverID":                         "an id names what was stored",
	"Approval.CredentialID":                       "an id names what was stored",
	"Approval.Signature.Statement.RunID":          "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Statement.ApprovalID":     "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Statement.ApprovalHash":   "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Statement.Decision":       "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Statement.Note":           "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Statement.Nonce":          "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.ApproverID":               "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.CredentialID":             "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Algorithm":                "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.Signature":                "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.AuthenticatorData":        "what was signed is shown whole so the signature can be checked",
	"Approval.Signature.ClientDataJSON":           "what was signed is shown whole so the signature can be checked",
}

// Every field of a step either changes the line view.SummarizeStep prints
// for it or is named, with a reason, as left out; a field added to Step,
// Decision, PolicyDecision or Observation fails here until it is one or
// the other.
func TestView_EveryStepFieldIsSummarizedOrNamedAsLeftOut(t *testing.T) {
	var full agentrt.Step
	agentrt.FillEveryField(t, &full)
	empty := func() agentrt.Step {
		return agentrt.Step{Decision: &agentrt.Decision{}, Policy: &agentrt.PolicyDecision{}, Observation: &agentrt.Observation{}}
	}
	base := empty()
	blank := view.SummarizeStep(base)
	paths := agentrt.FieldPaths(reflect.TypeOf(full))
	for _, p := range paths {
		st := empty()
		copyLeaf(reflect.ValueOf(&st).Elem(), reflect.ValueOf(full), strings.Split(p, ".")[1:])
		shown := !reflect.DeepEqual(view.SummarizeStep(st), blank)
		switch why, out := stepSummaryLeavesOut[p]; {
		case !shown && !out:
			t.Errorf("%s does not change a step's summary: show it in view.SummarizeStep, or name it in stepSummaryLeavesOut with the reason", p)
		case shown && out:
			t.Errorf("%s changes a step's summary, yet stepSummaryLeavesOut says it is left out (%s): remove the line", p, why)
		}
	}
	for p := range stepSummaryLeavesOut {
		if !slices.Contains(paths, p) {
			t.Errorf("stepSummaryLeavesOut names %s, which Step does not have: remove it", p)
		}
	}
}

// Every text field of an approval (string, raw JSON or bytes) comes back
// from view.BoundApproval bounded when it is long, or is named, with a
// reason, as kept whole; every other field comes back unchanged. A field
// added to Approval fails here until it is one or the other.
func TestView_EveryApprovalFieldIsBoundedOrNamedAsKeptWhole(t *testing.T) {
	var a agentrt.Approval
	agentrt.FillEveryField(t, &a)
	long := strings.Repeat("x", 2*view.MaxFieldBytes)
	var texts []string
	lengthen(reflect.ValueOf(&a).Elem(), "Approval", long, &texts)
	b := view.BoundApproval(a)
	bounded := map[string]bool{}
	for _, p := range agentrt.DiffPaths(a, b) {
		bounded[p] = true
	}
	for _, p := range texts {
		switch why, whole := approvalKeptWhole[p]; {
		case !bounded[p] && !whole:
			t.Errorf("%s is not bounded by view.BoundApproval: bound it, or name it in approvalKeptWhole with the reason", p)
		case bounded[p] && whole:
			t.Errorf("%s is bounded, yet approvalKeptWhole says it is kept whole (%s): remove the line", p, why)
		}
		delete(bounded, p)
	}
	for p := range bounded {
		t.Errorf("view.BoundApproval changed %s, which is not text", p)
	}
	for p := range approvalKeptWhole {
		if !slices.Contains(texts, p) {
			t.Errorf("approvalKeptWhole names %s, which is not a text field of Approval: remove it", p)
		}
	}
}

// copyLeaf copies the field at path from src to dst, allocating the
// pointers and one-element slices on the way.
func copyLeaf(dst, src reflect.Value, path []string) {
	if len(path) == 0 {
		dst.Set(src)
		return
	}
	for dst.Kind() == reflect.Pointer {
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		dst, src = dst.Elem(), src.Elem()
	}
	name, elem := strings.CutSuffix(path[0], "[0]")
	d, s := dst.FieldByName(name), src.FieldByName(name)
	if elem {
		if d.Len() == 0 {
			d.Set(reflect.MakeSlice(d.Type(), 1, 1))
		}
		d, s = d.Index(0), s.Index(0)
	}
	copyLeaf(d, s, path[1:])
}

// lengthen sets every text field reachable from v to long (raw JSON to a
// JSON string of it) and lists their paths.
func lengthen(v reflect.Value, path, long string, texts *[]string) {
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`"` + long + `"`))
		*texts = append(*texts, path)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes([]byte(long))
		*texts = append(*texts, path)
	case v.Kind() == reflect.String:
		v.SetString(long)
		*texts = append(*texts, path)
	case v.Kind() == reflect.Pointer && !v.IsNil():
		lengthen(v.Elem(), path, long, texts)
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			lengthen(v.Index(i), path+"[0]", long, texts)
		}
	case v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]():
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				lengthen(v.Field(i), path+"."+f.Name, long, texts)
			}
		}
	}
}
