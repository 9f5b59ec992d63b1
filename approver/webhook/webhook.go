package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/sign"
	"github.com/agentrt/agentrt/internal/canon"
	"github.com/agentrt/agentrt/internal/httpguard"
)

// Defaults and bounds of Config.
const (
	DefaultSkew    = 5 * time.Minute
	MaxSkew        = 15 * time.Minute
	DefaultRate    = 10.0
	MaxRate        = 1000.0
	DefaultBurst   = 20
	MaxBurst       = 1000
	DefaultMaxBody = 16 << 10
	MaxMaxBody     = 1 << 20
	DefaultLimit   = 20
	// MinSecret is the shortest Config.Secret New accepts, in bytes.
	MinSecret = sign.MinSecret
	// MaxBy and MaxNote bound a decision's free text, in bytes.
	MaxBy   = 256
	MaxNote = 4096
)

// Event types the Handler reports to Config.Observer. They are not in the
// event chain (Seq 0): the decisions themselves are, through the Approver.
const (
	EventDecision agentrt.EventType = "webhook.decision"
	EventRefused  agentrt.EventType = "webhook.refused"
)

// Config configures a Handler.
type Config struct {
	// Approver decides. Required.
	Approver approver.Approver
	// Secret signs every request; at least MinSecret bytes, from
	// configuration (a file, the environment), never a URL. Required.
	Secret []byte
	// Skew is how far a request's timestamp may be from the handler's
	// clock either way. Zero is DefaultSkew; at most MaxSkew.
	Skew time.Duration
	// Rate is how many authenticated requests a second the handler accepts
	// on average, and Burst how many at once; a request is charged only
	// once its signature is verified and new, so requests that fail
	// authentication (limited apart, per source and in total) never spend
	// them. Zero is DefaultRate and DefaultBurst; at most MaxRate, MaxBurst.
	Rate  float64
	Burst int
	// MaxBody is the largest body read, in bytes. Zero is DefaultMaxBody;
	// at most MaxMaxBody.
	MaxBody int64
	// Limit is how many pending approvals a list returns. Zero is
	// DefaultLimit; at most approver.MaxPending.
	Limit int
	// Now is the handler's clock, for the skew, the rate and the replay
	// window; nil is time.Now. The Approver judges expiry on its own clock.
	Now func() time.Time
	// Observer, when set, hears an EventDecision for each decision made
	// and an EventRefused for each request refused.
	Observer agentrt.Observer
}

// DefaultConfig is the configuration New would fill in for a and secret.
func DefaultConfig(a approver.Approver, secret []byte) Config {
	return Config{Approver: a, Secret: secret, Skew: DefaultSkew, Rate: DefaultRate, Burst: DefaultBurst,
		MaxBody: DefaultMaxBody, Limit: DefaultLimit}
}

func bad(field, reason string) error {
	return &agentrt.ConfigError{Field: "webhook.Config." + field, Reason: reason}
}

// defaults sets each zero field that has a default to it.
func (c *Config) defaults() {
	c.Skew = cmp.Or(c.Skew, DefaultSkew)
	c.Rate = cmp.Or(c.Rate, DefaultRate)
	c.Burst = cmp.Or(c.Burst, DefaultBurst)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.Limit = cmp.Or(c.Limit, DefaultLimit)
}

// validate fills in the defaults and names the first field out of bounds.
func (c *Config) validate() error {
	c.defaults()
	if c.Approver == nil {
		return bad("Approver", "is required")
	}
	if len(c.Secret) < MinSecret {
		return bad("Secret", fmt.Sprintf("must be at least %d bytes, got %d", MinSecret, len(c.Secret)))
	}
	if c.Skew < time.Second || c.Skew > MaxSkew {
		return bad("Skew", fmt.Sprintf("must be from 1s to %s, got %s", MaxSkew, c.Skew))
	}
	if !(c.Rate > 0 && c.Rate <= MaxRate) || math.IsNaN(c.Rate) {
		return bad("Rate", fmt.Sprintf("must be above 0 and at most %g, got %g", MaxRate, c.Rate))
	}
	if c.Burst < 1 || c.Burst > MaxBurst {
		return bad("Burst", fmt.Sprintf("must be from 1 to %d, got %d", MaxBurst, c.Burst))
	}
	if c.MaxBody < 1 || c.MaxBody > MaxMaxBody {
		return bad("MaxBody", fmt.Sprintf("must be from 1 to %d, got %d", MaxMaxBody, c.MaxBody))
	}
	if c.Limit < 1 || c.Limit > approver.MaxPending {
		return bad("Limit", fmt.Sprintf("must be from 1 to %d, got %d", approver.MaxPending, c.Limit))
	}
	return nil
}

// Handler is the approval webhook. It keeps no global state: its rate and
// its replay window are its own.
type Handler struct {
	cfg    Config
	secret []byte
	bucket bucket
	failed failedLimiter
	replay *sign.Replay
}

// New validates cfg and returns its Handler.
func New(cfg Config) (*Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, secret: bytes.Clone(cfg.Secret)}
	h.bucket = bucket{rate: cfg.Rate, burst: float64(cfg.Burst), tokens: float64(cfg.Burst)}
	h.failed.init()
	// Under the rate no more than this many signatures can be accepted in
	// the 2×Skew a signature is remembered; the cap is a backstop.
	h.replay = sign.NewReplay(ReplayCap(cfg), cfg.Skew)
	return h, nil
}

// ReplayCap is how many signatures a Handler built from cfg remembers at
// most: the burst and the rate over the 2×Skew each is remembered, plus
// one. cfg's zero fields count as their defaults.
func ReplayCap(cfg Config) int {
	c := cfg
	c.defaults()
	return c.Burst + int(math.Ceil(c.Rate*2*c.Skew.Seconds())) + 1
}

// NewServer returns an http.Server for h on addr with bounded headers and
// timeouts, so a slow or idle client cannot hold a connection: headers
// within 5 seconds, a request within 10, 30 seconds idle. Serve it on
// Listen's listener, which caps connections.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: httpguard.HeaderTimeout, ReadTimeout: 10 * time.Second,
		WriteTimeout: 15 * time.Second, IdleTimeout: httpguard.IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// The connection caps of Listen and LimitListener: at most MaxConnections
// open at once, MaxConnectionsPerSource of them from one source (an IPv4
// address, an IPv6 /64). One past either is closed as it is accepted.
const (
	MaxConnections          = 256
	MaxConnectionsPerSource = 32
)

// Listen listens on addr with the connection caps.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return LimitListener(ln), nil
}

// LimitListener caps ln's connections at MaxConnections and
// MaxConnectionsPerSource.
func LimitListener(ln net.Listener) net.Listener {
	return httpguard.Limit(ln, httpguard.Limits{Max: MaxConnections, PerSource: MaxConnectionsPerSource})
}

func (h *Handler) now() time.Time {
	if h.cfg.Now != nil {
		return h.cfg.Now()
	}
	return time.Now()
}

// bucket is a token bucket on the handler's clock.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		if d := now.Sub(b.last).Seconds(); d > 0 {
			b.tokens = math.Min(b.burst, b.tokens+d*b.rate)
		}
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// bodyTimeout bounds reading an admitted request's body, whatever the
// server's read timeout.
const bodyTimeout = 5 * time.Second

// ServeHTTP checks what it can without the body first: the signature
// headers (present, fresh, well formed) and the declared length; a
// request that fails is refused at once, its body unread, and the
// connection closed. It then reads the body (within bodyTimeout), verifies
// the signature and its freshness, remembers it against replay, and only
// then charges the rate. So a flood of unsigned or wrongly signed requests
// never spends the allowance of correctly signed ones: requests that fail
// authentication are limited on their own, per source and in total.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	now := h.now()
	if err := sign.Precheck(r.Header, now, h.cfg.Skew); err != nil {
		h.unauthenticated(w, r, now, err)
		return
	}
	if r.ContentLength > h.cfg.MaxBody {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body is over %d bytes", h.cfg.MaxBody), nil)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxBody+1))
	if err != nil {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the body could not be read", err)
		return
	}
	if int64(len(body)) > h.cfg.MaxBody {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body is over %d bytes", h.cfg.MaxBody), nil)
		return
	}
	key, err := sign.Verify(h.secret, r.Header, r.Method, sign.Path(r), body, now, h.cfg.Skew)
	if err != nil {
		h.unauthenticated(w, r, now, err)
		return
	}
	if err := h.replay.Check(key, now); err != nil {
		if errors.Is(err, sign.ErrFull) {
			w.Header().Set("Retry-After", "1")
			h.refuse(w, r, http.StatusTooManyRequests, CodeRateLimited, err.Error(), nil)
			return
		}
		h.unauthenticated(w, r, now, err)
		return
	}
	if !h.bucket.take(now) {
		w.Header().Set("Retry-After", "1")
		h.refuse(w, r, http.StatusTooManyRequests, CodeRateLimited, "too many requests", nil)
		return
	}
	h.route(w, r, body)
}

// unauthenticated refuses a request that failed authentication. Within
// the per-source and total allowances for such refusals it is a 401 the
// Observer hears; past them a 429 the Observer does not hear each of, so
// a flood cannot flood the Observer either. Either way the body is left
// unread and the connection closed.
func (h *Handler) unauthenticated(w http.ResponseWriter, r *http.Request, now time.Time, err error) {
	if !h.failed.take(httpguard.SourceKey(r.RemoteAddr), now) {
		w.Header().Set("Retry-After", "1")
		httpguard.Refusing(w)
		writeJSON(w, http.StatusTooManyRequests, Error{Error: "too many requests that fail authentication", Code: CodeRateLimited})
		return
	}
	h.refuse(w, r, http.StatusUnauthorized, CodeUnauthorized, err.Error(), nil)
}

// route dispatches a verified request on its path.
func (h *Handler) route(w http.ResponseWriter, r *http.Request, body []byte) {
	seg := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	for _, s := range seg {
		if s == "" {
			h.notFound(w, r)
			return
		}
	}
	ctx := r.Context()
	switch {
	case len(seg) == 3 && seg[0] == "runs" && seg[2] == "approvals" && r.Method == http.MethodGet:
		h.list(ctx, w, r, seg[1])
	case len(seg) == 4 && seg[0] == "runs" && seg[2] == "approvals" && r.Method == http.MethodGet:
		h.show(ctx, w, r, seg[1], seg[3])
	case len(seg) == 5 && seg[0] == "runs" && seg[2] == "approvals" && r.Method == http.MethodPost &&
		(seg[4] == "approve" || seg[4] == "reject"):
		h.decide(ctx, w, r, seg[1], seg[3], seg[4] == "approve", body)
	case len(seg) == 3 && seg[0] == "runs" && seg[2] == "cancel" && r.Method == http.MethodPost:
		h.cancel(ctx, w, r, seg[1], body)
	default:
		h.notFound(w, r)
	}
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.refuse(w, r, http.StatusNotFound, CodeNotFound, "not found", nil)
}

// List is the body of a pending list.
type List struct {
	RunID     string              `json:"run_id"`
	Approvals []approver.Approval `json:"approvals"`
	Total     int                 `json:"total"`
}

func (h *Handler) list(ctx context.Context, w http.ResponseWriter, r *http.Request, runID string) {
	items, total, err := h.cfg.Approver.Pending(ctx, runID, h.cfg.Limit)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	if items == nil {
		items = []approver.Approval{}
	}
	writeJSON(w, http.StatusOK, List{RunID: runID, Approvals: items, Total: total})
}

func wantsText(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "text"
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/plain") {
			return true
		}
	}
	return false
}

func (h *Handler) show(ctx context.Context, w http.ResponseWriter, r *http.Request, runID, id string) {
	a, err := h.cfg.Approver.Show(ctx, runID, id)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	if a.Expired {
		// Showing writes nothing: the runtime records the expiry when it
		// next resumes the run or when someone decides.
		h.refuse(w, r, http.StatusGone, CodeExpired, "the approval has expired", nil)
		return
	}
	if wantsText(r) {
		var buf bytes.Buffer
		writeText(&buf, a)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.Write(buf.Bytes())
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// Result is the body of a decision or a cancel that succeeded.
type Result struct {
	RunID      string `json:"run_id"`
	ApprovalID string `json:"approval_id,omitempty"`
	Status     string `json:"status"`
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown
// fields and trailing data.
func decodeStrict(body []byte, v any) error { return canon.DecodeStrict(body, v) }

func checkText(by, note string) string {
	switch {
	case by == "":
		return "by is required"
	case len(by) > MaxBy || !utf8.ValidString(by):
		return fmt.Sprintf("by must be at most %d bytes of UTF-8", MaxBy)
	case len(note) > MaxNote || !utf8.ValidString(note):
		return fmt.Sprintf("note must be at most %d bytes of UTF-8", MaxNote)
	}
	return ""
}

func (h *Handler) decide(ctx context.Context, w http.ResponseWriter, r *http.Request, runID, id string, approve bool, body []byte) {
	var d approver.Answer
	if err := decodeStrict(body, &d); err != nil {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the body is not a decision", err)
		return
	}
	if d.RunID != runID || d.ApprovalID != id {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the decision's run_id and approval_id must be the path's", nil)
		return
	}
	if d.Hash == "" {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the decision must name the hash it was shown", nil)
		return
	}
	if msg := checkText(d.By, d.Note); msg != "" {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, msg, nil)
		return
	}
	decide, status, code, action := h.cfg.Approver.Reject, agentrt.ApprovalRejected, http.StatusOK, "reject"
	if approve {
		decide, status, code, action = h.cfg.Approver.Approve, agentrt.ApprovalApproved, http.StatusAccepted, "approve"
	}
	if err := decide(ctx, d); err != nil {
		h.fail(w, r, err, false)
		return
	}
	h.observe(EventDecision, runID, map[string]string{"action": action, "approval_id": id, "by": d.By, "status": string(status)})
	writeJSON(w, code, Result{RunID: runID, ApprovalID: id, Status: string(status)})
}

// CancelRequest is the body of a cancel.
type CancelRequest struct {
	RunID string `json:"run_id"`
	By    string `json:"by"`
	Note  string `json:"note,omitempty"`
}

func (h *Handler) cancel(ctx context.Context, w http.ResponseWriter, r *http.Request, runID string, body []byte) {
	var c CancelRequest
	if err := decodeStrict(body, &c); err != nil {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the body is not a cancel", err)
		return
	}
	if c.RunID != runID {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the cancel's run_id must be the path's", nil)
		return
	}
	if msg := checkText(c.By, c.Note); msg != "" {
		h.refuse(w, r, http.StatusBadRequest, CodeBadRequest, msg, nil)
		return
	}
	if err := h.cfg.Approver.Cancel(ctx, runID, c.By, c.Note); err != nil {
		h.fail(w, r, err, true)
		return
	}
	h.observe(EventDecision, runID, map[string]string{"action": "cancel", "by": c.By, "status": string(agentrt.RunCancelled)})
	writeJSON(w, http.StatusOK, Result{RunID: runID, Status: string(agentrt.RunCancelled)})
}

func (h *Handler) observe(typ agentrt.EventType, runID string, payload any) {
	if h.cfg.Observer == nil {
		return
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return
	}
	h.cfg.Observer(agentrt.Event{RunID: runID, At: h.now().UTC(), Type: typ, Payload: b})
}
