//lint:file-ignore SA1019 MCP logging is deprecated in the 2026-07-28 protocol but still offered by servers in the deprecation window; the proxy reads whether a server offers it to forward it under policy.

package proxy

import (
	"context"
	"slices"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/proxy/internal/uritemplate"
)

// upstream is one configured server: its entry, the connection it was
// loaded on, the stored login it connected with, its standby state while
// that login does not work (standby.go), and, once connected, the
// surfaces beyond tools it forwards (forward.go) with their routing
// state. New makes one per configured server; a tool call asks it
// whether the call can go upstream (ready). Its surfaces are filled in,
// and it is published to host requests (Proxy.upstreams), when it
// connects: at start, or when a standby server loads.
type upstream struct {
	p    *Proxy
	cfg  ServerConfig
	name string
	// login is the stored login of an authorization-code server that
	// loaded at start; a standby server keeps the one it loads with.
	login *credentials.Stored
	// standby is its state while its login did not work at start; nil
	// for every other server. Written only in New.
	standby *standbyServer
	// opened is the connection New opened, closed with the proxy (a
	// standby server's own is closed by closeStandby).
	opened *mcp.Connection

	// The surfaces, written by connected before the upstream is
	// published and never after.
	conn    *mcp.Connection
	allowed map[Surface]bool
	timeout time.Duration
	// subscribes says the server offers resource subscriptions.
	subscribes bool
	// announces says the server's capabilities promise list_changed for
	// its prompts or its resources.
	announces map[Surface]bool
	// promptRename is the configuration's prompt_rename.
	promptRename map[string]string

	mu        sync.Mutex
	uris      map[string]bool         // the URIs of its last resources/list
	templates []*uritemplate.Template // the URI templates of its last listing
	// listed says resources and templates were listed since the server
	// last said they changed; until then a read lists first, to route by
	// what the servers claim. resEpoch counts those changes: a listing
	// read while one came in does not count.
	listed, listedRes, listedTmpl bool
	resEpoch                      uint64
}

func newUpstream(p *Proxy, sc ServerConfig) *upstream {
	return &upstream{p: p, cfg: sc, name: sc.Name}
}

// ready reports whether a call of tool (the server's own name for it) can
// go upstream now. A server loaded at start needs only a login that still
// works; a standby server is asked in standbyReady.
func (u *upstream) ready(ctx context.Context, tool string) bool {
	if u.standby != nil {
		return u.standbyReady(ctx, tool)
	}
	return u.login == nil || u.login.Usable()
}

// loginBroken reports whether the server's stored login no longer works;
// a new login written since makes it work again.
func (u *upstream) loginBroken() bool {
	l := u.login
	if u.standby != nil {
		l = u.standby.login.Load()
	}
	return l != nil && !l.Usable()
}

// surfaceAllowed says whether cfg forwards surface s of server sc.
func surfaceAllowed(cfg *Config, sc ServerConfig, s Surface) bool {
	if o, ok := sc.Surfaces[s]; ok {
		return o == agentrt.Allow
	}
	return cfg.Policy[agentrt.ReadOnly] == agentrt.Allow
}

// connected records the surfaces of the server connected on conn: those
// the configuration allows and the server offers. It runs in New for the
// servers loaded at start, and later for a standby server that loads,
// while host requests read the servers; it publishes the upstream last.
func (u *upstream) connected(conn *mcp.Connection) {
	caps := conn.Capabilities()
	u.conn, u.allowed, u.timeout, u.uris, u.promptRename = conn, map[Surface]bool{}, u.cfg.DefaultTimeout, map[string]bool{}, u.cfg.PromptRename
	if u.timeout == 0 {
		u.timeout = forwardTimeout
	}
	offers := map[Surface]bool{SurfaceResources: caps.Resources != nil, SurfacePrompts: caps.Prompts != nil,
		SurfaceCompletion: caps.Completions != nil, SurfaceLogging: caps.Logging != nil}
	for _, s := range config.Surfaces {
		u.allowed[s] = offers[s] && surfaceAllowed(u.p.cfg, u.cfg, s)
	}
	u.subscribes = caps.Resources != nil && caps.Resources.Subscribe
	u.announces = map[Surface]bool{SurfacePrompts: caps.Prompts != nil && caps.Prompts.ListChanged,
		SurfaceResources: caps.Resources != nil && caps.Resources.ListChanged}
	p := u.p
	p.upsMu.Lock()
	// A new array each time: a reader's snapshot never changes.
	p.ups = append(slices.Clip(p.ups), u)
	p.upsMu.Unlock()
}

// upstreams are the connected servers now, in the order they connected;
// the slice is never written again.
func (p *Proxy) upstreams() []*upstream {
	p.upsMu.RLock()
	defer p.upsMu.RUnlock()
	return p.ups
}

// close ends the connection New opened for the server, or the one its
// standby state loaded with.
func (u *upstream) close() error {
	if u.standby != nil {
		return u.standby.close()
	}
	if u.opened != nil {
		return u.opened.Close()
	}
	return nil
}

func (u *upstream) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, u.timeout)
}
