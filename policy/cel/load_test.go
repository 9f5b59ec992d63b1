package cel_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/policy/cel"
)

// A file that does not parse strictly or compile is refused with a
// FileError naming the rule, the field and, where the fault is, the line
// and column; nothing is returned to evaluate.
func TestLoad_RefusesEveryBrokenFile(t *testing.T) {
	cases := []struct {
		name   string
		format cel.Format
		src    string
		rule   string
		line   int
		col    int
		reason string
	}{
		{"syntax error", cel.YAML, "rules:\n  - name: r\n    when: args.x ==\n    outcome: deny\ndefault: {outcome: deny}\n",
			"r", 3, 0, "Syntax error"},
		{"syntax error column", cel.JSON, `{"rules":[{"name":"r","when":"run.steps > > 1","outcome":"deny"}],"default":{"outcome":"deny"}}`,
			"r", 1, 43, "Syntax error"},
		{"type error", cel.YAML, "rules:\n  - name: r\n    when: run.steps + \"x\" == 1\n    outcome: deny\ndefault: {outcome: deny}\n",
			"r", 3, 21, "no matching overload"},
		{"unknown variable", cel.YAML, "rules:\n  - name: r\n    when: request.size > 1\n    outcome: deny\ndefault: {outcome: deny}\n",
			"r", 3, 11, "undeclared reference"},
		{"misspelt tool field", cel.YAML, "rules:\n  - name: r\n    when: tool.nmae == 'x'\n    outcome: deny\ndefault: {outcome: deny}\n",
			"r", 3, 0, "undeclared reference"},
		{"when not boolean", cel.YAML, "rules:\n  - name: r\n    when: args.flag\n    outcome: deny\ndefault: {outcome: deny}\n",
			"r", 3, 11, "must be a boolean"},
		{"presentation type error", cel.YAML, "rules:\n  - name: r\n    outcome: require_approval\n    presentation: {n: \"'a' - 1\"}\ndefault: {outcome: deny}\n",
			"r", 4, 0, "no matching overload"},
		{"missing default", cel.YAML, "rules:\n  - name: r\n    outcome: allow\n", "", 1, 1, "default: is required"},
		{"missing rules", cel.YAML, "default: {outcome: deny}\n", "", 1, 1, "rules: is required"},
		{"duplicate rule name", cel.YAML, "rules:\n  - name: r\n    outcome: allow\n  - name: r\n    outcome: deny\ndefault: {outcome: deny}\n",
			"", 4, 11, `"r" is used twice (first at line 2)`},
		{"rule named default", cel.YAML, "rules:\n  - name: default\n    outcome: allow\ndefault: {outcome: deny}\n", "", 2, 11, "name of the default"},
		{"rule without name", cel.YAML, "rules:\n  - outcome: allow\ndefault: {outcome: deny}\n", "", 2, 5, "has no name"},
		{"unknown field", cel.YAML, "rules:\n  - name: r\n    outcom: allow\ndefault: {outcome: deny}\n", "r", 3, 5, `unknown field "outcom"`},
		{"unknown top-level field", cel.JSON, `{"rules":[],"default":{"outcome":"deny"},"extra":1}`, "", 1, 42, `unknown field "extra"`},
		{"unknown outcome", cel.YAML, "rules: []\ndefault: {outcome: permit}\n", "default", 2, 20, `unknown outcome "permit"`},
		{"missing outcome", cel.YAML, "rules:\n  - name: r\n    reason: x\ndefault: {outcome: deny}\n", "r", 2, 5, "outcome: is required"},
		{"repeated YAML key", cel.YAML, "rules:\n  - name: r\n    outcome: allow\n    outcome: deny\ndefault: {outcome: deny}\n", "", 4, 5, `"outcome" is repeated`},
		{"repeated JSON key", cel.JSON, `{"rules":[],"default":{"outcome":"deny","outcome":"allow"}}`, "", 0, 0, "duplicate key"},
		{"trailing JSON", cel.JSON, `{"rules":[],"default":{"outcome":"deny"}} {}`, "", 0, 0, "not acceptable JSON"},
		{"second YAML document", cel.YAML, "rules: []\ndefault: {outcome: deny}\n---\nrules: []\n", "", 3, 1, "second YAML document"},
		{"YAML alias", cel.YAML, "rules:\n  - &a {name: r, outcome: allow}\ndefault: {outcome: deny}\n", "", 2, 5, "anchors and aliases"},
		{"YAML merge key", cel.YAML, "rules:\n  - {<<: {outcome: allow}, name: r}\ndefault: {outcome: deny}\n", "", 2, 6, "merge keys"},
		{"YAML custom tag", cel.YAML, "rules: []\ndefault: {outcome: !x deny}\n", "", 2, 20, "tag"},
		{"kind on a deny", cel.YAML, "rules: []\ndefault: {outcome: deny, kind: k}\n", "default", 2, 32, "only for outcome require_approval"},
		{"bad ttl", cel.YAML, "rules: []\ndefault: {outcome: require_approval, ttl: soon}\n", "default", 2, 43, "positive duration"},
		{"negative ttl", cel.YAML, "rules: []\ndefault: {outcome: require_approval, ttl: -5m}\n", "default", 2, 43, "positive duration"},
		{"unknown side effect", cel.YAML, "rules:\n  - name: r\n    match: {side_effects: [readonly]}\n    outcome: allow\ndefault: {outcome: deny}\n",
			"r", 3, 28, `unknown side effect "readonly"`},
		{"empty tools", cel.YAML, "rules:\n  - name: r\n    match: {tools: []}\n    outcome: allow\ndefault: {outcome: deny}\n", "r", 3, 20, "could never match"},
		{"bad glob", cel.YAML, "rules:\n  - name: r\n    match: {tools: ['fs[ab]']}\n    outcome: allow\ndefault: {outcome: deny}\n", "r", 2, 5, "patterns know only"},
		{"cost limit zero", cel.YAML, "limits: {cost: 0}\nrules: []\ndefault: {outcome: deny}\n", "", 1, 16, "whole number"},
		{"not a map", cel.YAML, "- a\n", "", 1, 1, "must be a map"},
		{"empty", cel.YAML, "", "", 0, 0, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := cel.Parse([]byte(c.src), c.format)
			if err == nil {
				t.Fatalf("Parse accepted the file (id %s)", p.PolicyID())
			}
			var fe *cel.FileError
			if !errors.As(err, &fe) || !errors.Is(err, cel.ErrInvalidPolicy) {
				t.Fatalf("error %T %v, want a *FileError matching ErrInvalidPolicy", err, err)
			}
			if p != nil {
				t.Fatal("a policy was returned with the error")
			}
			if fe.Rule != c.rule {
				t.Errorf("rule %q, want %q (%v)", fe.Rule, c.rule, err)
			}
			if fe.Line != c.line || (c.col != 0 && fe.Column != c.col) {
				t.Errorf("at %d:%d, want %d:%d (%v)", fe.Line, fe.Column, c.line, c.col, err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("error %q does not say %q", err, c.reason)
			}
		})
	}
}

// writePolicy writes src owner-only under dir.
func writePolicy(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = "rules: []\ndefault: {outcome: deny}\n"

// Load reads only a regular file the effective user owns and no one else
// can write, named by itself: a symbolic link, a group- or world-writable
// file, a directory, another account's file and an unknown extension are
// refused, and an owner-only file loads.
func TestLoad_ReadsOnlyOwnerOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	good := writePolicy(t, dir, "good.yaml", minimal)
	if _, err := cel.Load(good); err != nil {
		t.Fatalf("Load of an owner-only file: %v", err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	groupW := writePolicy(t, dir, "group.yaml", minimal)
	os.Chmod(groupW, 0o620)
	worldW := writePolicy(t, dir, "world.yaml", minimal)
	os.Chmod(worldW, 0o602)
	sub := filepath.Join(dir, "dir.yaml")
	os.Mkdir(sub, 0o700)
	cases := []struct {
		name, path string
		want       error
	}{
		{"symbolic link", link, cel.ErrInsecureFile},
		{"group-writable", groupW, cel.ErrInsecureFile},
		{"world-writable", worldW, cel.ErrInsecureFile},
		{"directory", sub, cel.ErrInsecureFile},
		{"unknown extension", writePolicy(t, dir, "policy.txt", minimal), cel.ErrInvalidPolicy},
	}
	if os.Geteuid() == 0 {
		other := writePolicy(t, dir, "other.yaml", minimal)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name, path string
			want       error
		}{"another account's file", other, cel.ErrInsecureFile})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := cel.Load(c.path)
			if !errors.Is(err, c.want) || p != nil {
				t.Fatalf("Load = %v, %v; want %v", p, err, c.want)
			}
		})
	}
	big := writePolicy(t, dir, "big.yaml", minimal+"#"+strings.Repeat("x", cel.MaxFileBytes)+"\n")
	if _, err := cel.Load(big); !errors.Is(err, cel.ErrInsecureFile) {
		t.Fatalf("Load of a file over MaxFileBytes = %v", err)
	}
}

// The id is the hash of the file's canonical form: the same rules in YAML
// and JSON, laid out and commented differently, share it; any change to a
// rule or a limit changes it.
func TestPolicy_IDIsTheHashOfTheCanonicalFile(t *testing.T) {
	id := func(src string, f cel.Format) string {
		t.Helper()
		p, err := cel.Parse([]byte(src), f)
		if err != nil {
			t.Fatal(err)
		}
		return p.PolicyID()
	}
	yml := "# reads are fine\nrules:\n  - name: reads\n    match: {side_effects: [read_only]}\n    outcome: allow\ndefault:\n  outcome: deny\n"
	jsn := `{"default": {"outcome": "deny"},
	  "rules": [{"outcome": "allow", "match": {"side_effects": ["read_only"]}, "name": "reads"}]}`
	a, b := id(yml, cel.YAML), id(jsn, cel.JSON)
	if a != b {
		t.Fatalf("YAML id %s, JSON id %s; want equal", a, b)
	}
	if !strings.HasPrefix(a, "cel/sha256:") || len(a) != len("cel/sha256:")+64 {
		t.Fatalf("id %q is not cel/sha256:<64 hex>", a)
	}
	for _, changed := range []string{
		strings.Replace(yml, "outcome: allow", "outcome: deny", 1),
		strings.Replace(yml, "name: reads", "name: read", 1),
		"limits: {cost: 5000}\n" + yml,
	} {
		if id(changed, cel.YAML) == a {
			t.Errorf("a changed file kept the id:\n%s", changed)
		}
	}
	if id("limits: {cost: 100000}\n"+yml, cel.YAML) != a {
		t.Error("writing out the default cost limit changed the id")
	}
}
