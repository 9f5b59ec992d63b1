package proxy

import "github.com/agentrt/agentrt/proxy/internal/front"

// The opt-in loopback HTTP front is proxy/internal/front; these are its
// names as the proxy's API gives them.

// The loopback front's default session bound, its shortest token and its
// path.
const (
	// DefaultFrontMaxSessions bounds the sessions open at once.
	DefaultFrontMaxSessions = front.DefaultMaxSessions
	// MinFrontTokenBytes is the shortest bearer token the front accepts.
	MinFrontTokenBytes = front.MinTokenBytes
	// FrontPath is where the front answers; every other path is 404.
	FrontPath = front.Path
)

// The codes of the front's own refusals, in {error, code} JSON bodies.
const (
	FrontCodeUnauthorized   = front.CodeUnauthorized
	FrontCodeForeignOrigin  = front.CodeForeignOrigin
	FrontCodeForeignHost    = front.CodeForeignHost
	FrontCodeBodyTooLarge   = front.CodeBodyTooLarge
	FrontCodeTooManySession = front.CodeTooManySessions
	FrontCodeNotFound       = front.CodeNotFound
)

// FrontConfig configures the front: a loopback address and a bearer
// token (required), and the bounds on bodies and sessions (front.Config).
type FrontConfig = front.Config

// Front is the proxy's loopback streamable-HTTP front: the same tools
// under the same gate as stdio, for a host that speaks only HTTP.
type Front = front.Front

// DefaultFrontConfig is a FrontConfig on addr with a new token and the
// default bounds; an addr that is not a loopback IP and port is refused
// with a *agentrt.ConfigError.
func DefaultFrontConfig(addr string) (FrontConfig, error) { return front.DefaultConfig(addr) }

// NewFrontToken is 32 random bytes in hex.
func NewFrontToken() (string, error) { return front.NewToken() }

// ReadFrontToken reads a bearer token from a file only its owner can read
// or write (front.ReadToken).
func ReadFrontToken(path string) (string, error) { return front.ReadToken(path) }

// NewFront validates cfg and builds the front on this proxy's servers.
// Nothing listens until Listen; Serve, as it ends, waits for the calls in
// flight to record their outcome.
func (p *Proxy) NewFront(cfg FrontConfig) (*Front, error) {
	return front.New(cfg, p.newServer, p.inflight.Wait)
}
