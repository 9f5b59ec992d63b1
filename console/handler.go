package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

//go:embed assets
var assets embed.FS

// The headers every response carries. The policy allows no inline script
// or style: the one script and the one stylesheet are files of this
// origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

const (
	sessionCookie = "agentrt_session"
	preCookie     = "agentrt_csrf"
	maxBody       = 64 << 10
)

// Error codes an API response names.
const (
	CodeBadRequest   = "bad_request"
	CodeForbidden    = "forbidden"
	CodeUnauthorized = "unauthorized"
	CodeRateLimited  = "rate_limited"
	CodeNotFound     = "not_found"
	CodeChanged      = "approval_changed"
	CodeNotPending   = "not_pending"
	CodeSignature    = "signature_refused"
	CodeInvite       = "invite_invalid"
	CodeInternal     = "internal"
)

// Handler serves the console. Build it with New.
type Handler struct {
	cfg    Config
	rpID   string
	secure bool
	wa     *webauthn.WebAuthn
	tmpl   *template.Template
	mux    *http.ServeMux
	op     agentrt.Operator

	mu         sync.Mutex
	sessions   map[string]*session   // by the SHA-256 of the cookie
	ceremonies map[string]*ceremony  // by id
	limits     map[string]*rateState // by client address
}

type session struct {
	approverID string
	name       string
	csrf       string
	lastSeen   time.Time
}

// ceremony is a WebAuthn ceremony begun and not finished.
type ceremony struct {
	kind      string // "enroll", "login", "decide"
	data      webauthn.SessionData
	expires   time.Time
	token     string // enroll: the invitation
	session   string // decide: the session it belongs to
	statement agentrt.Statement
	handle    []byte // enroll: the user handle
}

type rateState struct {
	window time.Time
	n      int
}

// New validates cfg and builds a Handler.
func New(cfg Config) (*Handler, error) {
	u, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID: u.Hostname(), RPDisplayName: "agentrt", RPOrigins: []string{cfg.Origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, UserVerification: protocol.VerificationRequired},
		AttestationPreference: protocol.PreferNoAttestation,
	})
	if err != nil {
		return nil, &agentrt.ConfigError{Field: "console.Config.Origin", Reason: err.Error()}
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, rpID: u.Hostname(), secure: u.Scheme == "https", wa: wa, tmpl: tmpl,
		op:       agentrt.Operator{Store: cfg.Store, Observer: cfg.Observer, Now: cfg.Now},
		sessions: map[string]*session{}, ceremonies: map[string]*ceremony{}, limits: map[string]*rateState{}}
	h.routes()
	return h, nil
}

func (h *Handler) now() time.Time {
	if h.cfg.Now != nil {
		return h.cfg.Now().UTC()
	}
	return time.Now().UTC()
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /login", h.pageLogin)
	m.HandleFunc("GET /enroll", h.pageEnroll)
	m.HandleFunc("GET /{$}", h.authed(h.pageInbox))
	m.HandleFunc("GET /runs", h.authed(h.pageRuns))
	m.HandleFunc("GET /runs/{run}", h.authed(h.pageRun))
	m.HandleFunc("GET /runs/{run}/approvals/{approval}", h.authed(h.pageApproval))
	m.HandleFunc("GET /chain", h.authed(h.pageChain))
	m.HandleFunc("GET /budgets", h.authed(h.pageBudgets))
	m.HandleFunc("GET /events", h.authed(h.streamEvents))
	m.HandleFunc("POST /runs/{run}/cancel", h.post(true, h.cancelRun))
	m.HandleFunc("POST /logout", h.post(true, h.logout))
	m.HandleFunc("POST /api/enroll/begin", h.limited(h.post(false, h.enrollBegin)))
	m.HandleFunc("POST /api/enroll/finish", h.limited(h.post(false, h.enrollFinish)))
	m.HandleFunc("POST /api/login/begin", h.limited(h.post(false, h.loginBegin)))
	m.HandleFunc("POST /api/login/finish", h.limited(h.post(false, h.loginFinish)))
	m.HandleFunc("POST /api/decide/begin", h.post(true, h.decideBegin))
	m.HandleFunc("POST /api/decide/finish", h.post(true, h.decideFinish))
	h.mux = m
}

// ServeHTTP sets the security headers on every response and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if h.secure {
		hd.Set("Strict-Transport-Security", "max-age=31536000")
	}
	h.mux.ServeHTTP(w, r)
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashToken(t string) string {
	s := sha256.Sum256([]byte(t))
	return hex.EncodeToString(s[:])
}

// sessionOf returns the request's live session and its key, touching it.
func (h *Handler) sessionOf(r *http.Request) (*session, string) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, ""
	}
	key := hashToken(c.Value)
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		return nil, ""
	}
	if now.Sub(s.lastSeen) >= h.cfg.IdleTimeout {
		delete(h.sessions, key)
		return nil, ""
	}
	s.lastSeen = now
	cp := *s
	return &cp, key
}

func (h *Handler) newSession(w http.ResponseWriter, ap agentrt.Approver) {
	tok := randomToken()
	h.mu.Lock()
	h.sessions[hashToken(tok)] = &session{approverID: ap.ID, name: ap.Name, csrf: randomToken(), lastSeen: h.now()}
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: tok, Path: "/", HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(h.cfg.IdleTimeout.Seconds()) * 8})
}

// preToken is the CSRF token of a request with no session: a cookie of its
// own, echoed by the page (double submit).
func (h *Handler) preToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(preCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	t := randomToken()
	http.SetCookie(w, &http.Cookie{Name: preCookie, Value: t, Path: "/", HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteStrictMode})
	return t
}

// authed serves a page only to a signed-in approver; others go to /login.
func (h *Handler) authed(fn func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, _ := h.sessionOf(r)
		if s == nil {
			if r.URL.Path == "/events" {
				http.Error(w, "sign in", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		fn(w, r, s)
	}
}

// post checks what every state-changing request must carry: the console's
// Origin and the CSRF token (the session's when one is needed, else the
// pre-session cookie's), in the X-CSRF-Token header or the csrf form
// field. It bounds the body.
func (h *Handler) post(needSession bool, fn func(w http.ResponseWriter, r *http.Request, s *session, key string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if o := r.Header.Get("Origin"); o != h.cfg.Origin {
			apiError(w, http.StatusForbidden, CodeForbidden, "the request does not come from the console's origin")
			return
		}
		got := r.Header.Get("X-CSRF-Token")
		if got == "" {
			got = r.PostFormValue("csrf")
		}
		s, key := h.sessionOf(r)
		var want string
		switch {
		case s != nil:
			want = s.csrf
		case needSession:
			apiError(w, http.StatusUnauthorized, CodeUnauthorized, "sign in first")
			return
		default:
			if c, err := r.Cookie(preCookie); err == nil {
				want = c.Value
			}
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			apiError(w, http.StatusForbidden, CodeForbidden, "the CSRF token is missing or wrong")
			return
		}
		fn(w, r, s, key)
	}
}

// limited rate-limits the sign-in and enrollment endpoints per client
// address, in fixed one-minute windows.
func (h *Handler) limited(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		now := h.now()
		h.mu.Lock()
		st := h.limits[host]
		if st == nil || now.Sub(st.window) >= time.Minute {
			if len(h.limits) > 10000 {
				clear(h.limits)
			}
			st = &rateState{window: now}
			h.limits[host] = st
		}
		st.n++
		over := st.n > h.cfg.AuthRate
		h.mu.Unlock()
		if over {
			w.Header().Set("Retry-After", "60")
			apiError(w, http.StatusTooManyRequests, CodeRateLimited, "too many sign-in attempts; wait a minute")
			return
		}
		fn(w, r)
	}
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, s *session, key string) {
	h.mu.Lock()
	delete(h.sessions, key)
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// apiError writes {error, code}.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// decideStatus maps a refused decision to a status and code.
func decideStatus(err error) (int, string) {
	switch {
	case errors.Is(err, agentrt.ErrApprovalChanged), errors.Is(err, agentrt.ErrApprovalHash):
		return http.StatusConflict, CodeChanged
	case errors.Is(err, agentrt.ErrNotPending), errors.Is(err, agentrt.ErrRunState):
		return http.StatusConflict, CodeNotPending
	case errors.Is(err, agentrt.ErrSignature), errors.Is(err, agentrt.ErrUnsignedGrant):
		return http.StatusForbidden, CodeSignature
	case errors.Is(err, agentrt.ErrNotFound):
		return http.StatusNotFound, CodeNotFound
	}
	return http.StatusInternalServerError, CodeInternal
}

func isIP(host string) bool { return net.ParseIP(strings.Trim(host, "[]")) != nil }
