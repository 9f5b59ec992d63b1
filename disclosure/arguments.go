package disclosure

import (
	"context"
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

var _ agentrt.ArgumentScanner = (*Rules)(nil)

// ScanArguments finds secrets in a tool call's arguments with the secret
// rules, less those Config.Off turns off for the tool, and says where and
// of which kind; it never returns a value and never alters the arguments.
// Output rules do not apply to arguments, and Block does not either: what
// a finding means for the call is the policy's to decide.
func (r *Rules) ScanArguments(_ context.Context, tool agentrt.ToolSpec, args json.RawMessage) ([]agentrt.ArgumentSecret, error) {
	active := r.active(agentrt.DisclosureInput{Content: args})
	if len(active) == 0 {
		return nil, nil
	}
	root, err := parse(args)
	if err != nil {
		return nil, fmt.Errorf("disclosure: the arguments of %q are not JSON: %w", tool.Name, err)
	}
	offFor := r.off[tool.Name]
	off := func(id string) bool { return offFor["*"] || offFor[id] || !active[id] }
	var found []agentrt.ArgumentSecret
	r.leaves(root, "", "", func(ptr, key, s string) string {
		for _, h := range scan(r.detectors, off, key, s) {
			found = append(found, agentrt.ArgumentSecret{Pointer: ptr, Kind: h.rule})
		}
		return s
	})
	return found, nil
}
