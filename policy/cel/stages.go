package cel

import (
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// stageFields are the keys of one stage of a rule's stages.
var stageFields = []string{"quantifier", "m", "roles", "approvers", "exclude"}

// stages decodes a rule's stages: a list of
// {quantifier: all|any|m_of_n, m, roles, approvers, exclude: [requester]},
// checked as the runtime checks a Requirement, so a file that asks for
// one that cannot be met is refused where it is loaded.
func (d *decoder) stages(v *node) (*agentrt.Requirement, error) {
	if v.kind != kindArray {
		return nil, d.errAt(v, "stages", "must be a list of stages, not %s", v.kind)
	}
	req := &agentrt.Requirement{}
	for i, it := range v.items {
		field := fmt.Sprintf("stages[%d]", i)
		if err := d.object(it, field, stageFields...); err != nil {
			return nil, err
		}
		var st agentrt.Stage
		q, ok := it.get("quantifier")
		if !ok {
			return nil, d.errAt(it, field, "needs a quantifier (all, any or m_of_n)")
		}
		s, err := d.name(q, field+".quantifier")
		if err != nil {
			return nil, err
		}
		st.Quantifier = agentrt.Quantifier(s)
		if m, ok := it.get("m"); ok {
			n, err := d.count(m, field+".m", 32)
			if err != nil {
				return nil, err
			}
			st.M = int(n)
		}
		for _, l := range []struct {
			key string
			dst *[]string
		}{{"roles", &st.Roles}, {"approvers", &st.Approvers}, {"exclude", &st.Exclude}} {
			if n, ok := it.get(l.key); ok {
				if *l.dst, err = d.strings(n, field+"."+l.key); err != nil {
					return nil, err
				}
			}
		}
		req.Stages = append(req.Stages, st)
	}
	if err := req.Validate(); err != nil {
		return nil, d.errAt(v, "stages", "%v", err)
	}
	return req, nil
}
