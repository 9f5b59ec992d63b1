package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The splice replaces only the servers object's value (or adds one
// member), so every byte of the host's file outside that span is the
// file's own: comments, trailing commas, tabs, key order and number
// spellings included.
func TestHostConfig_SpliceKeepsEveryOtherByte(t *testing.T) {
	docs := map[string]string{
		"middle, with comments": "{\n  // servers\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"args\": [\"/*not a comment*/\"]}, // trailing\n  },\n  /* block\n comment */ \"n\": 1.50e3,\n}\n",
		"tabs, nested":          "{\n\t\"projects\": {\"/p\": {\"mcpServers\": {\"keep\": {}}}},\n\t\"mcpServers\": {}\n}",
		"absent":                "{\n  \"numStartups\": 7,\n  \"tips\": [1, 2]\n}\n",
		"absent, empty":         "{ }",
		"vscode":                "{\n  \"inputs\": [{\"id\": \"k\", \"type\": \"promptString\"}],\n  \"servers\": {\"s\": {\"type\": \"stdio\", \"command\": \"c\"}}\n}\n",
	}
	for name, body := range docs {
		h := &host{path: filepath.Join(t.TempDir(), "host.json"), key: "mcpServers"}
		if name == "vscode" {
			h.key, h.typed = "servers", true
		}
		if err := os.WriteFile(h.path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := readHostFile(h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := d.splice(h, "/bin/agentrt-proxy", "/home/me/agentrt/proxy.json")
		// The changed span: from the first differing byte to the last.
		pre := 0
		for pre < len(out) && pre < len(body) && out[pre] == body[pre] {
			pre++
		}
		suf := 0
		for suf < len(out)-pre && suf < len(body)-pre && out[len(out)-1-suf] == body[len(body)-1-suf] {
			suf++
		}
		if m := d.servers(h.key); m != nil {
			if pre < m.start || len(body)-suf > m.end {
				t.Fatalf("%s: changed bytes %d..%d of the original, outside the servers value %d..%d:\n%s", name, pre, len(body)-suf, m.start, m.end, out)
			}
		} else if pre < d.top0() || len(body)-suf > d.close {
			t.Fatalf("%s: the added member changed bytes %d..%d:\n%s", name, pre, len(body)-suf, out)
		}
		// What is left is the host's format, with only the proxy's entry.
		var got map[string]json.RawMessage
		if err := json.Unmarshal(plainJSON(out), &got); err != nil {
			t.Fatalf("%s: the result does not parse: %v\n%s", name, err, out)
		}
		var servers map[string]proxyEntry
		if err := json.Unmarshal(got[h.key], &servers); err != nil || len(servers) != 1 {
			t.Fatalf("%s: servers %s (%v)", name, got[h.key], err)
		}
		e := servers[proxyEntryName]
		if e.Command != "/bin/agentrt-proxy" || strings.Join(e.Args, " ") != "-config /home/me/agentrt/proxy.json" || (e.Type == "stdio") != h.typed {
			t.Fatalf("%s: entry %+v", name, e)
		}
	}
}

// top0 is where the first member's bytes could start: just after the
// opening brace.
func (d *hostDoc) top0() int { return d.open + 1 }

// Each host's documented shape is read for what the proxy can carry; a
// definition it cannot reproduce is named, with why, and never guessed at.
func TestHostConfig_EntriesNameWhatCannotBeCarried(t *testing.T) {
	body := `{"mcpServers": {
	  "stdio": {"type": "stdio", "command": "node", "args": ["s.js"], "env": {"K": "v"}},
	  "http": {"type": "http", "url": "https://example.com/mcp"},
	  "headers": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
	  "sse": {"type": "sse", "url": "https://example.com/sse"},
	  "input": {"command": "node", "env": {"K": "${input:key}"}},
	  "two": {"url": "https://example.com/mcp", "headers": {"X": "${A}${B}"}},
	  "urlvar": {"url": "https://${HOST}/mcp"},
	  "cwd": {"command": "node", "cwd": "/w"},
	  "off": {"command": "node", "disabled": true},
	  "badargs": {"command": "node", "args": "s.js"},
	  "both": {"command": "node", "url": "https://example.com"}
	}}`
	h := &host{path: filepath.Join(t.TempDir(), "h.json"), key: "mcpServers"}
	if err := os.WriteFile(h.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := readHostFile(h)
	if err != nil {
		t.Fatal(err)
	}
	es, err := d.entries(h.key)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"stdio": "", "http": "", "headers": "", "sse": "", "input": "${...}", "two": "one variable", "urlvar": "url", "cwd": `"cwd"`, "off": "disabled", "badargs": `its "args" is not what the host's format allows`, "both": "exactly one"}
	if len(es) != len(want) || es[0].Name != "stdio" || es[len(es)-1].Name != "both" {
		t.Fatalf("entries %+v, want the file's order", es)
	}
	for _, e := range es {
		w := want[e.Name]
		if (w == "") != (e.Unsupported == "") || !strings.Contains(e.Unsupported, w) {
			t.Fatalf("%s: %q, want %q", e.Name, e.Unsupported, w)
		}
	}
	if es[0].Type != "stdio" || es[0].Command != "node" || len(es[0].Args) != 1 || es[0].Args[0] != "s.js" || es[0].Env["K"] != "v" || es[1].URL != "https://example.com/mcp" ||
		es[2].Headers["Authorization"] != "Bearer t" || !es[3].SSE {
		t.Fatalf("read %+v", es[:4])
	}
	// A repeated key is refused: two readers could see two servers.
	if err := os.WriteFile(h.path, []byte(`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err := readHostFile(h); err == nil {
		if _, err := d.entries(h.key); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("a repeated server: %v", err)
		}
	}
}
