package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// judgedRequest is the part of a provider request the Disclosure reads:
// the system text and the messages, images left out (bytes, not text).
// Tool definitions are not judged.
type judgedRequest struct {
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
}

// judgeSecrets applies EgressRules.Secrets to req before it is encoded:
// it returns the request to send, what the Disclosure found in it, and
// why it is denied ("" when it may go). Anything that goes wrong denies
// the request: none is sent because it could not be judged.
func (c *modelCaller) judgeSecrets(ctx context.Context, req ModelRequest) (ModelRequest, []ArgumentSecret, string) {
	r, d := c.s.e.egress, c.s.e.disclosure
	if r == nil || r.Secrets == EgressSecretsUnjudged || d == nil {
		return req, nil, ""
	}
	j := judgedRequest{System: req.System, Messages: withoutImages(req.Messages)}
	body, err := json.Marshal(j)
	if err != nil {
		return req, nil, "the request could not be encoded for the disclosure rules: " + err.Error()
	}
	in := DisclosureInput{RunID: c.s.runID, StepID: c.stepID, Tool: ToolSpec{Name: EgressDisclosureTool}, Kind: ObsToolResult, Content: body}
	out, err := callDisclosure(ctx, d, in)
	if err != nil {
		return req, nil, "the disclosure rules could not judge the request: " + err.Error()
	}
	found, bad := egressFindings(out.Findings)
	switch {
	case bad != "":
		return req, nil, "the disclosure rules returned " + bad
	case len(found) == 0 && !out.Blocked:
		return req, nil, ""
	case r.Secrets == EgressSecretsDeny || out.Blocked:
		return req, found, "the request carries secrets the egress rules do not send: " + secretKinds(found)
	}
	if why := narrows(in, out); why != "" {
		return req, found, "the disclosure rules did not only remove or redact: " + why
	}
	var red judgedRequest
	if err := json.Unmarshal(out.Content, &red); err != nil || len(red.Messages) != len(req.Messages) {
		return req, found, "the redacted request is not the request's shape"
	}
	for i, m := range red.Messages {
		if len(m.Content) != len(req.Messages[i].Content) {
			return req, found, "the redacted request is not the request's shape"
		}
		for k := range m.Content {
			m.Content[k].Images = req.Messages[i].Content[k].Images
		}
	}
	req.System, req.Messages = red.System, red.Messages
	return req, found, ""
}

// withoutImages is msgs with every block's images left out, in new slices.
func withoutImages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Role: m.Role, Content: slices.Clone(m.Content)}
		for k := range out[i].Content {
			out[i].Content[k].Images = nil
		}
	}
	return out
}

// egressFindings are a Disclosure's findings as a manifest lists them:
// pointer and rule, sorted, each once; or why one cannot be listed.
func egressFindings(fs []DisclosureFinding) ([]ArgumentSecret, string) {
	var out []ArgumentSecret
	for _, f := range fs {
		s := ArgumentSecret{Pointer: f.Pointer, Kind: f.Rule}
		if why := badArgumentSecret(s); why != "" {
			return nil, why
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ArgumentSecret) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return slices.Compact(out), ""
}

// secretKinds names the distinct kinds of found, for a reason.
func secretKinds(found []ArgumentSecret) string {
	var kinds []string
	for _, s := range found {
		kinds = append(kinds, s.Kind)
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	if len(kinds) == 0 {
		return "a rule that blocks"
	}
	return fmt.Sprintf("%s at %d place(s)", strings.Join(kinds, ", "), len(found))
}
