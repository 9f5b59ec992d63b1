package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
)

// testPolicyFile reads under proj/ and denies other reads, lets small
// writes through and holds a write over 10 bytes for approval with its size
// shown, and denies everything else.
const testPolicyFile = `rules:
  - name: read-project
    match: {tools: [up_read], side_effects: [read_only]}
    when: has(args.path) && args.path.startsWith("proj/")
    outcome: allow
    reason: reads inside proj/ are allowed
  - name: read-outside
    match: {tools: [up_read]}
    outcome: deny
    reason: reads outside proj/ are denied
  - name: big-write
    match: {tools: [up_write]}
    when: has(args.content) && size(args.content) > 10
    outcome: require_approval
    kind: big_write
    reason: a write over 10 bytes needs approval
    presentation:
      bytes: size(args.content)
  - name: small-write
    match: {tools: [up_write]}
    outcome: allow
    reason: small writes are allowed
default:
  outcome: deny
  reason: no rule allows this request
`

// A policy file named by the configuration decides every call, over the
// class map (which here would hold every write for approval): an allowed
// path reads, a denied path is DENIED and reaches no server, a small write
// runs at once, and a write over the bound waits for an approval that shows
// what the file's rule built, binds the proxy's own capability too, and
// runs once when granted. The policy id the calls record covers the file.
func TestProxy_PolicyFileDecidesEveryCall(t *testing.T) {
	pdir := t.TempDir()
	policy := writeFile(t, filepath.Join(pdir, "policy.yaml"), testPolicyFile)
	h := newHarness(t, func(doc map[string]any) { doc["policy_file"] = policy })

	got := h.expect("", "up_read", `{"path":"proj/a"}`)
	mustf(t, got == "content of proj/a", "allowed read = %q", got)
	denied := h.expect(StatusDenied, "up_read", `{"path":"etc/passwd"}`)
	mustf(t, strings.Contains(denied, "reads outside proj/ are denied"), "denied read = %q", denied)

	h.expect("", "up_write", `{"path":"proj/small","content":"hi"}`)
	mustf(t, h.up.count() == 1, "a small write the file allows did not run at once: %v", h.up.effectsNow())

	h.expect(StatusPendingApproval, "up_write", `{"path":"proj/big","content":"twenty bytes of text"}`)
	mustf(t, h.up.count() == 1, "a big write ran before approval: %v", h.up.effectsNow())
	a := h.onlyPending("big_write")
	var shown struct {
		Server      string `json:"server"`
		PolicyShows struct {
			Bytes int `json:"bytes"`
		} `json:"policy_shows"`
		Reason string `json:"reason"`
	}
	mustf(t, json.Unmarshal(a.Presentation, &shown) == nil && shown.PolicyShows.Bytes == 20 && shown.Server == "up" &&
		shown.Reason == "a write over 10 bytes needs approval", "presentation = %s", a.Presentation)
	h.decide(a, true, "")
	h.expect("", "up_write", `{"path":"proj/big","content":"twenty bytes of text"}`)
	mustf(t, h.up.count() == 2, "the granted write: effects %v, want it once", h.up.effectsNow())
	h.expect(StatusDuplicate, "up_write", `{"path":"proj/big","content":"twenty bytes of text"}`)
	mustf(t, h.up.count() == 2, "a duplicate ran: %v", h.up.effectsNow())

	// The recorded policy id is the proxy's, and it covers the file: the
	// same configuration with another file is another policy.
	steps, err := h.p.Store().ListSteps(context.Background(), a.RunID)
	mustf(t, err == nil && len(steps) == 1 && strings.HasPrefix(steps[0].PolicyID, "agentrt-proxy/sha256:"), "steps %+v, %v", steps, err)
	before := steps[0].PolicyID
	h.restart(func(doc map[string]any) {
		writeFile(t, policy, strings.Replace(testPolicyFile, "size(args.content) > 10", "size(args.content) > 100", 1))
	})
	h.expect("", "up_write", `{"path":"proj/other","content":"twenty bytes of text"}`)
	mustf(t, h.up.count() == 3, "under the edited file a 20-byte write should run: %v", h.up.effectsNow())
	runs, _ := h.p.Store().ListRuns(context.Background())
	var after string
	for _, r := range runs {
		ss, _ := h.p.Store().ListSteps(context.Background(), r.ID)
		for _, s := range ss {
			if s.Decision != nil && strings.Contains(string(s.Decision.Args), "proj/other") {
				after = s.PolicyID
			}
		}
	}
	mustf(t, after != "" && after != before, "policy id before the edit %q, after %q: want them to differ", before, after)
}

// A policy file that does not compile refuses the configuration naming the
// rule; a per-tool outcome beside a policy file is refused, since the file
// decides every call; and a stdio server whose arguments name the policy
// file is refused like one that names the database.
func TestConfig_PolicyFileIsCheckedWithTheConfig(t *testing.T) {
	dir, pdir := t.TempDir(), t.TempDir()
	broken := writeFile(t, filepath.Join(pdir, "broken.yaml"), strings.Replace(testPolicyFile, "size(args.content) > 10", "size(args.content) >", 1))
	good := writeFile(t, filepath.Join(pdir, "policy.yaml"), testPolicyFile)
	sandbox := t.TempDir()
	base := func(policyFile string, extra string) string {
		return `{"database":"runs.db","policy_file":"` + policyFile + `","servers":[{"name":"fs","command":["node","server.js","` + sandbox + `"],"manifest":"fs.json","rules":{"read":{"side_effect":"read_only"` + extra + `}}}]}`
	}
	_, err := LoadConfig(writeFile(t, filepath.Join(dir, "a.json"), base(broken, "")))
	var fe *cel.FileError
	mustf(t, err != nil && errors.As(err, &fe) && strings.Contains(err.Error(), "big-write"), "a broken policy file: %v", err)

	_, err = LoadConfig(writeFile(t, filepath.Join(dir, "b.json"), base(good, `,"outcome":"allow"`)))
	var ce *agentrt.ConfigError
	mustf(t, errors.As(err, &ce) && strings.Contains(ce.Field, "outcome"), "a rule outcome beside a policy file: %v", err)

	_, err = LoadConfig(writeFile(t, filepath.Join(dir, "c.json"), base(good, "")))
	mustf(t, err == nil, "a good configuration: %v", err)

	// Only the policy file is in pdir: the configuration, database and
	// manifest are elsewhere.
	reaching := strings.Replace(base(good, ""), `"`+sandbox+`"`, `"`+pdir+`"`, 1)
	_, err = LoadConfig(writeFile(t, filepath.Join(dir, "d.json"), reaching))
	var re *ReachError
	mustf(t, errors.As(err, &re) && strings.Contains(re.Error(), "policy.yaml"), "a server reaching the policy file's directory: %v", err)
}

// approvalReadsPolicy asks for approval on every read and every write.
const approvalReadsPolicy = `rules:
  - name: ask
    match: {tools: [up_read, up_write]}
    outcome: require_approval
    reason: every call needs approval
default:
  outcome: deny
  reason: no rule allows this request
`

// A policy file's verdict decides the fast path and the cap. The file asks
// for approval on a read_only tool: the read waits as PENDING_APPROVAL
// (it answered UNAVAILABLE and opened a new approval every call), and runs
// once an operator approves. With max_pending 2, the file's approvals
// are capped (11 were pending with a cap of 2).
func TestProxy_PolicyFileDecidesTheFastPathAndTheCap(t *testing.T) {
	policy := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), approvalReadsPolicy)
	h := newHarness(t, func(doc map[string]any) {
		doc["policy_file"] = policy
		doc["max_pending"] = 2
		doc["policy"] = map[string]any{"local_mutation": "allow"}
	})
	h.expect(StatusPendingApproval, "up_read", `{"path":"a"}`)
	h.expect(StatusPendingApproval, "up_read", `{"path":"a"}`)
	a := h.onlyPending("")
	h.decide(a, true, "")
	got := h.expect("", "up_read", `{"path":"a"}`)
	mustf(t, got == "content of a", "the approved read = %q", got)

	for i := range 6 {
		res := h.call("up_write", fmt.Sprintf(`{"path":"w%d","content":"x"}`, i))
		got := text(res)
		mustf(t, strings.HasPrefix(got, "PENDING_APPROVAL:") || strings.HasPrefix(got, "BLOCKED:"), "write %d: %q", i, got)
	}
	mustf(t, len(h.pending()) == 2, "pending approvals: %d, want the cap of 2", len(h.pending()))
	mustf(t, h.up.count() == 0, "a write ran without approval: %v", h.up.effectsNow())
}
