package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ArgumentScanner is an optional capability of a Disclosure: it finds
// secrets in a tool call's arguments, so the policy can judge a call that
// would send one. The arguments are never altered: they are what executes
// and what an approval binds. Before every policy evaluation (a step's
// first, a Gate's, a resume's) the engine hands it the arguments in
// PolicyJSON form and puts what it finds in ToolRequest.Secrets.
//
// The disclosure module's Rules implement it with the same secret rules,
// and the same per-tool rules turned off, as they apply to outcomes.
type ArgumentScanner interface {
	ScanArguments(ctx context.Context, tool ToolSpec, args json.RawMessage) ([]ArgumentSecret, error)
}

// ArgumentSecret says where in a request's arguments a secret was found
// and of which kind. It never holds the value.
type ArgumentSecret struct {
	// Pointer is an RFC 6901 JSON pointer to the string holding the
	// secret ("/headers/Authorization").
	Pointer string `json:"pointer" audit:"content"`
	// Kind names the rule that found it ("aws_access_key_id").
	Kind string `json:"kind"`
}

// DisclosureDescriber is an optional capability of a Disclosure: its
// configuration as a JSON object, recorded in each run's run.created
// event so the record says which rules the run was judged by.
type DisclosureDescriber interface {
	Describe() json.RawMessage
}

// maxDisclosureDescription bounds a described configuration.
const maxDisclosureDescription = 64 << 10

// describeDisclosure is d's description in canonical form, or nil when d
// does not describe itself. A description that is not a JSON object of at
// most 64 KiB is a ConfigError.
func describeDisclosure(d Disclosure) (json.RawMessage, error) {
	dd, ok := d.(DisclosureDescriber)
	if !ok {
		return nil, nil
	}
	raw := dd.Describe()
	c, err := CanonicalJSON(raw)
	if err != nil || len(c) == 0 || c[0] != '{' || len(c) > maxDisclosureDescription {
		return nil, &ConfigError{Field: "Disclosure.Describe()", Reason: "must be a JSON object of at most 64 KiB"}
	}
	return c, nil
}

// scanArguments asks the engine's Disclosure, when it scans arguments,
// where args carry secrets: sorted by pointer then kind, without
// duplicates. An error or a panic is returned, and the policy is not asked:
// a call is never judged as clean because the scan failed.
func scanArguments(ctx context.Context, d Disclosure, spec ToolSpec, args json.RawMessage) (found []ArgumentSecret, err error) {
	sc, ok := d.(ArgumentScanner)
	if !ok {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			found, err = nil, fmt.Errorf("the argument scanner panicked: %v", p)
		}
	}()
	found, err = sc.ScanArguments(ctx, spec, append(json.RawMessage(nil), args...)) // the scanner gets its own copy
	if err != nil {
		return nil, fmt.Errorf("the argument scanner failed: %w", err)
	}
	for _, f := range found {
		if why := badArgumentSecret(f); why != "" {
			return nil, fmt.Errorf("the argument scanner returned %s", why)
		}
	}
	slices.SortFunc(found, func(a, b ArgumentSecret) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return slices.Compact(found), nil
}

// badArgumentSecret says what is wrong with f, or "".
func badArgumentSecret(f ArgumentSecret) string {
	switch {
	case f.Kind == "" || len(f.Kind) > 64 || !utf8.ValidString(f.Kind) || strings.IndexFunc(f.Kind, unicode.IsControl) >= 0:
		return fmt.Sprintf("the kind %q, which is not 1 to 64 bytes of UTF-8 without control characters", f.Kind)
	case f.Pointer != "" && f.Pointer[0] != '/', len(f.Pointer) > 4096, !utf8.ValidString(f.Pointer):
		return fmt.Sprintf("the pointer %q, which is not a JSON pointer of at most 4096 bytes", f.Pointer)
	}
	return ""
}

// RedactArguments is args with the value at each secret's pointer
// replaced by DisclosureMarker(kind), in canonical form: what an approval
// may show of a request. A pointer that reaches nothing changes nothing.
// args must be JSON.
func RedactArguments(args json.RawMessage, secrets []ArgumentSecret) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	for _, s := range secrets {
		root = replaceAt(root, s.Pointer, DisclosureMarker(s.Kind))
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(b)
}

// replaceAt sets the value at ptr under v to with, when ptr reaches one.
func replaceAt(v any, ptr, with string) any {
	if ptr == "" {
		return with
	}
	tok, rest, more := strings.Cut(ptr[1:], "/")
	tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	next := func(child any) any {
		if !more {
			return with
		}
		return replaceAt(child, "/"+rest, with)
	}
	switch n := v.(type) {
	case map[string]any:
		if child, ok := n[tok]; ok {
			n[tok] = next(child)
		}
	case []any:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n) {
			n[i] = next(n[i])
		}
	}
	return v
}

// ApprovalArguments is a's request arguments as a surface may show them
// (agentrt show and approve, the console, the webhook, notifications):
// when a's presentation lists the secrets they carry, as SideEffectPolicy
// writes it ({"secrets": [{"pointer", "kind"}]}), each of those values is
// shown as [REDACTED:<kind>], and the list is returned; arguments that
// cannot be read whole (a front end's bounded copy) are then shown as
// the one string [REDACTED:arguments], never in part. Otherwise the
// arguments are returned as recorded. The approval's hash still binds the
// recorded arguments.
func ApprovalArguments(a Approval) (json.RawMessage, []ArgumentSecret) {
	var p struct {
		Secrets []ArgumentSecret `json:"secrets"`
	}
	if json.Unmarshal(a.Presentation, &p) != nil || len(p.Secrets) == 0 {
		return a.Request.Args, nil
	}
	masked, err := RedactArguments(a.Request.Args, p.Secrets)
	if err != nil {
		return json.RawMessage(`"` + DisclosureMarker("arguments") + `"`), p.Secrets
	}
	return masked, p.Secrets
}
