package disclosure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrNotDescribed is FromDescription's answer to a description these
// rules did not write (another Disclosure's, or none).
var ErrNotDescribed = errors.New("disclosure: not a description of this module's rules")

// FromDescription rebuilds the rules a run was judged by from the
// description its run.created recorded (Rules.Describe), so a recheck of
// the run hands its policy the argument findings the engine handed it. A
// description that is not one of this module's (it lists no rules, holds
// a field Describe does not write, or names a rule this build does not
// have) is ErrNotDescribed, wrapped with the reason. A rule this build
// added since the run is in force too.
func FromDescription(desc json.RawMessage) (*Rules, error) {
	var d struct {
		Rules []string `json:"rules"`
		Config
	}
	dec := json.NewDecoder(bytes.NewReader(desc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotDescribed, err)
	}
	if len(d.Rules) == 0 {
		return nil, fmt.Errorf("%w: it lists no rules", ErrNotDescribed)
	}
	r, err := New(d.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotDescribed, err)
	}
	for _, id := range d.Rules {
		if !slices.Contains(r.ids, id) {
			return nil, fmt.Errorf("%w: it names the rule %q, which this build does not have", ErrNotDescribed, id)
		}
	}
	return r, nil
}
