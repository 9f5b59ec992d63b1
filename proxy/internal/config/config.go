// Package config is agentrt-proxy's configuration: the file's JSON form
// and its validation (Load), the validated Config with every path
// absolute, what each upstream server's entry says (ServerConfig,
// ToolRule, the surfaces and server requests it forwards), the policy
// outcome a rule gives, and the files a configuration names: the rule
// they are held to and the check that no stdio server reaches them.
// Dial connects a configured server with its secrets read.
//
// Package proxy gives these names under their own (proxy.Config,
// proxy.LoadConfig, ...); this package is where they are kept.
package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
)

// Defaults for the fields a configuration leaves out.
const (
	// DefaultSession names the session when the file names none.
	DefaultSession = "default"
	// DefaultHold is how long one call waits for a decision before it
	// answers PENDING_APPROVAL.
	DefaultHold = 15 * time.Second
	// DefaultRepeatWindow is how long an executed, rejected or expired call
	// answers an identical call instead of running or asking again.
	DefaultRepeatWindow = 10 * time.Minute
	// DefaultMaxPending caps the approvals one session holds open.
	DefaultMaxPending = 5
	// DefaultApprovalTTL bounds how long an approval may stay pending.
	DefaultApprovalTTL = 24 * time.Hour
	// DefaultGrantTTL bounds how long a granted approval waits to be
	// collected.
	DefaultGrantTTL = 24 * time.Hour
	// DefaultStatusTool is the status tool's name.
	DefaultStatusTool = "gate_status"
	// MinLeaseTTL is the shortest lease a configuration may ask for: a
	// lease renewed less often than the store can be reached under load is
	// a lease lost.
	MinLeaseTTL = 3 * time.Second
	// IndexSuffix is appended to the database path to name the index when
	// the configuration names none.
	IndexSuffix = ".proxy"
)

var (
	nameRE    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	sessionRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// ValidName reports whether s may name a server, a tool or a prompt the
// host sees: 1 to 64 ASCII letters, digits, '_' and '-'.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Config is a validated proxy configuration with every path absolute.
// Load builds one from a file; every field has its default filled
// in, so zero values below mean what they say.
type Config struct {
	// Path is the configuration file, absolute.
	Path string
	// Database is the runs database (sqlite), created owner-only if absent.
	Database string
	// Index is the proxy's own SQLite file: which call is which run.
	// Default: Database + IndexSuffix.
	Index string
	// Session scopes the index: calls match only within one session.
	Session string
	// Servers are the upstream MCP servers, in the file's order.
	Servers []ServerConfig
	// Policy maps each side-effect class to allow, require_approval or
	// deny, merged over agentrt.DefaultPolicy.
	Policy agentrt.SideEffectPolicy
	// PolicyFile, when set, is a declarative policy file (policy/cel) that
	// decides every call instead of Policy; a rule's own outcome is then
	// refused. Empty means the class map decides.
	PolicyFile string
	// filePolicy is PolicyFile as Load read and compiled it, once.
	filePolicy *cel.Policy
	// Hold is how long a call that needs a decision waits for it; zero
	// answers at once.
	Hold time.Duration
	// RepeatWindow is how long an identical call is answered from an
	// executed, rejected or expired one; zero turns it off.
	RepeatWindow time.Duration
	// MaxPending caps the approvals open at once in the session; at least 1.
	MaxPending int
	// ApprovalTTL bounds a pending approval; zero means no expiry.
	ApprovalTTL time.Duration
	// GrantTTL bounds a granted approval not yet collected; zero means no
	// expiry.
	GrantTTL time.Duration
	// StatusTool is the status tool's name.
	StatusTool string
	// LeaseTTL is each run's lease; at least MinLeaseTTL.
	LeaseTTL time.Duration
	// PinnedKeys, when set, is an owner-only pinned keys file (agentrt
	// approvers list -pin): every grant must then be signed by one of its
	// keys, so whoever can write the database cannot approve. Empty trusts
	// every key enrolled in the database.
	PinnedKeys string
	// pinned is PinnedKeys as Load read it, once.
	pinned *agentrt.PinnedKeys
	// RequireSignedGrant makes every call that needs approval need a
	// signed one; each run records it in its limits.
	RequireSignedGrant bool
	// Disclosure configures the disclosure rules every tool result passes
	// before it is recorded or returned to the host, and every call's
	// arguments are scanned with for the policy. The zero value is
	// disclosure.Default(): every secret rule redacts. Tool names are the
	// names the host sees.
	Disclosure disclosure.Config
	// disclosure is Disclosure as Load built it, once.
	disclosure *disclosure.Rules
	// ConsoleURL, when set, is the operator console's base URL (http or
	// https): a call held for an MCP 2026-07-28 host that takes URL
	// elicitation is pointed at its approval page there. Empty names the
	// approval in text instead.
	ConsoleURL string
	// Checkpoint is the integrator the proxy runs beside its gate
	// (docs/receipts.md). The zero value folds unsigned checkpoints every
	// 250 ms.
	Checkpoint checkpoint.Process
}

// DisclosureRules is the rules c.Disclosure builds: Load's, or built now
// for a Config made in code. It is a function, not a method, so that it is
// not part of proxy.Config's API.
func DisclosureRules(c *Config) (*disclosure.Rules, error) {
	if c.disclosure != nil {
		return c.disclosure, nil
	}
	r, err := disclosure.New(c.Disclosure)
	if err != nil {
		return nil, fmt.Errorf("proxy: disclosure: %w", err)
	}
	return r, nil
}

// FilePolicy is c.PolicyFile as Load read and compiled it, once; nil for
// a Config made in code, which the proxy then loads itself.
func FilePolicy(c *Config) *cel.Policy { return c.filePolicy }

// Pinned is c.PinnedKeys as Load read it, once; nil for a Config made in
// code.
func Pinned(c *Config) *agentrt.PinnedKeys { return c.pinned }

// ServerConfig is one upstream server.
type ServerConfig struct {
	Name string
	// Command is a stdio server's argv; Endpoint a streamable HTTP URL.
	// Exactly one is set.
	Command  []string
	Endpoint string
	// Env holds variables given to a stdio server; InheritEnv names
	// variables copied from the proxy's environment.
	Env        map[string]string
	InheritEnv []string
	// ConnectTimeout and DefaultTimeout are mcp.Server's; zero means its
	// defaults (a tool with no timeout of its own is then refused).
	ConnectTimeout time.Duration
	DefaultTimeout time.Duration
	// Manifest is the pin file, written by `agentrt-proxy pin`.
	Manifest string
	// Rules classify the server's tools, keyed by the server's names.
	Rules map[string]ToolRule
	// SkipPathCheck lets a stdio server's arguments name the proxy's own
	// files or a directory holding one.
	SkipPathCheck bool
	// Surfaces are the operator's word on what is forwarded beyond tools
	// (resources, prompts, completion, logging): allow or deny. A surface
	// it leaves out is read_only and follows the policy's read_only
	// outcome, forwarded only when that is allow.
	Surfaces map[Surface]agentrt.PolicyOutcome
	// PromptRename maps a prompt's name on this server to the name the
	// host sees, for a name another server also offers; a prompt it does
	// not name keeps the server's own name.
	PromptRename map[string]string
	// Forward names the server requests the proxy passes on to the host
	// (sampling, elicitation); empty means every one is refused.
	Forward map[ServerRequest]bool
	// SSE reaches Endpoint with the legacy HTTP+SSE transport
	// ("transport": "sse") under the same bounds as streamable HTTP.
	SSE bool
	// Protocol is mcp.Server's: empty speaks the newest revision the
	// server offers; "2025-11-25" keeps a session for a server whose tools
	// still send requests of their own; "2026-07-28" refuses a server
	// without it.
	Protocol string
	// Headers are sent on every request to Endpoint's origin, each value
	// read from where its SecretRef says when the proxy starts.
	Headers map[string]credentials.SecretRef
	// SecretEnv are variables given to a stdio server, each read from
	// where its SecretRef says when the proxy starts.
	SecretEnv map[string]credentials.SecretRef
	// OAuth, when set, authorizes every request to Endpoint with OAuth 2.1
	// tokens: those `agentrt-proxy login` stored, or client credentials.
	OAuth *credentials.OAuthConfig
}

// ToolRule is the operator's word on one tool: an mcp rule, plus the
// proxy's own per-tool outcome and repeat window.
type ToolRule struct {
	SideEffect        agentrt.SideEffect
	Timeout           time.Duration
	Description       string
	Deny              []string
	Fixed             map[string]json.RawMessage
	Rename            string
	AllowHintMismatch bool
	// Outcome, when set, replaces the class's outcome for this tool.
	Outcome agentrt.PolicyOutcome
	// RepeatWindow, when set, replaces the configuration's for this tool.
	RepeatWindow *time.Duration
	// Suggestion, when set, marks a rule `agentrt-proxy init` wrote from
	// the server's hints and says why: it is not the operator's word yet,
	// so the tool is not offered until `agentrt-proxy review` makes it a
	// rule. Empty means the operator classified the tool.
	Suggestion string
}

// MCPRule is the rule handed to mcp.Load. Every proxied tool is terminal:
// one call is one run.
func MCPRule(r ToolRule) mcp.Rule {
	return mcp.Rule{SideEffect: r.SideEffect, Timeout: r.Timeout, Terminal: true, Description: r.Description,
		Deny: r.Deny, Fixed: r.Fixed, Rename: r.Rename, AllowHintMismatch: r.AllowHintMismatch}
}

// Server is the mcp.Server the configuration describes.
func (s ServerConfig) Server() mcp.Server {
	srv := mcp.Server{Name: s.Name, Command: append([]string(nil), s.Command...), Endpoint: s.Endpoint, SSE: s.SSE, Protocol: s.Protocol,
		InheritEnv: append([]string(nil), s.InheritEnv...), ConnectTimeout: s.ConnectTimeout, DefaultTimeout: s.DefaultTimeout}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		srv.Env = append(srv.Env, k+"="+s.Env[k])
	}
	return srv
}

// MCPRules are the rules handed to mcp.Load. A suggestion is not a rule:
// its tool is left unclassified.
func (s ServerConfig) MCPRules() mcp.Rules {
	out := mcp.Rules{}
	for k, r := range s.Rules {
		if r.Suggestion != "" {
			continue
		}
		out[k] = MCPRule(r)
	}
	return out
}
