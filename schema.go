package agentrt

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/internal/schema"
)

// ToolSchema is a registered tool's compiled input schema.
type ToolSchema struct {
	spec   ToolSpec
	schema *schema.Schema
	// policySchema is the input schema in PolicyJSON form.
	policySchema json.RawMessage
}

// CompileTool checks a spec the way NewDriver registers it: a non-empty name,
// one of the four side-effect classes, a positive timeout, and an input schema
// that compiles from itself and the embedded metaschemas only. A $ref, $id or
// $schema naming a file or URL refuses the tool, and the error names it.
func CompileTool(spec ToolSpec) (*ToolSchema, error) {
	if strings.TrimSpace(spec.Name) == "" {
		return nil, &ConfigError{Field: "ToolSpec.Name", Reason: "must not be empty"}
	}
	if !spec.SideEffect.Valid() {
		return nil, &ConfigError{Field: fmt.Sprintf("ToolSpec.SideEffect of tool %q", spec.Name), Reason: fmt.Sprintf("must be read_only, local_mutation, remote_mutation or destructive, got %q", spec.SideEffect)}
	}
	if spec.Timeout <= 0 {
		return nil, &ConfigError{Field: fmt.Sprintf("ToolSpec.Timeout of tool %q", spec.Name), Reason: fmt.Sprintf("must be positive, got %s", spec.Timeout)}
	}
	if len(spec.InputSchema) == 0 {
		return nil, &ConfigError{Field: fmt.Sprintf("ToolSpec.InputSchema of tool %q", spec.Name), Reason: "is required"}
	}
	if err := checkJSONAs(fmt.Sprintf("input schema of tool %q", spec.Name), spec.InputSchema); err != nil {
		return nil, err
	}
	s, err := schema.Compile(spec.Name, spec.InputSchema)
	if err != nil {
		return nil, err
	}
	ps, err := canon.Policy(spec.InputSchema)
	if err != nil {
		return nil, jsonErr("input schema", err)
	}
	spec.InputSchema = append(json.RawMessage(nil), spec.InputSchema...)
	return &ToolSchema{spec: spec, schema: s, policySchema: ps}, nil
}

// Spec returns the spec the schema was compiled from.
func (t *ToolSchema) Spec() ToolSpec { return copySpec(t.spec) }

// Check refuses arguments that are not acceptable JSON or do not match the
// schema. Empty arguments mean {}. A panic inside the validator is a refusal.
func (t *ToolSchema) Check(args json.RawMessage) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return t.schema.Validate(args)
}

var argsCache struct {
	sync.Mutex
	m map[string]*ToolSchema
}

// CheckArgs compiles spec (cached) and checks args against it, as the driver
// does before a policy sees a request.
func CheckArgs(spec ToolSpec, args json.RawMessage) error {
	key := spec.Name + "\x00" + string(spec.SideEffect) + "\x00" + spec.Timeout.String() + "\x00" + string(spec.InputSchema)
	argsCache.Lock()
	ts := argsCache.m[key]
	argsCache.Unlock()
	if ts == nil {
		var err error
		if ts, err = CompileTool(spec); err != nil {
			return err
		}
		argsCache.Lock()
		if argsCache.m == nil || len(argsCache.m) >= 32 {
			argsCache.m = map[string]*ToolSchema{}
		}
		argsCache.m[key] = ts
		argsCache.Unlock()
	}
	return ts.Check(args)
}

func copySpec(s ToolSpec) ToolSpec {
	s.InputSchema = append(json.RawMessage(nil), s.InputSchema...)
	return s
}
