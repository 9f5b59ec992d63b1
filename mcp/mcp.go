package mcp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/trace"
)

// Bounds on what one server may present or return.
const (
	// DefaultMaxContentBytes is the cap on one result's recorded content when
	// Server.MaxContentBytes is zero.
	DefaultMaxContentBytes = 64 << 10
	// DefaultConnectTimeout bounds connect, initialize, listing and Load's
	// checks when Server.ConnectTimeout is zero.
	DefaultConnectTimeout = 30 * time.Second
	// MaxToolPages is the most pages one listing may span.
	MaxToolPages = 100
	// MaxTools is the most tools one listing may hold.
	MaxTools = 1000
	// MaxResponseBodyBytes caps one streamable HTTP response body, and one
	// event of the long-lived stream the server pushes notifications on.
	MaxResponseBodyBytes = 16 << 20
	// MaxStreamRetries is how many times in a row a streamable HTTP
	// server's event stream is reopened without progress (the SDK's
	// backoff, or the delay the server's retry field asks for) before the
	// connection is given up. A call's stream is only ever resumed, with
	// Last-Event-ID on a GET of the same stream; the call itself is never
	// sent again, and a call whose stream cannot be resumed ends not
	// finished, within its own deadline.
	MaxStreamRetries = 5
	// StderrTailBytes is how much of a stdio server's stderr is kept for
	// connect and listing errors.
	StderrTailBytes = 4 << 10
)

// protocolVersion is the newest protocol this client asks for. The SDK
// first sends server/discover at this revision; a server that offers it is
// then spoken to statelessly (every request carries protocol version,
// client capabilities and client info in _meta, and over HTTP the
// Mcp-Method and Mcp-Name headers), and a server that does not is
// initialized at legacyProtocolVersion instead.
const protocolVersion = "2026-07-28"

// legacyProtocolVersion is the SDK's newest revision with sessions and
// initialize: what a server without server/discover settles on, and what a
// server behind the legacy SSE transport is asked for.
const legacyProtocolVersion = "2025-11-25"

// clientName and clientVersion identify this client to servers.
const (
	clientName    = "agentrt"
	clientVersion = "0.1.0"
)

// Sentinels callers branch on with errors.Is.
var (
	// ErrInvalidServer marks a Server that fails validation.
	ErrInvalidServer = errors.New("mcp: invalid server")
	// ErrConnectTimeout marks a connect, listing or Load that ran past
	// Server.ConnectTimeout.
	ErrConnectTimeout = errors.New("mcp: connect timeout")
	// ErrListing marks a tools/list the client refuses: over a bound, a
	// repeated cursor or name, or raw bytes that disagree with the SDK.
	ErrListing = errors.New("mcp: listing refused")
	// ErrNoTools marks a Load that registered nothing.
	ErrNoTools = errors.New("mcp: no tool registered")
	// ErrRedirect marks an HTTP response that tried to redirect the client.
	ErrRedirect = errors.New("mcp: redirect refused")
	// ErrBodyTooLarge marks an HTTP body over MaxResponseBodyBytes.
	ErrBodyTooLarge = errors.New("mcp: response body too large")
	// ErrToolChanged marks a call to a tool the server changed after Load.
	ErrToolChanged = errors.New("mcp: tool changed since it was pinned")
	// ErrClosed marks a call on a closed connection.
	ErrClosed = errors.New("mcp: connection closed")
	// ErrNotAuthorized marks a request the server refused for want of
	// authorization (a 401, or a 403 asking for more scope) that the
	// Server's OAuthHandler could not resolve without a person: the server
	// did not act on it. An OAuthHandler's Authorize returns an error
	// wrapping it, and a token source whose refresh failed does too.
	ErrNotAuthorized = errors.New("mcp: the server needs a new authorization")
)

// Server says how to reach one MCP server and how far to trust it. Exactly
// one of Command (stdio) and Endpoint (streamable HTTP) is set.
type Server struct {
	// Name is required. It prefixes the names the model sees
	// (<Name>_<tool>) and names the manifest. It must match
	// ^[a-zA-Z0-9_-]{1,64}$.
	Name string

	// Command is the stdio server's argv; Command[0] is looked up in PATH.
	// Start a pinned package with node and its entry point, never npx.
	Command []string
	// Env holds NAME=value entries given to a stdio server. Nil means none.
	Env []string
	// InheritEnv names variables copied from this process into a stdio
	// server, beyond PATH, HOME and TMPDIR. Nil means none.
	InheritEnv []string
	// Stderr receives a stdio server's stderr. Nil means it is discarded;
	// the last StderrTailBytes are kept for errors either way.
	Stderr io.Writer

	// Endpoint is the streamable HTTP URL, or with SSE the legacy SSE
	// endpoint (the GET stream that names where to post).
	Endpoint string
	// SSE reaches Endpoint with the legacy HTTP+SSE transport (protocol
	// 2024-11-05) instead of streamable HTTP, under the same bounds: no
	// redirect followed, every body and each event capped at
	// MaxResponseBodyBytes.
	SSE bool
	// Protocol, when set, is the one revision asked for. "2025-11-25"
	// initializes a session even with a server that offers 2026-07-28: for
	// a server whose tools still ask the client through requests of their
	// own (sampling, elicitation, roots), which 2026-07-28 replaced with
	// input_required results. "2026-07-28" refuses a server that does not
	// answer server/discover with it. Empty means the newest the server
	// offers; the legacy SSE transport is always 2025-11-25.
	Protocol string
	// OAuthHandler, when set, authorizes every streamable HTTP request
	// (the SDK's transport asks it for a token and calls Authorize on a
	// 401 or 403). The legacy SSE transport of the pinned SDK takes none,
	// so SSE with an OAuthHandler is refused.
	OAuthHandler auth.OAuthHandler
	// HTTPClient is copied, never modified; its CheckRedirect is replaced,
	// because no redirect is followed. Nil means a fresh client, never
	// http.DefaultClient.
	HTTPClient *http.Client

	// ConnectTimeout bounds connect, initialize, the listing and, in Load,
	// every check. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// DefaultTimeout bounds a call whose Rule names no timeout. Zero means
	// such a tool is refused.
	DefaultTimeout time.Duration
	// MaxContentBytes caps one result's recorded content, counted on the
	// encoded bytes. Zero means DefaultMaxContentBytes.
	MaxContentBytes int

	// Logger receives the SDK client's own logging. Nil means none.
	Logger *slog.Logger

	// Notifications, when set, hears what the server sends besides
	// answers: its log messages, resource updates, and changes to its
	// prompt and resource lists. See Notifications.
	Notifications *Notifications

	// transport, set only by tests, replaces Command and Endpoint with a
	// fresh in-process transport per connection.
	transport func() sdk.Transport
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validate checks every field and names the one that is wrong.
func (s *Server) validate() error {
	bad := func(field, reason string) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidServer, field, reason)
	}
	if !nameRE.MatchString(s.Name) {
		return bad("Name", fmt.Sprintf("must match %s, got %q", nameRE, trace.Sanitize(s.Name)))
	}
	n := 0
	if len(s.Command) > 0 {
		n++
	}
	if s.Endpoint != "" {
		n++
	}
	if s.transport != nil {
		n++
	}
	if n != 1 {
		return bad("Command/Endpoint", "must set exactly one")
	}
	if len(s.Command) > 0 && s.Command[0] == "" {
		return bad("Command[0]", "must not be empty")
	}
	for _, name := range s.InheritEnv {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return bad("InheritEnv", fmt.Sprintf("entry %q must be a variable name", name))
		}
	}
	for _, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return bad("Env", fmt.Sprintf("entry %q must be NAME=value", kv))
		}
	}
	if (s.SSE || s.OAuthHandler != nil) && s.Endpoint == "" {
		return bad("SSE/OAuthHandler", "need an Endpoint")
	}
	if s.SSE && s.OAuthHandler != nil {
		return bad("OAuthHandler", "is not supported by the SDK's legacy SSE client transport")
	}
	switch s.Protocol {
	case "", legacyProtocolVersion:
	case protocolVersion:
		if s.SSE {
			return bad("Protocol", "2026-07-28 has no binding for the legacy SSE transport")
		}
	default:
		return bad("Protocol", fmt.Sprintf("must be empty, %s or %s, got %q", legacyProtocolVersion, protocolVersion, trace.Sanitize(s.Protocol)))
	}
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("Endpoint", "must be an http or https URL")
		}
	}
	if s.ConnectTimeout < 0 {
		return bad("ConnectTimeout", "must not be negative")
	}
	if s.DefaultTimeout < 0 {
		return bad("DefaultTimeout", "must not be negative")
	}
	if s.MaxContentBytes < 0 {
		return bad("MaxContentBytes", "must not be negative")
	}
	return nil
}

func (s *Server) connectTimeout() time.Duration {
	if s.ConnectTimeout == 0 {
		return DefaultConnectTimeout
	}
	return s.ConnectTimeout
}

func (s *Server) maxContent() int {
	if s.MaxContentBytes == 0 {
		return DefaultMaxContentBytes
	}
	return s.MaxContentBytes
}

// childEnv is a stdio server's whole environment: PATH, HOME and TMPDIR
// when set here, then each InheritEnv name set here, then Env as written. A
// later entry replaces an earlier one of the same name. Nothing else of this
// process's environment reaches the server.
func childEnv(lookup func(string) (string, bool), inherit, env []string) []string {
	base := []string{"PATH", "HOME", "TMPDIR"}
	if runtime.GOOS == "windows" {
		base = []string{"PATH", "PATHEXT", "SystemRoot", "SystemDrive", "ComSpec", "TEMP", "TMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "HOME"}
	}
	var out []string
	index := map[string]int{}
	key := func(k string) string {
		if runtime.GOOS == "windows" {
			return strings.ToUpper(k)
		}
		return k
	}
	set := func(k, kv string) {
		if i, ok := index[key(k)]; ok {
			out[i] = kv
			return
		}
		index[key(k)] = len(out)
		out = append(out, kv)
	}
	for _, k := range append(base, inherit...) {
		if v, ok := lookup(k); ok {
			set(k, k+"="+v)
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set(k, kv)
	}
	return out
}
