package agentrt

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/canon"
)

// CheckJSON refuses, where a consumer value enters, JSON that could not be
// stored or hashed without loss: malformed JSON, more than one value, invalid
// UTF-8, nesting deeper than 256 levels, a repeated key (compared after
// unescaping), an unpaired escaped surrogate, a number literal longer than
// 10,000 characters, or an exponent, written or implied, beyond ±10,000.
func CheckJSON(raw []byte) error {
	return jsonErr("", canon.Check(raw))
}

// CanonicalJSON is the hashing form: keys sorted by byte order, no
// insignificant whitespace, numbers exactly as written, strings escaped like
// encoding/json with HTML escaping on. It refuses what CheckJSON refuses. The
// encoder is pinned byte for byte by golden vectors.
func CanonicalJSON(raw []byte) ([]byte, error) {
	b, err := canon.Canonical(raw)
	return b, jsonErr("", err)
}

// PolicyJSON is the form a policy is handed: the canonical traversal without
// HTML escaping. Values with equal CanonicalJSON have equal PolicyJSON, so a
// policy that reads bytes decides alike on every path.
func PolicyJSON(raw []byte) (json.RawMessage, error) {
	b, err := canon.Policy(raw)
	return b, jsonErr("", err)
}

// ContentHash is the lowercase hex SHA-256 of the canonical form of raw.
func ContentHash(raw []byte) (string, error) {
	h, err := canon.Hash(raw)
	return h, jsonErr("", err)
}

func jsonErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *canon.Error
	if errors.As(err, &ce) {
		return &JSONError{What: what, Reason: ce.Reason}
	}
	return &JSONError{What: what, Reason: err.Error()}
}

// checkJSONAs checks raw and names what was refused.
func checkJSONAs(what string, raw []byte) error {
	return jsonErr(what, canon.Check(raw))
}

// verbatim keeps bytes that were not acceptable JSON as a string: as given when
// they are UTF-8, as base64 otherwise.
func verbatim(raw []byte) (string, bool) {
	if utf8.Valid(raw) {
		return string(raw), false
	}
	b, _ := json.Marshal(raw) // []byte marshals as base64
	var s string
	_ = json.Unmarshal(b, &s)
	return s, true
}

// ApprovalHash is the hash an approval is bound by: the SHA-256 of the
// canonical JSON of its kind, capability, presentation and the exact request
// (including the tool's whole spec). A value that will not encode is an
// error, never a stand-in.
func ApprovalHash(kind string, capability, presentation json.RawMessage, req ToolRequest) (string, error) {
	return ApprovalHashWith(kind, capability, presentation, req, nil, "")
}

// ApprovalHashWith is ApprovalHash binding also a requirement and the
// policy version that asked for it. Without a requirement it is
// ApprovalHash, byte for byte, and the version is not bound.
func ApprovalHashWith(kind string, capability, presentation json.RawMessage, req ToolRequest, rq *Requirement, policyVersion string) (string, error) {
	if len(capability) == 0 {
		capability = json.RawMessage("{}")
	}
	if len(presentation) == 0 {
		presentation = json.RawMessage("{}")
	}
	if len(req.Args) == 0 {
		req.Args = json.RawMessage("{}")
	}
	for _, v := range []struct {
		what string
		raw  []byte
	}{{"approval capability", capability}, {"approval presentation", presentation}, {"request arguments", req.Args}, {"tool input schema", req.Spec.InputSchema}} {
		if err := checkJSONAs(v.what, v.raw); err != nil {
			return "", err
		}
	}
	var b []byte
	var err error
	if rq == nil {
		b, err = json.Marshal(struct {
			Kind         string          `json:"kind"`
			Capability   json.RawMessage `json:"capability"`
			Presentation json.RawMessage `json:"presentation"`
			Request      ToolRequest     `json:"request"`
		}{kind, capability, presentation, req})
	} else {
		b, err = json.Marshal(struct {
			Kind          string          `json:"kind"`
			Capability    json.RawMessage `json:"capability"`
			Presentation  json.RawMessage `json:"presentation"`
			Request       ToolRequest     `json:"request"`
			Requirement   *Requirement    `json:"requirement"`
			PolicyVersion string          `json:"policy_version"`
		}{kind, capability, presentation, req, rq, policyVersion})
	}
	if err != nil {
		return "", &JSONError{What: "approval", Reason: "will not encode: " + err.Error()}
	}
	h, err := canon.Hash(b)
	if err != nil {
		return "", jsonErr("approval", err)
	}
	return h, nil
}

// specHash is the SHA-256 of the canonical JSON of the whole spec, and that
// canonical JSON (what tool_specs stores).
func specHash(spec ToolSpec) (string, []byte, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", nil, &JSONError{What: "tool spec", Reason: "will not encode: " + err.Error()}
	}
	c, err := canon.Canonical(b)
	if err != nil {
		return "", nil, jsonErr("tool spec", err)
	}
	return canon.HashBytes(c), c, nil
}
