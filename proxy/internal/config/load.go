package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/trace"
)

// The file's JSON form. Every object refuses unknown fields.
type fileConfig struct {
	Database      string            `json:"database"`
	Index         string            `json:"index"`
	Session       string            `json:"session"`
	Servers       []fileServer      `json:"servers"`
	Policy        map[string]string `json:"policy"`
	PolicyFile    string            `json:"policy_file"`
	Hold          *duration         `json:"hold"`
	RepeatWindow  *duration         `json:"repeat_window"`
	MaxPending    *int              `json:"max_pending"`
	ApprovalTTL   *duration         `json:"approval_ttl"`
	GrantTTL      *duration         `json:"grant_ttl"`
	StatusTool    string            `json:"status_tool"`
	LeaseTTL      *duration         `json:"lease_ttl"`
	PinnedKeys    string            `json:"pinned_keys"`
	RequireSigned bool              `json:"require_signed_grant"`
	ConsoleURL    string            `json:"console_url"`
	// CheckpointKey is an owner-only checkpoint signing key file;
	// CheckpointInterval how often to fold; CheckpointSync makes each
	// commit wait for the checkpoint that folds it.
	CheckpointKey      string    `json:"checkpoint_key"`
	CheckpointInterval *duration `json:"checkpoint_interval"`
	CheckpointSync     bool      `json:"checkpoint_sync"`
	// Disclosure is disclosure.Config's JSON form: block, off (tool name
	// to rule ids) and output.
	Disclosure *disclosure.Config `json:"disclosure"`
}

type fileServer struct {
	Name           string                            `json:"name"`
	Command        []string                          `json:"command"`
	Endpoint       string                            `json:"endpoint"`
	Env            map[string]string                 `json:"env"`
	InheritEnv     []string                          `json:"inherit_env"`
	ConnectTimeout *duration                         `json:"connect_timeout"`
	DefaultTimeout *duration                         `json:"default_timeout"`
	Manifest       string                            `json:"manifest"`
	Rules          map[string]fileRule               `json:"rules"`
	SkipPathCheck  bool                              `json:"skip_path_check"`
	Surfaces       map[string]string                 `json:"surfaces"`
	PromptRename   map[string]string                 `json:"prompt_rename"`
	Forward        []string                          `json:"forward"`
	Transport      string                            `json:"transport"`
	Protocol       string                            `json:"protocol"`
	Headers        map[string]credentials.FileSecret `json:"headers"`
	SecretEnv      map[string]credentials.FileSecret `json:"secret_env"`
	OAuth          *credentials.FileOAuth            `json:"oauth"`
}

type fileRule struct {
	SideEffect        agentrt.SideEffect         `json:"side_effect"`
	Timeout           *duration                  `json:"timeout"`
	Description       string                     `json:"description"`
	Deny              []string                   `json:"deny"`
	Fixed             map[string]json.RawMessage `json:"fixed"`
	Rename            string                     `json:"rename"`
	AllowHintMismatch bool                       `json:"allow_hint_mismatch"`
	Outcome           agentrt.PolicyOutcome      `json:"outcome"`
	RepeatWindow      *duration                  `json:"repeat_window"`
	Suggestion        string                     `json:"suggestion"`
}

// duration is a Go duration string ("15s") that must not be negative.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"15s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"15s\"", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*d = duration(v)
	return nil
}

func (d *duration) or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// Load reads a configuration file through mcp.ReadOwned (a regular
// file the current user owns that group and others cannot write, no
// symbolic link followed), refuses JSON the runtime would refuse (a
// repeated key among it), unknown fields and trailing data, resolves
// relative paths against the file's directory, fills in defaults, checks
// every field, and refuses a stdio server whose arguments reach the
// proxy's own files.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	b, err := mcp.ReadOwned(abs)
	if err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", abs, err)
	}
	var fc fileConfig
	if err := DecodeStrict(b, &fc); err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", abs, err)
	}
	cfg, err := fc.resolve(abs)
	if err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", abs, err)
	}
	if err := checkReach(cfg); err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", abs, err)
	}
	if cfg.PinnedKeys != "" {
		if cfg.pinned, err = agentrt.LoadPinnedKeys(cfg.PinnedKeys); err != nil {
			return nil, fmt.Errorf("proxy: config %s: pinned_keys: %w", abs, err)
		}
	}
	if cfg.disclosure, err = DisclosureRules(cfg); err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", abs, err)
	}
	if cfg.PolicyFile != "" {
		// Read once here, so what is checked is what decides.
		if cfg.filePolicy, err = cel.Load(cfg.PolicyFile); err != nil {
			return nil, fmt.Errorf("proxy: config %s: policy_file: %w", abs, err)
		}
	}
	return cfg, nil
}

// DecodeStrict refuses what the runtime refuses as JSON (so a repeated key
// cannot make two readers see two files), unknown fields and trailing
// data: the rule the configuration is read by, and the proxy's status
// tool its arguments by.
func DecodeStrict(b []byte, v any) error {
	if err := agentrt.CheckJSON(b); err != nil {
		return err
	}
	return canon.DecodeStrict(b, v)
}

func bad(field, format string, args ...any) error {
	return &agentrt.ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// resolve fills in defaults, makes paths absolute and checks every field.
func (fc *fileConfig) resolve(path string) (*Config, error) {
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	cfg := &Config{
		Path: path, Session: fc.Session, StatusTool: fc.StatusTool,
		Hold: fc.Hold.or(DefaultHold), RepeatWindow: fc.RepeatWindow.or(DefaultRepeatWindow),
		ApprovalTTL: fc.ApprovalTTL.or(DefaultApprovalTTL), GrantTTL: fc.GrantTTL.or(DefaultGrantTTL),
		LeaseTTL: fc.LeaseTTL.or(agentrt.DefaultLeaseTTL), MaxPending: DefaultMaxPending,
	}
	if fc.Database == "" {
		return nil, bad("database", "is required: the runs database's path")
	}
	cfg.Database = rel(fc.Database)
	cfg.Index = cfg.Database + IndexSuffix
	if fc.Index != "" {
		cfg.Index = rel(fc.Index)
	}
	if cfg.Index == cfg.Database {
		return nil, bad("index", "must not be the database itself")
	}
	if cfg.ConsoleURL = fc.ConsoleURL; cfg.ConsoleURL != "" && !goodConsoleURL(cfg.ConsoleURL) {
		return nil, bad("console_url", "must be an http or https URL with a host and no query, got %q", trace.Sanitize(cfg.ConsoleURL))
	}
	if cfg.Session == "" {
		cfg.Session = DefaultSession
	}
	if !sessionRE.MatchString(cfg.Session) {
		return nil, bad("session", "must match %s, got %q", sessionRE, trace.Sanitize(cfg.Session))
	}
	if cfg.StatusTool == "" {
		cfg.StatusTool = DefaultStatusTool
	}
	if !nameRE.MatchString(cfg.StatusTool) {
		return nil, bad("status_tool", "must match %s, got %q", nameRE, trace.Sanitize(cfg.StatusTool))
	}
	if fc.MaxPending != nil {
		if *fc.MaxPending < 1 {
			return nil, bad("max_pending", "must be at least 1, got %d", *fc.MaxPending)
		}
		cfg.MaxPending = *fc.MaxPending
	}
	if cfg.LeaseTTL < MinLeaseTTL {
		return nil, bad("lease_ttl", "must be at least %s, got %s", MinLeaseTTL, cfg.LeaseTTL)
	}
	var err error
	if cfg.Policy, err = resolvePolicy(fc.Policy); err != nil {
		return nil, err
	}
	if fc.PolicyFile != "" {
		cfg.PolicyFile = rel(fc.PolicyFile)
	}
	if fc.PinnedKeys != "" {
		cfg.PinnedKeys = rel(fc.PinnedKeys)
	}
	cfg.RequireSignedGrant = fc.RequireSigned
	if fc.CheckpointKey != "" {
		cfg.Checkpoint.KeyFile = rel(fc.CheckpointKey)
	}
	cfg.Checkpoint.Interval, cfg.Checkpoint.Sync = fc.CheckpointInterval.or(0), fc.CheckpointSync
	if fc.Disclosure != nil {
		cfg.Disclosure = *fc.Disclosure
	}
	if cfg.Servers, err = fc.resolveServers(rel, cfg.PolicyFile != ""); err != nil {
		return nil, err
	}
	return cfg, nil
}

// resolvePolicy is the default policy with the file's outcome for each
// side-effect class it names.
func resolvePolicy(in map[string]string) (agentrt.SideEffectPolicy, error) {
	pol := agentrt.DefaultPolicy()
	for _, class := range slices.Sorted(maps.Keys(in)) {
		se := agentrt.SideEffect(class)
		if !se.Valid() {
			return nil, bad("policy", "names %q, not a side-effect class (read_only, local_mutation, remote_mutation, destructive)", trace.Sanitize(class))
		}
		out := agentrt.PolicyOutcome(in[class])
		if !configOutcome(out) {
			return nil, bad("policy."+class, "must be allow, require_approval or deny, got %q", trace.Sanitize(string(out)))
		}
		pol[se] = out
	}
	return pol, nil
}

// resolveServers checks every server entry, and that no two share a
// name; with a policy file, no rule may set an outcome.
func (fc *fileConfig) resolveServers(rel func(string) string, policyFile bool) ([]ServerConfig, error) {
	if len(fc.Servers) == 0 {
		return nil, bad("servers", "must name at least one server")
	}
	var out []ServerConfig
	names := map[string]bool{}
	for i, fs := range fc.Servers {
		field := fmt.Sprintf("servers[%d]", i)
		s, err := fs.resolve(field, rel)
		if err != nil {
			return nil, err
		}
		if policyFile {
			for _, name := range slices.Sorted(maps.Keys(s.Rules)) {
				if s.Rules[name].Outcome != "" {
					return nil, bad(fmt.Sprintf("%s.rules.%s.outcome", field, name), "cannot be set while policy_file decides every call; say it in the policy file")
				}
			}
		}
		if names[s.Name] {
			return nil, bad(field+".name", "%q names a server twice", s.Name)
		}
		names[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

func configOutcome(o agentrt.PolicyOutcome) bool {
	return o == agentrt.Allow || o == agentrt.RequireApproval || o == agentrt.Deny
}

func (fs *fileServer) resolve(field string, rel func(string) string) (s ServerConfig, err error) {
	s = ServerConfig{Name: fs.Name, Command: fs.Command, Endpoint: fs.Endpoint, Env: fs.Env, InheritEnv: fs.InheritEnv,
		ConnectTimeout: fs.ConnectTimeout.or(0), DefaultTimeout: fs.DefaultTimeout.or(0), SkipPathCheck: fs.SkipPathCheck,
		Rules: map[string]ToolRule{}}
	if !nameRE.MatchString(s.Name) {
		return s, bad(field+".name", "must match %s, got %q", nameRE, trace.Sanitize(s.Name))
	}
	if (len(s.Command) > 0) == (s.Endpoint != "") {
		return s, bad(field, "must set exactly one of command (stdio) and endpoint (streamable HTTP or SSE)")
	}
	if len(s.Command) > 0 && s.Command[0] == "" {
		return s, bad(field+".command", "must start with the program to run")
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return s, bad(field+".env", "%q is not a variable name", trace.Sanitize(k))
		}
	}
	if err := fs.resolveRemote(field, rel, &s); err != nil {
		return s, err
	}
	if fs.Manifest == "" {
		return s, bad(field+".manifest", "is required: the pin file `agentrt-proxy pin` writes")
	}
	s.Manifest = rel(fs.Manifest)
	if s.Surfaces, err = resolveSurfaces(field, fs.Surfaces); err != nil {
		return s, err
	}
	s.PromptRename = map[string]string{}
	seen := map[string]string{}
	for _, from := range slices.Sorted(maps.Keys(fs.PromptRename)) {
		to := fs.PromptRename[from]
		if !nameRE.MatchString(to) {
			return s, bad(field+".prompt_rename."+trace.Sanitize(from), "must match %s, got %q", nameRE, trace.Sanitize(to))
		}
		if other, dup := seen[to]; dup {
			return s, bad(field+".prompt_rename", "renames both %q and %q to %q", trace.Sanitize(other), trace.Sanitize(from), to)
		}
		seen[to] = from
		s.PromptRename[from] = to
	}
	if s.Forward, err = resolveForward(field, fs.Forward); err != nil {
		return s, err
	}
	// A missing rules object is a mistake; an empty one is the operator
	// saying the server offers no tools (its prompts and resources are
	// still served), and any tool it does offer stays unclassified.
	if fs.Rules == nil {
		return s, bad(field+".rules", "must classify at least one tool: a tool without a rule is never registered (write \"rules\": {} for a server that offers no tools)")
	}
	for _, name := range slices.Sorted(maps.Keys(fs.Rules)) {
		fr := fs.Rules[name]
		rf := fmt.Sprintf("%s.rules.%s", field, name)
		if !fr.SideEffect.Valid() {
			return s, bad(rf+".side_effect", "must be read_only, local_mutation, remote_mutation or destructive, got %q", trace.Sanitize(string(fr.SideEffect)))
		}
		if fr.Outcome != "" && !configOutcome(fr.Outcome) {
			return s, bad(rf+".outcome", "must be allow, require_approval or deny, got %q", trace.Sanitize(string(fr.Outcome)))
		}
		r := ToolRule{SideEffect: fr.SideEffect, Timeout: fr.Timeout.or(0), Description: fr.Description, Deny: fr.Deny,
			Fixed: fr.Fixed, Rename: fr.Rename, AllowHintMismatch: fr.AllowHintMismatch, Outcome: fr.Outcome,
			Suggestion: fr.Suggestion}
		if fr.Timeout != nil && r.Timeout == 0 {
			return s, bad(rf+".timeout", "must be positive")
		}
		if fr.RepeatWindow != nil {
			w := time.Duration(*fr.RepeatWindow)
			r.RepeatWindow = &w
		}
		s.Rules[name] = r
	}
	return s, nil
}

// goodConsoleURL is an http or https URL with a host, no user, query or
// fragment.
func goodConsoleURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == ""
}

// headerNameRE is an HTTP header name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// resolveRemote reads the fields that say how a server is reached beyond
// its command or endpoint: the transport, the secret headers and
// variables, and OAuth.
func (fs *fileServer) resolveRemote(field string, rel func(string) string, s *ServerConfig) error {
	switch fs.Transport {
	case "", "streamable_http":
	case "sse":
		s.SSE = true
	default:
		return bad(field+".transport", "must be streamable_http or sse, got %q", trace.Sanitize(fs.Transport))
	}
	if s.SSE && s.Endpoint == "" {
		return bad(field+".transport", "sse needs an endpoint")
	}
	switch fs.Protocol {
	case "", "2025-11-25":
	case "2026-07-28":
		if s.SSE {
			return bad(field+".protocol", "2026-07-28 has no binding for the sse transport")
		}
	default:
		return bad(field+".protocol", "must be 2025-11-25 or 2026-07-28 (or left out for the newest the server offers), got %q", trace.Sanitize(fs.Protocol))
	}
	s.Protocol = fs.Protocol
	if len(fs.Headers) > 0 && s.Endpoint == "" {
		return bad(field+".headers", "are sent only to an endpoint; a stdio server takes secret_env")
	}
	if len(fs.SecretEnv) > 0 && len(s.Command) == 0 {
		return bad(field+".secret_env", "is given only to a stdio server; an endpoint takes headers")
	}
	s.Headers = map[string]credentials.SecretRef{}
	for _, name := range slices.Sorted(maps.Keys(fs.Headers)) {
		f := field + ".headers." + trace.Sanitize(name)
		if !headerNameRE.MatchString(name) {
			return bad(f, "is not an HTTP header name")
		}
		canon := http.CanonicalHeaderKey(name)
		if _, dup := s.Headers[canon]; dup {
			return bad(f, "names a header twice")
		}
		switch canon {
		case "Host", "Content-Length", "Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
			return bad(f, "is a header the transport sets itself")
		}
		if canon == "Authorization" && fs.OAuth != nil {
			return bad(f, "cannot be set while oauth authorizes the server")
		}
		r, err := fs.Headers[name].Resolve(f, rel)
		if err != nil {
			return err
		}
		s.Headers[canon] = r
	}
	s.SecretEnv = map[string]credentials.SecretRef{}
	for _, name := range slices.Sorted(maps.Keys(fs.SecretEnv)) {
		f := field + ".secret_env." + trace.Sanitize(name)
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return bad(f, "is not a variable name")
		}
		if _, clash := fs.Env[name]; clash {
			return bad(f, "is also set in env")
		}
		r, err := fs.SecretEnv[name].Resolve(f, rel)
		if err != nil {
			return err
		}
		s.SecretEnv[name] = r
	}
	if fs.OAuth != nil {
		o, err := fs.OAuth.Resolve(field+".oauth", rel, s.Name, s.Endpoint, s.SSE)
		if err != nil {
			return err
		}
		s.OAuth = o
	}
	return nil
}
