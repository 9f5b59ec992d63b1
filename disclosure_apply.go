package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/internal/canon"
)

// disclosureFailure is the observation for an outcome disclosure withheld.
func disclosureFailure(why string) *Observation {
	return observation(ObsToolError, map[string]string{"error": why, "failure": "disclosure"}, "tool error: "+why)
}

// disclose applies the engine's Disclosure to a tool's observation, and
// records what it did, before finish records the observation. Anything
// that goes wrong withholds the result: a secret is never recorded because
// a rule could not be applied.
func (s *session) disclose(ctx context.Context, ac *allowedCall, obs *Observation, end toolEnd) (*Observation, toolEnd) {
	d := s.e.disclosure
	if d == nil {
		return obs, end
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var stepID string
	if s.cur != nil {
		stepID = s.step(s.cur.idx).ID
	}
	in := DisclosureInput{RunID: s.runID, StepID: stepID, Tool: ac.tool.spec, Kind: obs.Kind,
		Content: copyRaw(obs.Content), Summary: obs.Summary, FailureMessage: obs.FailureMessage,
		Blocks: slices.Clone(obs.Blocks)}
	out, err := callDisclosure(dctx, d, in)
	withheld := func(why string) (*Observation, toolEnd) {
		if end == toolComplete {
			end = toolContinue
		}
		return disclosureFailure(why), end
	}
	if err != nil {
		return withheld("the disclosure rules could not judge the result: " + err.Error())
	}
	rec := DisclosureAppliedPayload{Tool: ac.tool.spec.Name, Blocked: out.Blocked}
	var next *Observation
	if out.Blocked {
		next = disclosureFailure("the result was withheld by disclosure rules " + fmt.Sprint(ruleIDs(out.Findings)))
		if end == toolComplete {
			end = toolContinue
		}
	} else {
		if why := narrows(in, out); why != "" {
			return withheld("the disclosure rules did not only remove or redact: " + why)
		}
		next = disclosed(obs, out)
		if next == nil {
			return withheld("the disclosed content is not acceptable JSON")
		}
	}
	if len(out.Findings) == 0 && !out.Blocked {
		return next, end
	}
	if err := s.recordDisclosure(dctx, stepID, rec, out.Findings); err != nil {
		return withheld("what the disclosure rules did could not be recorded")
	}
	return next, end
}

// callDisclosure calls d, turning a panic into an error.
func callDisclosure(ctx context.Context, d Disclosure, in DisclosureInput) (out DisclosureOutcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the disclosure panicked: %v", p)
		}
	}()
	return d.Disclose(ctx, in)
}

// disclosed is obs with out's parts, its hashes taken again; nil when the
// content is not acceptable JSON (a result's must be).
func disclosed(obs *Observation, out DisclosureOutcome) *Observation {
	next := *obs
	next.Content = storedRaw(out.Content)
	next.Summary = jsonString(out.Summary)
	next.FailureMessage = out.FailureMessage
	next.Blocks = out.Blocks
	if obs.Kind == ObsToolResult || json.Valid(next.Content) {
		if canon.Check(next.Content) != nil {
			return nil
		}
		h, _ := canon.Hash(next.Content)
		next.ContentHash = h
	}
	for i := range next.Blocks {
		b := &next.Blocks[i]
		if b.Text != obs.Blocks[i].Text {
			sum := sha256.Sum256([]byte(b.Text))
			b.Size, b.SHA256 = int64(len(b.Text)), hex.EncodeToString(sum[:])
		}
	}
	return &next
}

// ruleIDs lists the distinct rules of findings, sorted.
func ruleIDs(fs []DisclosureFinding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// recordDisclosure appends disclosure.applied under the run's lease, each
// finding's value digested under the run's salt inside the transaction.
func (s *session) recordDisclosure(ctx context.Context, stepID string, rec DisclosureAppliedPayload, fs []DisclosureFinding) error {
	rec.Rules = ruleIDs(fs)
	rec.Count = len(fs)
	return s.write(ctx, func(tx Tx) error {
		if _, err := s.guard(tx, RunUpdate{}); err != nil {
			return err
		}
		kd, _ := tx.(KeyedDigester)
		rec.Findings = rec.Findings[:0]
		for _, f := range fs {
			r := DisclosureFindingRecord{Rule: f.Rule, Pointer: f.Pointer, Action: f.Action}
			if kd != nil && f.Value != "" {
				dg, err := kd.KeyedDigest(s.runID, []byte(f.Value))
				if err != nil {
					return err
				}
				r.Digest = dg
			}
			rec.Findings = append(rec.Findings, r)
		}
		return event(tx, s.runID, stepID, s.e.now(), EventDisclosureApplied, rec)
	})
}
