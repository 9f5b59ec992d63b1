package cli

import (
	"flag"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// accessFlags are approvers add's and set's roles and scope.
type accessFlags struct {
	roles, kinds, tools, sideEffects, labels *string
}

func newAccessFlags(fs *flag.FlagSet) accessFlags {
	return accessFlags{
		roles:       fs.String("role", "", "the approver's roles, comma-separated (finance,ops): which stages of a requirement it may vote in"),
		kinds:       fs.String("scope-kind", "", "the approval kinds it may decide, comma-separated (default any)"),
		tools:       fs.String("scope-tool", "", "the tools whose approvals it may decide, comma-separated (default any)"),
		sideEffects: fs.String("scope-side-effect", "", "the side-effect classes it may decide, comma-separated (default any)"),
		labels:      fs.String("scope-label", "", "run labels k=v, comma-separated; it decides only runs carrying one (default any)"),
	}
}

// access is what the flags say.
func (f accessFlags) access() agentrt.ApproverAccess {
	split := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	return agentrt.ApproverAccess{Roles: split(*f.roles), Scope: agentrt.ApproverScope{Kinds: split(*f.kinds),
		Tools: split(*f.tools), SideEffects: split(*f.sideEffects), Labels: split(*f.labels)}}
}

// describeAccess is one line: "roles finance; scope tools pay".
func describeAccess(roles []string, sc agentrt.ApproverScope) string {
	out := "roles " + orNone(roles)
	var scope []string
	for _, f := range []struct {
		name string
		vals []string
	}{{"kinds", sc.Kinds}, {"tools", sc.Tools}, {"side effects", sc.SideEffects}, {"labels", sc.Labels}} {
		if len(f.vals) > 0 {
			scope = append(scope, f.name+" "+strings.Join(f.vals, ","))
		}
	}
	if len(scope) == 0 {
		return out + "; scope any approval"
	}
	return trace.Sanitize(out + "; scope " + strings.Join(scope, "; "))
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ",")
}
