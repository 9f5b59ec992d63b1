package proxy

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/trace"
)

// standbyServer is an OAuth server whose login did not work when the
// proxy started. Its tools are offered from the pin (mcp.Offline) and
// answer UNAVAILABLE; the first tool call, or the first request for
// prompts, resources, completion or logging, after the token file
// changes (a new `agentrt-proxy login`) loads the server. From then on
// each tool whose loaded spec is the one offered calls through, and the
// server's other surfaces are forwarded under the configuration's rules
// exactly as for a server loaded at start (addUpstream): every host
// session is sent notifications/prompts/list_changed and
// notifications/resources/list_changed for what it forwards, and the
// logging level a host asked for is passed on. The proxy advertises
// what the server's configuration allows from the start (forward.go's
// serverOptions), so a host lists nothing of it, without an error,
// until it loads.
type standbyServer struct {
	cfg      ServerConfig
	manifest *mcp.Manifest
	tools    map[string]*standbyTool // by the server's tool name

	mu    sync.Mutex
	tried credentials.Stamp // the token file as it was at the last attempt
	once  bool              // an attempt was made
	conn  *mcp.Connection
	login atomic.Pointer[credentials.Stored]
	up    atomic.Bool // loaded
}

// standbyTool is one tool of a standby server: the offline tool until the
// server loads, the loaded one after.
type standbyTool struct {
	offline agentrt.Tool
	live    atomic.Pointer[agentrt.Tool]
}

func (t *standbyTool) Spec() agentrt.ToolSpec { return t.offline.Spec() }

func (t *standbyTool) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	if l := t.live.Load(); l != nil {
		return (*l).Call(ctx, call)
	}
	return t.offline.Call(ctx, call)
}

// loginLapsed reports whether err is a login that does not work.
func loginLapsed(err error) bool {
	return errors.Is(err, ErrLoginNeeded) || errors.Is(err, mcp.ErrNotAuthorized)
}

// offlineTools puts u, whose login did not work at start, on standby and
// offers its tools from its pin; the operator is told on stderr how to
// fix it.
func (u *upstream) offlineTools(m *mcp.Manifest, told bool) ([]agentrt.Tool, *mcp.Report, error) {
	s := u.cfg
	tools, rep, err := mcp.Offline(s.Server(), m, s.MCPRules())
	if err != nil {
		return nil, nil, err
	}
	sb := &standbyServer{cfg: s, manifest: m, tools: map[string]*standbyTool{}}
	sb.tried, sb.once = credentials.StampOf(s.OAuth.Tokens)
	out := make([]agentrt.Tool, len(tools))
	for i, tl := range tools {
		st := &standbyTool{offline: tl}
		sb.tools[rep.Registered[i].Tool] = st
		out[i] = st
	}
	u.standby = sb
	if !told {
		u.p.loginNeeded(s.Name)
	}
	return out, rep, nil
}

// standbyReady is ready for a standby server: it is loaded first if a new
// login makes that possible (a token file unchanged since the last attempt
// is not tried again), the tool must have loaded as pinned, and the login
// must still work.
func (u *upstream) standbyReady(ctx context.Context, tool string) bool {
	return u.reachable(ctx) && u.live(tool) && !u.loginBroken()
}

// reachable reports whether a call to u can go upstream: false for a
// standby server that still cannot be loaded. A token file unchanged since
// the last attempt is not tried again.
func (u *upstream) reachable(ctx context.Context) bool {
	sb, p := u.standby, u.p
	if sb == nil || sb.up.Load() {
		return true
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.up.Load() {
		return true
	}
	st, _ := credentials.StampOf(sb.cfg.OAuth.Tokens)
	if sb.once && st == sb.tried {
		return false
	}
	sb.tried, sb.once = st, true
	srv, err := sb.cfg.Dial(DialOptions{Lookup: p.opts.Lookup, OnLoginNeeded: p.loginNeeded})
	if err != nil {
		p.logf("agentrt-proxy: server %s is still not loaded: %s", sb.cfg.Name, trace.Sanitize(err.Error()))
		return false
	}
	srv.Notifications = p.notifications(sb.cfg)
	// Bounded by the server's connect timeout; a host that gives up on
	// this call does not spend the attempt.
	tools, rep, err := mcp.Load(context.WithoutCancel(ctx), srv, sb.manifest, sb.cfg.MCPRules())
	if err != nil {
		if rep != nil && rep.Connection != nil {
			rep.Connection.Close()
		}
		p.logf("agentrt-proxy: server %s is still not loaded: %s", sb.cfg.Name, trace.Sanitize(err.Error()))
		return false
	}
	sb.conn = rep.Connection
	u.connected(sb.conn)
	if l, ok := srv.OAuthHandler.(*credentials.Stored); ok {
		sb.login.Store(l)
	}
	for i, tl := range tools {
		st := sb.tools[rep.Registered[i].Tool]
		if st == nil || !sameSpec(st.offline.Spec(), tl.Spec()) {
			// Changed since the pin was read at start: refused until the
			// proxy starts again with a reviewed pin.
			continue
		}
		st.live.Store(&tl)
	}
	for _, name := range slices.Sorted(maps.Keys(sb.tools)) {
		if sb.tools[name].live.Load() == nil {
			p.logf("agentrt-proxy: server %s: tool %s did not load as pinned; it answers UNAVAILABLE until the proxy starts again (check with `agentrt-proxy check`)", sb.cfg.Name, trace.Sanitize(name))
		}
	}
	sb.up.Store(true)
	p.logf("agentrt-proxy: server %s is loaded after a new login", sb.cfg.Name)
	p.surfacesAppeared(ctx, u)
	return true
}

// loadStandby tries to load each standby server whose token file changed
// since its last attempt: a host asking for prompts or resources brings
// a server back as a tool call does.
func (p *Proxy) loadStandby(ctx context.Context) {
	for _, u := range p.servers {
		if u.standby != nil && !u.standby.up.Load() {
			u.reachable(ctx)
		}
	}
}

// standbyAllows says whether the configuration of some standby server
// forwards surface s: it may offer it once it loads.
func (p *Proxy) standbyAllows(s Surface) bool {
	for _, u := range p.servers {
		if u.standby != nil && surfaceAllowed(p.cfg, u.cfg, s) {
			return true
		}
	}
	return false
}

// mayAllow says whether surface s is forwarded now or may be once a
// standby server loads: what the proxy advertises and answers.
func (p *Proxy) mayAllow(s Surface) bool {
	return p.anyAllows(s) || p.standbyAllows(s)
}

// The host-facing SDK server sends a list_changed notification (to each
// session that may hear it, by its protocol) when its own prompts or
// resources change. The proxy answers those requests itself and keeps
// none there, so a placeholder added and removed at once is the change;
// hosts never see it.
const (
	listChangedPrompt = "agentrt-proxy-list-changed"
	listChangedURI    = "agentrt-proxy:list-changed"
)

// surfacesAppeared tells every host session that server u's prompts and
// resources are forwarded now, and passes on the logging level a host
// asked for before it loaded.
func (p *Proxy) surfacesAppeared(ctx context.Context, u *upstream) {
	p.passLastLevel(context.WithoutCancel(ctx), u)
	p.listsChanged(u.allowed[SurfacePrompts], u.allowed[SurfaceResources])
}

// listsChanged sends every host session notifications/prompts/list_changed
// and notifications/resources/list_changed, as asked.
func (p *Proxy) listsChanged(prompts, resources bool) {
	if !prompts && !resources {
		return
	}
	p.hostsMu.Lock()
	hosts := slices.Clone(p.hosts)
	p.hostsMu.Unlock()
	for _, h := range hosts {
		if prompts {
			h.AddPrompt(&sdk.Prompt{Name: listChangedPrompt}, nil)
			h.RemovePrompts(listChangedPrompt)
		}
		if resources {
			h.AddResource(&sdk.Resource{URI: listChangedURI, Name: listChangedPrompt}, nil)
			h.RemoveResources(listChangedURI)
		}
	}
}

// sameSpec reports whether a loaded tool is the one offered at start.
func sameSpec(a, b agentrt.ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.SideEffect == b.SideEffect &&
		a.Timeout == b.Timeout && a.Terminal == b.Terminal && bytes.Equal(a.InputSchema, b.InputSchema)
}

// live reports whether tool (the server's own name for it) of a standby
// server has its loaded tool; a tool of any other server has.
func (u *upstream) live(tool string) bool {
	if u.standby == nil {
		return true
	}
	st := u.standby.tools[tool]
	return st != nil && st.live.Load() != nil
}

// close ends the connection a standby server loaded with.
func (sb *standbyServer) close() error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var err error
	if sb.conn != nil {
		err = sb.conn.Close()
		sb.conn = nil
	}
	return err
}
