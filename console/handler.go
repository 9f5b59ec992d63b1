package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/httpguard"
	"github.com/agentrt/agentrt/internal/token"
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
	CodeOutOfScope   = "out_of_scope"
	CodeVoteRefused  = "vote_refused"
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
	sessions   map[string]*session // by the SHA-256 of the cookie
	ceremonies ceremonies
	limits     limiter
	streams    int // open /events streams, all sessions
	hub        hub
}

type session struct {
	key        string // the SHA-256 of the cookie
	approverID string
	name       string
	csrf       string
	created    time.Time
	lastSeen   time.Time
	streams    int // open /events streams
}

// ceremony is a WebAuthn ceremony begun and not finished.
type ceremony struct {
	id        string
	kind      string // "enroll", "login", "decide"
	data      webauthn.SessionData
	expires   time.Time
	token     string // enroll: the invitation
	session   string // decide: the session it belongs to
	statement agentrt.Statement
	handle    []byte // enroll: the user handle
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
		sessions: map[string]*session{}}
	h.ceremonies.init(maxCeremonies)
	h.limits.init(maxLimited)
	h.hub.h = h
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

// randomToken is a session, CSRF or ceremony token: 256 random bits.
func randomToken() string { return token.URL(32) }

func hashToken(t string) string {
	s := sha256.Sum256([]byte(t))
	return hex.EncodeToString(s[:])
}

// live reports whether a session is within its idle timeout and its
// absolute lifetime at now. The caller holds h.mu.
func (h *Handler) live(s *session, now time.Time) bool {
	return now.Sub(s.lastSeen) < h.cfg.IdleTimeout && now.Sub(s.created) < h.cfg.SessionLifetime
}

// sessionOf returns the request's live session, touching it. A session
// ends when it has been idle for IdleTimeout, when it is SessionLifetime
// old however busy it is, and when its approver is no longer enrolled:
// every request reads the approver through the store, so a removal made
// anywhere (the CLI, another console process) ends it at the next request.
func (h *Handler) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	key := hashToken(c.Value)
	now := h.now()
	h.mu.Lock()
	s := h.sessions[key]
	if s == nil {
		h.mu.Unlock()
		return nil
	}
	if !h.live(s, now) {
		delete(h.sessions, key)
		h.mu.Unlock()
		return nil
	}
	id := s.approverID
	h.mu.Unlock()
	if !h.enrolled(r.Context(), id) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s = h.sessions[key]; s == nil {
		return nil
	}
	s.lastSeen = now
	cp := *s
	return &cp
}

// enrolled reads the approver through the store. One removed (or gone)
// ends every session it has in this process; a store that cannot be read
// refuses the request and ends nothing.
func (h *Handler) enrolled(ctx context.Context, approverID string) bool {
	ap, err := h.cfg.Store.GetApprover(ctx, approverID)
	switch {
	case errors.Is(err, agentrt.ErrNotFound), err == nil && (ap.Removed() || ap.DecodeError != ""):
		h.endApprover(approverID)
		return false
	case err != nil:
		return false
	}
	return true
}

// endApprover ends every session of an approver; their streams see it at
// their next tick.
func (h *Handler) endApprover(approverID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, s := range h.sessions {
		if s.approverID == approverID {
			delete(h.sessions, k)
		}
	}
}

func (h *Handler) newSession(w http.ResponseWriter, ap agentrt.EnrolledApprover) {
	tok := randomToken()
	now := h.now()
	key := hashToken(tok)
	h.mu.Lock()
	h.sessions[key] = &session{key: key, approverID: ap.ID, name: ap.Name, csrf: randomToken(), created: now, lastSeen: now}
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: tok, Path: "/", HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(h.cfg.SessionLifetime.Seconds())})
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
		s := h.sessionOf(r)
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
func (h *Handler) post(needSession bool, fn func(w http.ResponseWriter, r *http.Request, s *session)) http.HandlerFunc {
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
		s := h.sessionOf(r)
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
		fn(w, r, s)
	}
}

// limited rate-limits the sign-in and enrollment endpoints per client
// source (an IPv4 address, an IPv6 /64), in fixed one-minute windows.
func (h *Handler) limited(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := h.now()
		h.mu.Lock()
		over := h.limits.count(httpguard.SourceKey(r.RemoteAddr), now, h.cfg.AuthRate) > h.cfg.AuthRate
		h.mu.Unlock()
		if over {
			w.Header().Set("Retry-After", "60")
			httpguard.Refusing(w)
			apiError(w, http.StatusTooManyRequests, CodeRateLimited, "too many sign-in attempts; wait a minute")
			return
		}
		fn(w, r)
	}
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, s *session) {
	h.mu.Lock()
	delete(h.sessions, s.key)
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// apiError writes {error, code}.
// Every refusal is the last response on its connection, so a body nobody
// reads is not waited for.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	httpguard.Refusing(w)
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
	case errors.Is(err, agentrt.ErrOutOfScope):
		return http.StatusForbidden, CodeOutOfScope
	case errors.Is(err, agentrt.ErrAlreadyVoted), errors.Is(err, agentrt.ErrStageClosed):
		return http.StatusConflict, CodeVoteRefused
	case errors.Is(err, agentrt.ErrNotFound):
		return http.StatusNotFound, CodeNotFound
	}
	return http.StatusInternalServerError, CodeInternal
}

// logf writes a detail the client is not told to the server's log, every
// value quoted so a client's text cannot forge a line.
func (h *Handler) logf(format string, err error) {
	l := h.cfg.ErrorLog
	if l == nil {
		l = log.Default()
	}
	l.Printf("agentrt-console: "+format, strconv.Quote(err.Error()))
}

// internal answers 500 with one generic sentence and logs why.
func (h *Handler) internal(w http.ResponseWriter, what string, err error) {
	h.logf(what+" failed: %s", err)
	apiError(w, http.StatusInternalServerError, CodeInternal, "the console failed; try again")
}

func isIP(host string) bool { return net.ParseIP(strings.Trim(host, "[]")) != nil }
