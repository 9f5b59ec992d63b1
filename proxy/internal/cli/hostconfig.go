package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/trace"
)

// A host is an MCP host whose configuration file init reads and, with
// -write-host-config, rewrites: where the file is and which top-level key
// holds its servers.
type host struct {
	// id is the -from value, or "" for a path.
	id string
	// path is the host's configuration file, absolute.
	path string
	// key holds the server definitions: "mcpServers", or "servers" for VS
	// Code.
	key string
	// typed says an entry names its transport in "type" (VS Code requires
	// it); the proxy's own entry then carries "type": "stdio".
	typed bool
	// passEnv are the variables the proxy's entry asks the host to pass
	// on, each as the host's own reference ("${VAR}" or "${env:VAR}"):
	// secrets init left in the host's environment.
	passEnv map[string]string
}

// hostIDs are the -from values other than a path.
var hostIDs = []string{"claude-desktop", "claude-code", "cursor", "vscode"}

// findHost resolves -from: a host's documented location (user scope,
// except VS Code's workspace file), or a path whose top-level key says
// which format it is in (read only when detect is set).
func findHost(from string, detect bool) (*host, error) {
	home, herr := os.UserHomeDir()
	switch from {
	case "claude-desktop", "claude-code", "cursor":
		if herr != nil {
			return nil, herr
		}
	}
	switch from {
	case "claude-desktop":
		var dir string
		switch runtime.GOOS {
		case "darwin":
			dir = filepath.Join(home, "Library", "Application Support", "Claude")
		case "windows":
			dir = filepath.Join(os.Getenv("APPDATA"), "Claude")
		default:
			dir = filepath.Join(home, ".config", "Claude")
		}
		return &host{id: from, path: filepath.Join(dir, "claude_desktop_config.json"), key: "mcpServers"}, nil
	case "claude-code":
		// The user scope: top-level mcpServers of ~/.claude.json. A
		// project's .mcp.json is read by passing its path.
		return &host{id: from, path: filepath.Join(home, ".claude.json"), key: "mcpServers"}, nil
	case "cursor":
		return &host{id: from, path: filepath.Join(home, ".cursor", "mcp.json"), key: "mcpServers"}, nil
	case "vscode":
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return &host{id: from, path: filepath.Join(wd, ".vscode", "mcp.json"), key: "servers", typed: true}, nil
	}
	if !isPath(from) {
		return nil, fmt.Errorf("-from must be one of %s or a path to a host's configuration file, got %q", strings.Join(hostIDs, ", "), trace.Sanitize(from))
	}
	abs, err := filepath.Abs(from)
	if err != nil {
		return nil, err
	}
	h := &host{path: abs}
	if !detect {
		return h, nil
	}
	doc, err := readHostFile(h)
	if err != nil {
		return nil, err
	}
	for _, m := range doc.top {
		switch m.key {
		case "mcpServers":
			h.key = m.key
		case "servers":
			if h.key == "" {
				h.key, h.typed = m.key, true
			}
		}
	}
	if h.key == "" {
		return nil, fmt.Errorf("%s has neither an \"mcpServers\" nor a \"servers\" object", trace.Sanitize(abs))
	}
	return h, nil
}

func isPath(s string) bool {
	return strings.ContainsRune(s, os.PathSeparator) || strings.ContainsRune(s, '/') || strings.HasSuffix(s, ".json")
}

// hostDoc is a host's file as read: the bytes, the same bytes with
// comments and trailing commas blanked (JSONC, which VS Code and others
// accept), and the top-level members with their byte ranges.
type hostDoc struct {
	raw, plain []byte
	top        []member
	// open and close are the offsets of the top-level object's braces.
	open, close int
}

// member is one member of a JSON object: its key and where its value
// lies in the document.
type member struct {
	key        string
	start, end int
}

// maxHostFile bounds a host's configuration file and its backups (Claude
// Code keeps its history in the same file, so it can be large).
const maxHostFile = 32 << 20

// readHostFile reads the host's file through files.ReadOwned: init
// rewrites it and the host runs the commands it names, so it is held to
// the rule for trusted files (the user's own, writable by nobody else, not
// a symbolic link: a link is refused with a request to name the file).
func readHostFile(h *host) (*hostDoc, error) {
	raw, err := files.ReadOwned(h.path, maxHostFile)
	if err != nil {
		return nil, err
	}
	d := &hostDoc{raw: raw, plain: plainJSON(raw)}
	if d.open, d.close, err = valueSpan(d.plain, 0, len(d.plain)); err != nil {
		return nil, fmt.Errorf("%s: %w", trace.Sanitize(h.path), err)
	}
	if d.plain[d.open] != '{' {
		return nil, fmt.Errorf("%s: the file is not a JSON object", trace.Sanitize(h.path))
	}
	d.close--
	if d.top, err = objectMembers(d.plain, d.open, d.close+1); err != nil {
		return nil, fmt.Errorf("%s: %w", trace.Sanitize(h.path), err)
	}
	return d, nil
}

// servers returns the member holding the servers, or nil when the file
// has none.
func (d *hostDoc) servers(key string) *member {
	for i := range d.top {
		if d.top[i].key == key {
			return &d.top[i]
		}
	}
	return nil
}

// plainJSON blanks comments (// and /* */) and trailing commas to spaces,
// keeping newlines, so b's offsets are the result's and the result is
// JSON when b is JSONC.
func plainJSON(b []byte) []byte {
	out := append([]byte(nil), b...)
	inString, escaped := false, false
	lastSig := -1 // the offset of the last significant byte outside a string
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				lastSig = i
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
			continue
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := i
			for ; j < len(out) && !(j > i+1 && b[j-1] == '*' && b[j] == '/'); j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			if j < len(out) {
				out[j] = ' '
			}
			i = j
			continue
		case c == '}' || c == ']':
			if lastSig >= 0 && out[lastSig] == ',' {
				out[lastSig] = ' '
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		lastSig = i
	}
	return out
}

// valueSpan finds the one JSON value in plain[from:to] and returns its
// byte range; anything but whitespace around it is refused.
func valueSpan(plain []byte, from, to int) (int, int, error) {
	dec := json.NewDecoder(bytes.NewReader(plain[from:to]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, 0, fmt.Errorf("not JSON: %v", err)
	}
	end := int(dec.InputOffset())
	if len(bytes.TrimSpace(plain[from+end:to])) > 0 {
		return 0, 0, errors.New("trailing data after the JSON value")
	}
	return from + end - len(raw), from + end, nil
}

// objectMembers reads the object at plain[start:end] and returns its
// members in order, refusing a repeated key: two readers could see two
// different servers.
func objectMembers(plain []byte, start, end int) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(plain[start:end]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("the key %q appears twice", trace.Sanitize(key))
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		e := int(dec.InputOffset())
		out = append(out, member{key: key, start: start + e - len(raw), end: start + e})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// hostEntry is one server definition in a host's file. Only the fields
// the proxy can carry are read; the others are named and the server is
// left out, never guessed at.
type hostEntry struct {
	Name    string
	Type    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	// Headers are an HTTP server's headers as the host wrote them; a value
	// may reference one variable ("Bearer ${TOKEN}").
	Headers map[string]string
	// SSE says the host reaches it with the legacy SSE transport.
	SSE bool
	// Unsupported names a field the proxy cannot carry, or a value it
	// cannot reproduce, with why.
	Unsupported string
}

// entries reads the servers object's members in the file's order.
func (d *hostDoc) entries(key string) ([]hostEntry, error) {
	m := d.servers(key)
	if m == nil {
		return nil, nil
	}
	if d.plain[m.start] != '{' {
		return nil, fmt.Errorf("%q is not an object", key)
	}
	ms, err := objectMembers(d.plain, m.start, m.end)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", key, err)
	}
	var out []hostEntry
	for _, sm := range ms {
		e := hostEntry{Name: sm.key}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(d.plain[sm.start:sm.end], &fields); err != nil {
			e.Unsupported = "its definition is not an object"
			out = append(out, e)
			continue
		}
		e.Unsupported = e.read(fields)
		out = append(out, e)
	}
	return out, nil
}

// read fills e from a definition's fields and says what the proxy cannot
// carry, or "".
func (e *hostEntry) read(fields map[string]json.RawMessage) string {
	carried := map[string]any{"type": &e.Type, "command": &e.Command, "args": &e.Args, "env": &e.Env, "url": &e.URL, "headers": &e.Headers}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		switch k {
		case "description", "timeout", "disabled", "autoApprove", "alwaysAllow":
			// Host-side settings; the proxy and its policy replace them.
			if k == "disabled" && string(v) == "true" {
				return "the host has it disabled"
			}
			continue
		}
		into, ok := carried[k]
		if !ok {
			return fmt.Sprintf("it sets %q, which the proxy cannot carry", trace.Sanitize(k))
		}
		if err := json.Unmarshal(v, into); err != nil {
			return fmt.Sprintf("its %q is not what the host's format allows: %s", k, trace.Sanitize(err.Error()))
		}
	}
	switch e.Type {
	case "", "stdio", "http", "streamableHttp", "streamable-http":
	case "sse":
		e.SSE = true
	default:
		return fmt.Sprintf("its type %q is not one the proxy reaches", trace.Sanitize(e.Type))
	}
	if (e.Command != "") == (e.URL != "") {
		return "it must set exactly one of command and url"
	}
	if e.Command == "" && (len(e.Args) > 0 || len(e.Env) > 0) {
		return "it sets args or env without a command"
	}
	if e.URL == "" && len(e.Headers) > 0 {
		return "it sets headers without a url"
	}
	if e.SSE && e.URL == "" {
		return "its type is sse but it sets no url"
	}
	for _, s := range append([]string{e.Command, e.URL}, e.Args...) {
		if strings.Contains(s, "${") {
			return "it uses a ${...} variable in its command, arguments or url, which only the host resolves"
		}
	}
	// A variable in an env or header value becomes a secret reference;
	// one the proxy cannot carry as one is named here.
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		if _, err := parseSecretValue(e.Env[k]); err != nil {
			return fmt.Sprintf("its env %s %s", trace.Sanitize(k), err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		if _, err := parseSecretValue(e.Headers[k]); err != nil {
			return fmt.Sprintf("its header %s %s", trace.Sanitize(k), err)
		}
	}
	return ""
}

// secretValue is a host's env or header value taken apart: a literal
// prefix and at most one variable reference that ends it.
type secretValue struct {
	Prefix string
	// Var is the variable named, "" for a literal value; Ref is how the
	// host wrote the reference.
	Var, Ref string
}

var varRefRE = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// parseSecretValue splits v into a prefix and one trailing variable
// reference ("Bearer ${TOKEN}", "${env:TOKEN}"), or a literal.
func parseSecretValue(v string) (secretValue, error) {
	if !strings.Contains(v, "${") {
		return secretValue{Prefix: v}, nil
	}
	locs := varRefRE.FindAllStringSubmatchIndex(v, -1)
	if len(locs) != 1 || locs[0][1] != len(v) || strings.Contains(v[:locs[0][0]], "${") {
		return secretValue{}, errors.New("uses ${...} other than one variable at its end, which the proxy cannot carry as a secret reference")
	}
	return secretValue{Prefix: v[:locs[0][0]], Var: v[locs[0][2]:locs[0][3]], Ref: v[locs[0][0]:]}, nil
}

func envValues(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, env[k])
	}
	return out
}

// proxyEntryName is the key of the one entry that routes through the
// proxy.
const proxyEntryName = "gated"

// proxyEntry is the host's definition that starts the proxy, its fields
// in the order the hosts' own examples use.
type proxyEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func (h *host) proxyEntry(bin, config string) proxyEntry {
	e := proxyEntry{Command: bin, Args: []string{"-config", config}}
	if len(h.passEnv) > 0 {
		e.Env = h.passEnv
	}
	if h.typed {
		e.Type = "stdio"
	}
	return e
}

// hostSnippet is the servers object that routes the host through the
// proxy, as a whole file holding only it.
func (h *host) hostSnippet(bin, config string) string {
	b, _ := json.MarshalIndent(map[string]any{h.key: map[string]any{proxyEntryName: h.proxyEntry(bin, config)}}, "", "  ")
	return string(b) + "\n"
}

// splice returns the host's file with its servers object replaced by one
// holding only the proxy's entry, or that object added when the file has
// none. Every byte outside the replaced value (or before and after the
// added member) is the file's own.
func (d *hostDoc) splice(h *host, bin, config string) []byte {
	unit := indentUnit(d.raw)
	servers := map[string]any{proxyEntryName: h.proxyEntry(bin, config)}
	var out bytes.Buffer
	if m := d.servers(h.key); m != nil {
		prefix := lineIndent(d.raw, m.start)
		v, _ := json.MarshalIndent(servers, prefix, unit)
		out.Write(d.raw[:m.start])
		out.Write(v)
		out.Write(d.raw[m.end:])
		return out.Bytes()
	}
	v, _ := json.MarshalIndent(servers, unit, unit)
	k, _ := json.Marshal(h.key)
	if len(d.top) == 0 {
		out.Write(d.raw[:d.open+1])
		fmt.Fprintf(&out, "\n%s%s: %s\n", unit, k, v)
		out.Write(d.raw[d.close:])
		return out.Bytes()
	}
	last := d.top[len(d.top)-1].end
	out.Write(d.raw[:last])
	fmt.Fprintf(&out, ",\n%s%s: %s", unit, k, v)
	out.Write(d.raw[last:])
	return out.Bytes()
}

// lineIndent is the whitespace that starts the line holding offset i.
func lineIndent(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	j := start
	for j < i && (b[j] == ' ' || b[j] == '\t') {
		j++
	}
	return string(b[start:j])
}

// indentUnit is the file's own indentation step: the first indented
// line's, or two spaces.
func indentUnit(b []byte) string {
	for _, line := range bytes.Split(b, []byte("\n"))[1:] {
		n := 0
		for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
			n++
		}
		if n > 0 && n < len(line) {
			return string(line[:n])
		}
	}
	return "  "
}

// backupSuffix starts the name of a host file's backup; a UTC timestamp
// follows.
const backupSuffix = ".agentrt-proxy-backup-"

// writeHostConfig backs the host's file up beside it (owner-only: it may
// hold secrets; through files.WriteNew, so an earlier backup is never
// replaced), then replaces the file with b, keeping its mode. readHostFile
// refused a link, and the replacement replaces one put there since rather
// than writing where it points.
func writeHostConfig(h *host, raw, b []byte, now time.Time) (string, error) {
	fi, err := os.Lstat(h.path)
	if err != nil {
		return "", err
	}
	if err := files.Check(h.path, fi); err != nil {
		return "", err
	}
	backup := h.path + backupSuffix + now.UTC().Format("20060102T150405.000000000Z")
	if err := files.WriteNew(backup, raw, 0o600); err != nil {
		return "", err
	}
	return backup, replaceFile(h.path, b, fi.Mode().Perm())
}

// readBackup reads a backup writeHostConfig made, through files.ReadSecret
// (it was written owner-only and may hold the host's secrets).
func readBackup(path string) ([]byte, error) {
	return files.ReadSecret(path, maxHostFile)
}

// replaceFile replaces path with b, mode perm, through files.WriteAtomic
// (a synced temporary file beside it, renamed over it, the directory
// synced).
func replaceFile(path string, b []byte, perm fs.FileMode) error {
	return files.WriteAtomic(path, b, perm)
}

// latestBackup is the newest backup init made of the host's file.
func latestBackup(h *host) (target, backup string, err error) {
	target, err = filepath.EvalSymlinks(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		target, err = h.path, nil
	}
	if err != nil {
		return "", "", err
	}
	found, err := filepath.Glob(globEscape(target) + backupSuffix + "*")
	if err != nil {
		return "", "", err
	}
	if len(found) == 0 {
		return "", "", fmt.Errorf("no backup of %s (init -write-host-config makes one beside it)", trace.Sanitize(target))
	}
	sort.Strings(found) // the timestamps sort as they happened
	return target, found[len(found)-1], nil
}

func globEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	if runtime.GOOS == "windows" {
		return p
	}
	return r.Replace(p)
}
