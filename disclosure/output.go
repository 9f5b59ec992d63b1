package disclosure

import (
	"fmt"
	"strconv"

	agentrt "github.com/agentrt/agentrt"
)

// Outside says what becomes of a field a tool's output rule does not allow.
type Outside string

const (
	// OutsideRemove removes the field; the rest of the result is disclosed.
	OutsideRemove Outside = "remove"
	// OutsideError withholds the whole result: the call becomes a tool
	// error, as for a never-export pointer.
	OutsideError Outside = "error"
)

// Valid reports whether o is one of the two, or zero (OutsideRemove).
func (o Outside) Valid() bool { return o == "" || o == OutsideRemove || o == OutsideError }

// OutputRule is the operator's disclosure schema for one tool's results.
type OutputRule struct {
	// Allow lists the JSON pointers a result may disclose, each with all
	// below it; "*" as a token stands for any array index. Nil allows
	// every field (only Never and the secret rules apply).
	Allow []string `json:"allow,omitempty"`
	// Never lists pointers never to be exported: a result holding one is
	// withheld whole, whatever Allow says.
	Never []string `json:"never,omitempty"`
	// Outside is what becomes of a field outside Allow; zero is
	// OutsideRemove.
	Outside Outside `json:"outside,omitempty"`
}

// Rule ids of the output rules' findings.
const (
	RuleAllowList   = "allow_list"
	RuleNeverExport = "never_export"
)

// compiledRule is an OutputRule split into tokens.
type compiledRule struct {
	allow   [][]string // nil: everything allowed
	never   [][]string
	outside Outside
}

func compileRule(tool string, r OutputRule) (compiledRule, error) {
	if !r.Outside.Valid() {
		return compiledRule{}, fmt.Errorf("disclosure: Config.Output[%q].Outside is %q; want %q or %q", tool, r.Outside, OutsideRemove, OutsideError)
	}
	c := compiledRule{outside: r.Outside}
	if r.Allow != nil {
		c.allow = [][]string{}
	}
	for _, set := range []struct {
		name string
		in   []string
		out  *[][]string
	}{{"Allow", r.Allow, &c.allow}, {"Never", r.Never, &c.never}} {
		for _, p := range set.in {
			toks, err := splitPointer(p)
			if err != nil {
				return compiledRule{}, fmt.Errorf("disclosure: Config.Output[%q].%s holds %q: %v", tool, set.name, p, err)
			}
			*set.out = append(*set.out, toks)
		}
	}
	return c, nil
}

// match reports whether path matches pattern's first len(path) tokens,
// "*" matching an array index.
func match(pattern, path []string, isIndex []bool) bool {
	for i, p := range path {
		if i >= len(pattern) {
			return true
		}
		if pattern[i] == "*" && isIndex[i] {
			continue
		}
		if pattern[i] != p {
			return false
		}
	}
	return true
}

// applyOutput applies c to the tree, removing fields outside the
// allow-list. blocked is set when a never-export pointer is present, or a
// field is outside the list and the rule says error.
func applyOutput(c compiledRule, root *node, find func(agentrt.DisclosureFinding)) (blocked bool) {
	var path []string
	var isIndex []bool
	var walk func(n *node, ptr string)
	walk = func(n *node, ptr string) {
		for _, nv := range c.never {
			if len(nv) == len(path) && match(nv, path, isIndex) {
				find(agentrt.DisclosureFinding{Rule: RuleNeverExport, Pointer: ptr, Action: agentrt.DisclosureBlocked})
				blocked = true
				return
			}
		}
		if c.allow != nil && len(path) > 0 {
			covered, onPath := false, false
			for _, a := range c.allow {
				if len(a) <= len(path) && match(a, path[:len(a)], isIndex[:len(a)]) {
					covered = true
				} else if len(a) > len(path) && match(a, path, isIndex) {
					onPath = true
				}
			}
			if covered && len(c.never) == 0 {
				return
			}
			if !covered && !onPath {
				action := agentrt.DisclosureRemoved
				if c.outside == OutsideError {
					action, blocked = agentrt.DisclosureBlocked, true
				}
				find(agentrt.DisclosureFinding{Rule: RuleAllowList, Pointer: ptr, Action: action})
				n.kind = 0 // marked for removal by the parent
				return
			}
		}
		switch n.kind {
		case 'o':
			kept := n.members[:0]
			for _, m := range n.members {
				path, isIndex = append(path, m.key), append(isIndex, false)
				walk(m.val, ptr+"/"+escapeToken(m.key))
				path, isIndex = path[:len(path)-1], isIndex[:len(isIndex)-1]
				if m.val.kind != 0 {
					kept = append(kept, m)
				}
			}
			n.members = kept
		case 'a':
			for i, v := range n.items {
				path, isIndex = append(path, strconv.Itoa(i)), append(isIndex, true)
				walk(v, ptr+"/"+strconv.Itoa(i))
				path, isIndex = path[:len(path)-1], isIndex[:len(isIndex)-1]
				if v.kind == 0 {
					// An array keeps its length: a removed item is a marker.
					*v = node{kind: 's', str: agentrt.DisclosureMarker(RuleAllowList)}
				}
			}
		}
	}
	walk(root, "")
	return blocked
}
