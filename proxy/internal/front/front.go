// Package front is the proxy's opt-in loopback streamable-HTTP front: the
// proxy's tools under the same gate as stdio, for a host that speaks only
// HTTP. It checks what an HTTP request brings that stdio has not (the
// path, Host and Origin against DNS rebinding, a bearer token, the body's
// size, the number of sessions) and serves MCP 2025-11-25 hosts with
// sessions and 2026-07-28 hosts statelessly, chosen per request. The
// servers it hands requests to are the proxy's.
package front

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/internal/httpguard"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
)

// Bounds of the loopback front, for the fields a Config leaves zero.
const (
	// DefaultMaxBodyBytes bounds one request body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxSessions bounds the sessions open at once.
	DefaultMaxSessions = 8
	// DefaultSessionIdle closes a session no request has touched for
	// this long.
	DefaultSessionIdle = 10 * time.Minute
	// MinTokenBytes is the shortest bearer token the front accepts
	// from a file: a token an attacker on the machine can guess is none.
	MinTokenBytes = 32
	// Path is where the front answers; every other path is 404.
	Path = "/mcp"
)

// Config configures the opt-in loopback HTTP front. Zero values mean
// the default each field names; Addr and Token are required.
type Config struct {
	// Addr is where to listen: a loopback IP literal and a port
	// ("127.0.0.1:8931", "[::1]:0"). A name, even "localhost", is refused:
	// it is resolved by something other than the proxy.
	Addr string
	// Token is the bearer token every request must present, at least
	// MinTokenBytes long. NewToken makes one.
	Token string
	// MaxBodyBytes bounds a request body (413 past it); zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSessions bounds the sessions open at once; zero means
	// DefaultMaxSessions. At the bound a new session closes the one
	// least recently used with no POST in flight, and is refused (503)
	// only when every one has a POST in flight.
	MaxSessions int
	// SessionIdle closes a session idle this long; zero means
	// DefaultSessionIdle.
	SessionIdle time.Duration
}

// DefaultConfig is a Config on addr with a new token and the
// default bounds; an addr that is not a loopback IP and port is refused
// with a *agentrt.ConfigError.
func DefaultConfig(addr string) (Config, error) {
	tok, err := NewToken()
	if err != nil {
		return Config{}, err
	}
	c := Config{Addr: addr, Token: tok, MaxBodyBytes: DefaultMaxBodyBytes,
		MaxSessions: DefaultMaxSessions, SessionIdle: DefaultSessionIdle}
	if _, err := c.validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// NewToken is 32 random bytes in hex.
func NewToken() (string, error) { return token.Hex(32), nil }

// maxTokenFile bounds a token file: a token is one word.
const maxTokenFile = 4 << 10

// ReadToken reads a bearer token from a file only its owner can read
// or write: the rule for every trusted file, and the one for secrets, no
// bit for group or others at all, since a token others can read is
// everyone's (files.ReadSecret). Surrounding space is dropped.
func ReadToken(path string) (string, error) {
	b, err := files.ReadSecret(path, maxTokenFile)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < MinTokenBytes {
		return "", bad("token_file", "holds %d bytes; a token must be at least %d", len(tok), MinTokenBytes)
	}
	if strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", bad("token_file", "holds a space, a control character or a non-ASCII byte; a token is one printable word")
	}
	return tok, nil
}

// validate fills in defaults and checks every field.
func (c *Config) validate() (netip.AddrPort, error) {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.MaxSessions = cmp.Or(c.MaxSessions, DefaultMaxSessions)
	c.SessionIdle = cmp.Or(c.SessionIdle, DefaultSessionIdle)
	ap, err := netip.ParseAddrPort(c.Addr)
	if err != nil {
		return ap, bad("listen", "must be a loopback IP and a port such as 127.0.0.1:8931, got %q", c.Addr)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return ap, bad("listen", "%s is not a loopback address; the front listens on loopback only", ap.Addr())
	}
	if len(c.Token) < MinTokenBytes {
		return ap, bad("token", "must be at least %d bytes", MinTokenBytes)
	}
	if c.MaxBodyBytes < 1024 {
		return ap, bad("max_body_bytes", "must be at least 1024, got %d", c.MaxBodyBytes)
	}
	if c.MaxSessions < 1 {
		return ap, bad("max_sessions", "must be at least 1, got %d", c.MaxSessions)
	}
	if c.SessionIdle < time.Second {
		return ap, bad("session_idle", "must be at least 1s, got %s", c.SessionIdle)
	}
	return ap, nil
}

// Front is the proxy's loopback streamable-HTTP front: the same tools
// under the same gate as stdio, for a host that speaks only HTTP. Its
// sessions are its own server's, so their number is the front's alone.
type Front struct {
	cfg Config
	// drained waits for the calls in flight to record their outcome.
	drained func()
	server  *sdk.Server
	mcp     *sdk.StreamableHTTPHandler
	// stateless serves MCP 2026-07-28 requests, each on its own: no
	// session, so none counts against MaxSessions.
	stateless *sdk.StreamableHTTPHandler

	mu      sync.Mutex
	opening int // new-session requests in flight
	use     map[string]*sessionUse
	ln      net.Listener
	port    int
}

// sessionUse is what the front knows of a session's use: when a request
// of it last began or ended, and how many of its POSTs are in flight.
type sessionUse struct {
	last  time.Time
	posts int
}

// The front's connection caps: every client is on loopback, most from
// 127.0.0.1, so the per-source cap is most of the total.
const (
	maxConns          = 128
	MaxConnsPerSource = 96
)

// The codes of the front's own refusals, in {error, code} JSON bodies.
const (
	CodeUnauthorized    = "unauthorized"
	CodeForeignOrigin   = "foreign_origin"
	CodeForeignHost     = "foreign_host"
	CodeBodyTooLarge    = "body_too_large"
	CodeTooManySessions = "too_many_sessions"
	CodeNotFound        = "not_found"
)

// New validates cfg and builds the front's handler on servers newServer
// makes (one for the sessions, one for stateless requests); Serve, as it
// ends, calls drained to wait for calls in flight. Nothing listens until
// Listen.
func New(cfg Config, newServer func() *sdk.Server, drained func()) (*Front, error) {
	ap, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	f := &Front{cfg: cfg, drained: drained, server: newServer(), port: int(ap.Port()), use: map[string]*sessionUse{}}
	f.mcp = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.server },
		&sdk.StreamableHTTPOptions{SessionTimeout: cfg.SessionIdle, MaxRequestBodyBytes: cfg.MaxBodyBytes})
	perRequest := newServer()
	f.stateless = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return perRequest },
		&sdk.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: cfg.MaxBodyBytes})
	return f, nil
}

// Listen opens the one listener, on the configured loopback address. With
// port 0 the kernel chooses; Addr says which.
func (f *Front) Listen() error {
	ln, err := net.Listen("tcp", f.cfg.Addr)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.ln = ln
	f.port = ln.Addr().(*net.TCPAddr).Port
	f.mu.Unlock()
	return nil
}

// Addr is the address listened on, after Listen.
func (f *Front) Addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return f.cfg.Addr
	}
	return f.ln.Addr().String()
}

// URL is the endpoint a host is given.
func (f *Front) URL() string { return "http://" + f.Addr() + Path }

// Serve answers on the listener until ctx ends, then closes every session
// and waits for calls in flight to record their outcome.
func (f *Front) Serve(ctx context.Context) error {
	f.mu.Lock()
	ln := f.ln
	f.mu.Unlock()
	if ln == nil {
		return errors.New("proxy: front: Serve before Listen")
	}
	done := make(chan error, 1)
	hs := newHTTPServer(f)
	go func() {
		done <- hs.Serve(httpguard.Limit(ln, httpguard.Limits{Max: maxConns, PerSource: MaxConnsPerSource}))
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ss := range f.server.Sessions() {
		ss.Close()
	}
	_ = hs.Shutdown(sctx)
	<-done
	f.drained()
	return nil
}

// newHTTPServer is the front's http.Server: headers within 5 seconds, 30
// seconds idle between requests, a request's body within a minute. A
// refused request's connection is closed without reading its body.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpguard.HeaderTimeout, ReadTimeout: time.Minute,
		IdleTimeout: httpguard.IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// ServeHTTP checks, in order, the path, the Host and the Origin (against
// DNS rebinding: a request naming another host, or a browser's request
// from a page not on this front's own loopback origin, is 403), the
// bearer token (401), the body's declared length (413), and for a request
// that would open a session, the number open: when they are at
// MaxSessions, the session least recently used with no POST in flight is
// closed to make room, and only when every one has a POST in flight is
// the new one refused (503). A request of MCP 2026-07-28 (its
// MCP-Protocol-Version header, or its _meta) skips the session bound and
// is served statelessly. The SDK's handler then bounds the body as it
// is read (413). Every refusal closes its connection without reading the
// body.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		refuse(w, http.StatusNotFound, CodeNotFound, "the endpoint is "+Path)
		return
	}
	if !f.ownHost(r.Host) {
		refuse(w, http.StatusForbidden, CodeForeignHost, "the Host is not this server's")
		return
	}
	if o := r.Header.Values("Origin"); len(o) > 0 && (len(o) > 1 || !f.ownOrigin(o[0])) {
		refuse(w, http.StatusForbidden, CodeForeignOrigin, "the Origin is not this server's")
		return
	}
	if !f.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentrt-proxy"`)
		refuse(w, http.StatusUnauthorized, CodeUnauthorized, "a valid bearer token is required")
		return
	}
	if r.ContentLength > f.cfg.MaxBodyBytes {
		refuse(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("a body may hold at most %d bytes", f.cfg.MaxBodyBytes))
		return
	}
	if fresh, err := mcp2026.Stateless(r, f.cfg.MaxBodyBytes); errors.Is(err, mcp2026.ErrBodyTooLarge) {
		refuse(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("a body may hold at most %d bytes", f.cfg.MaxBodyBytes))
		return
	} else if err != nil {
		return // the client went away mid-body
	} else if fresh {
		// MCP 2026-07-28: stateless, chosen per request.
		f.stateless.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		if !f.reserve() {
			w.Header().Set("Retry-After", "60")
			refuse(w, http.StatusServiceUnavailable, CodeTooManySessions, fmt.Sprintf("%d sessions are open, the most allowed; end one first", f.cfg.MaxSessions))
			return
		}
		rw := &opening{ResponseWriter: w, f: f}
		defer rw.done()
		w = rw
	} else if id := r.Header.Get("Mcp-Session-Id"); id != "" && r.Method == http.MethodPost {
		f.begin(id)
		defer f.end(id)
	}
	f.mcp.ServeHTTP(w, r)
}

// opening is a new-session request's response. Its reservation ends when
// its headers are written, by which time a session it opened is among the
// server's, or when the request ends.
type opening struct {
	http.ResponseWriter
	f    *Front
	once sync.Once
}

func (o *opening) done() { o.once.Do(o.f.release) }

func (o *opening) WriteHeader(code int) {
	o.opened()
	o.ResponseWriter.WriteHeader(code)
}

func (o *opening) Write(b []byte) (int, error) {
	o.opened()
	return o.ResponseWriter.Write(b)
}

// opened records the new session's first use, then ends the reservation.
func (o *opening) opened() {
	o.once.Do(func() {
		if id := o.Header().Get("Mcp-Session-Id"); id != "" {
			o.f.begin(id)
			o.f.end(id)
		}
		o.f.release()
	})
}

func (o *opening) Flush() {
	if fl, ok := o.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

func (o *opening) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// reserve counts a request that may open a session, when the sessions
// open and opening leave room, or when one of them can be closed to make
// it: the session least recently used with no POST in flight, so a client
// that opened every session it may cannot lock a new client out. A
// session counts twice between its creation and its first response
// header, which errs toward refusing. Sessions that never initialized are
// not counted: the request that made one closes it as it ends, and until
// then it counts as opening.
func (f *Front) reserve() bool {
	f.mu.Lock()
	n := f.opening
	var victim *sdk.ServerSession
	var oldest time.Time
	live := map[string]bool{}
	for ss := range f.server.Sessions() {
		// One never initialized (a server/discover probe, a refused
		// initialize) is closed by the request that made it.
		if ss.InitializeParams() == nil {
			continue
		}
		n++
		live[ss.ID()] = true
		u := f.use[ss.ID()]
		if u != nil && u.posts > 0 {
			continue
		}
		var last time.Time
		if u != nil {
			last = u.last
		}
		if victim == nil || last.Before(oldest) {
			victim, oldest = ss, last
		}
	}
	for id := range f.use {
		if !live[id] {
			delete(f.use, id)
		}
	}
	if n >= f.cfg.MaxSessions && victim == nil {
		f.mu.Unlock()
		return false
	}
	if n < f.cfg.MaxSessions {
		victim = nil
	} else {
		delete(f.use, victim.ID())
	}
	f.opening++
	f.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	return true
}

// begin and end bracket a request of a session.
func (f *Front) begin(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.use[id]
	if u == nil {
		u = &sessionUse{}
		f.use[id] = u
	}
	u.posts++
	u.last = time.Now()
}

func (f *Front) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.use[id]; u != nil {
		u.posts--
		u.last = time.Now()
	}
}

func (f *Front) release() {
	f.mu.Lock()
	f.opening--
	f.mu.Unlock()
}

// authorized compares the bearer token in constant time.
func (f *Front) authorized(r *http.Request) bool {
	h := r.Header.Values("Authorization")
	if len(h) != 1 {
		return false
	}
	scheme, tok, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(f.cfg.Token)) == 1
}

// ownHost says whether a Host header names this front: a loopback host
// (an IP literal or localhost) and the port listened on.
func (f *Front) ownHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	return f.loopbackOwn(host, port)
}

func (f *Front) loopbackOwn(host, port string) bool {
	f.mu.Lock()
	want := strconv.Itoa(f.port)
	f.mu.Unlock()
	if port != want {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// ownOrigin says whether an Origin is this front's: http, a loopback host
// (an IP literal or localhost), and the port listened on.
func (f *Front) ownOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	return f.loopbackOwn(u.Hostname(), u.Port())
}

func bad(field, format string, args ...any) error {
	return &agentrt.ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Server is the server the front's sessions are served by.
func (f *Front) Server() *sdk.Server { return f.server }

// Token is the bearer token the front requires.
func (f *Front) Token() string { return f.cfg.Token }

// Busy counts the sessions with a POST in flight.
func (f *Front) Busy() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, u := range f.use {
		if u.posts > 0 {
			n++
		}
	}
	return n
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	httpguard.Refusing(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}
