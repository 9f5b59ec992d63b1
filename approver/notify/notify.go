package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver/internal/sign"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/ctxsleep"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/trace"
)

// Defaults and bounds of Config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 8
	MaxMaxAttempts     = 100
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = time.Minute
	MaxMaxBackoff      = time.Hour
	DefaultQueueSize   = 256
	MaxQueueSize       = 10000
	MaxTargets         = 16
	// MinSecret is the shortest Target.Secret New accepts, in bytes.
	MinSecret = sign.MinSecret
)

// Target is one receiver of notifications.
type Target struct {
	// URL is where notifications are POSTed: https, or http only to
	// localhost or a loopback address. It may not carry a user or a
	// password; the secret goes in Secret.
	URL string
	// Secret signs what this target receives; at least MinSecret bytes,
	// and not the webhook's secret.
	Secret []byte
}

// Config configures a Notifier.
type Config struct {
	// Store is followed for approval events; open it read-only. Required.
	Store agentrt.StoreReader
	// Targets receive every notification; 1 to MaxTargets. Required.
	Targets []Target
	// Cursor holds the seq delivery has reached; use export.FileCursor so
	// a restart resumes. Required.
	Cursor export.Cursor
	// IncludeArguments sends the tool call's arguments, bounded. Off by
	// default: arguments are what a model chose, and may hold what a
	// receiver should not keep.
	IncludeArguments bool
	// Client sends the POSTs; nil is one per target whose plain-http
	// connections must be loopback. Its redirect policy is always replaced
	// by one that follows none.
	Client *http.Client
	// Timeout bounds one attempt. Zero is DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts is how many times one notification is tried. Zero is
	// DefaultMaxAttempts; at most MaxMaxAttempts.
	MaxAttempts int
	// Backoff is the wait after the first failed attempt, doubled after
	// each, up to MaxBackoff. Zero is DefaultBackoff and DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// QueueSize is how many events may wait for delivery. Zero is
	// DefaultQueueSize; at most MaxQueueSize.
	QueueSize int
	// Interval is how often the log is read once caught up. Zero is the
	// follower's default.
	Interval time.Duration
	// Stderr gets one line per notification given up on. Nil is os.Stderr.
	Stderr io.Writer
	// Now is the clock notifications are signed at; nil is time.Now.
	Now func() time.Time
	// Sleep waits between attempts and returns early with ctx's error;
	// nil waits on a timer. For tests.
	Sleep func(ctx context.Context, d time.Duration) error
	// Idle, when set, is called with the cursor's seq each time every
	// event committed so far has been delivered or given up on.
	Idle func(seq int64)

	// lookup resolves a plain-http target's host; nil is the system
	// resolver. Set by tests.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

func bad(field, reason string) error {
	return &agentrt.ConfigError{Field: "notify.Config." + field, Reason: reason}
}

// CheckURL refuses a target URL a notifier will not send to: anything but
// https, and http to a host that is not localhost or a loopback address.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("is not a URL: %v", err)
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, errors.New("needs a host")
	}
	if u.User != nil {
		return nil, errors.New("may not carry a user or password; put the secret in Secret")
	}
	if u.Fragment != "" {
		return nil, errors.New("may not carry a fragment")
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if !loopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("is plain http to %s, which is not loopback; use https", u.Hostname())
		}
		return u, nil
	}
	return nil, fmt.Errorf("has scheme %q; use https", u.Scheme)
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// Notifier delivers notifications. Run it once at a time per cursor.
type Notifier struct {
	cfg     Config
	targets []target
	stderr  io.Writer
}

type target struct {
	url    *url.URL
	path   string // what the signature covers
	secret []byte
	client *http.Client
}

// New validates cfg and returns its Notifier.
func New(cfg Config) (*Notifier, error) {
	if cfg.Store == nil {
		return nil, bad("Store", "is required")
	}
	if cfg.Cursor == nil {
		return nil, bad("Cursor", "is required")
	}
	if len(cfg.Targets) == 0 || len(cfg.Targets) > MaxTargets {
		return nil, bad("Targets", fmt.Sprintf("must hold 1 to %d targets, got %d", MaxTargets, len(cfg.Targets)))
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Timeout, DefaultTimeout)
	def(&cfg.Backoff, DefaultBackoff)
	def(&cfg.MaxBackoff, DefaultMaxBackoff)
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	switch {
	case cfg.Timeout < 0:
		return nil, bad("Timeout", "must not be negative")
	case cfg.MaxAttempts < 1 || cfg.MaxAttempts > MaxMaxAttempts:
		return nil, bad("MaxAttempts", fmt.Sprintf("must be from 1 to %d, got %d", MaxMaxAttempts, cfg.MaxAttempts))
	case cfg.Backoff < 0 || cfg.MaxBackoff < cfg.Backoff || cfg.MaxBackoff > MaxMaxBackoff:
		return nil, bad("Backoff", fmt.Sprintf("must be from 0 to MaxBackoff, and MaxBackoff at most %s", MaxMaxBackoff))
	case cfg.QueueSize < 1 || cfg.QueueSize > MaxQueueSize:
		return nil, bad("QueueSize", fmt.Sprintf("must be from 1 to %d, got %d", MaxQueueSize, cfg.QueueSize))
	case cfg.Interval < 0 || cfg.Interval > export.MaxInterval:
		return nil, bad("Interval", fmt.Sprintf("must be from 0 to %s", export.MaxInterval))
	}
	n := &Notifier{cfg: cfg, stderr: cfg.Stderr}
	if n.stderr == nil {
		n.stderr = os.Stderr
	}
	for i, t := range cfg.Targets {
		u, err := CheckURL(t.URL)
		if err != nil {
			return nil, bad(fmt.Sprintf("Targets[%d].URL", i), err.Error())
		}
		if len(t.Secret) < MinSecret {
			return nil, bad(fmt.Sprintf("Targets[%d].Secret", i), fmt.Sprintf("must be at least %d bytes, got %d", MinSecret, len(t.Secret)))
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/"
		}
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		n.targets = append(n.targets, target{url: u, path: path, secret: bytes.Clone(t.Secret), client: n.client(u, cfg)})
	}
	return n, nil
}

// client returns the HTTP client for u: the configured one, or one whose
// plain-http connections must end at a loopback address, so a resolver or
// a proxy cannot carry a notification off the machine.
func (n *Notifier) client(u *url.URL, cfg Config) *http.Client {
	var c http.Client
	if cfg.Client != nil {
		c = *cfg.Client
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if u.Scheme == "http" {
			tr.Proxy = nil
			d := &net.Dialer{Timeout: cfg.Timeout}
			lookup := cfg.lookup
			if lookup == nil {
				lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
					return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
				}
			}
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				return dialLoopback(ctx, d, lookup, network, addr)
			}
		}
		c.Transport = tr
	}
	c.Timeout = cfg.Timeout
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// dialLoopback dials a plain-http target only at loopback addresses: the
// name is resolved first and every address it resolves to must be
// loopback (a resolver or a hosts file mapping localhost elsewhere is
// refused before anything is sent), and the connection's far end is
// checked again once made.
func dialLoopback(ctx context.Context, d *net.Dialer, lookup func(context.Context, string) ([]netip.Addr, error), network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = lookup(ctx, host); err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("notify: %s resolves to no address", host)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return nil, fmt.Errorf("notify: refusing plain http to %s: it resolves to %s, which is not loopback", host, ip)
		}
	}
	var last error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err != nil {
			last = err
			continue
		}
		ap, perr := netip.ParseAddrPort(conn.RemoteAddr().String())
		if perr != nil || !ap.Addr().Unmap().IsLoopback() {
			conn.Close()
			return nil, fmt.Errorf("notify: refusing plain http to %s, which is not loopback", conn.RemoteAddr())
		}
		return conn, nil
	}
	return nil, last
}

// startAt is the cursor the follower reads from: it starts where the
// notifier's cursor is, and saves nothing, because the notifier saves
// only what every target has answered.
type startAt struct{ c export.Cursor }

func (s startAt) Load() (int64, error) { return s.c.Load() }
func (startAt) Save(int64) error       { return nil }

// job is one event's notification on its way to every target.
type job struct {
	seq int64
	// prev is the seq delivered before this job's event, and ord its
	// place in delivery: the cursor stops at prev while the job is
	// pending. On PostgreSQL the follower's order is not seq order (and
	// seqs have gaps), so seq - 1 is no place to resume from.
	prev, ord int64
	n         Notification
	body      []byte
	left      int
}

// ledger tracks what has been read and what every target has answered,
// and saves the cursor up to the first event still in flight.
type ledger struct {
	mu     sync.Mutex
	cursor export.Cursor
	read   int64
	caught int64 // the seq the follower last caught up at; -1 before
	saved  int64
	// readOrd and savedOrd are read's and saved's places in delivery
	// order (0: the cursor Run started from).
	readOrd, savedOrd int64
	pending           []*job // in delivery order
	err               error
}

// safe is the last place every event up to which is answered: the seq
// to save and its place in delivery.
func (l *ledger) safe() (seq, ord int64) {
	if len(l.pending) > 0 {
		return l.pending[0].prev, l.pending[0].ord - 1
	}
	return l.read, l.readOrd
}

// readTo records that the event at seq was read; l.mu is held.
func (l *ledger) readTo(seq int64) {
	l.read = seq
	l.readOrd++
}

// advance saves the cursor if it can move; l.mu is held.
func (l *ledger) advance() {
	s, ord := l.safe()
	if ord <= l.savedOrd || l.err != nil {
		return
	}
	if err := l.cursor.Save(s); err != nil {
		l.err = err
		return
	}
	l.saved, l.savedOrd = s, ord
}

// done records that one target answered j, and reports whether every
// target has.
func (l *ledger) done(j *job) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	j.left--
	finished := j.left == 0
	for len(l.pending) > 0 && l.pending[0].left == 0 {
		l.pending[0] = nil
		l.pending = l.pending[1:]
	}
	l.advance()
	return finished
}

// Run delivers notifications until ctx is cancelled (then it returns nil)
// or the store or the cursor fails. On the way out it saves the cursor up
// to the first notification not yet answered, which the next Run sends
// again.
func (n *Notifier) Run(ctx context.Context) error {
	seq, err := n.cfg.Cursor.Load()
	if err != nil {
		return err
	}
	led := &ledger{cursor: n.cfg.Cursor, read: seq, caught: -1, saved: seq}
	slots := make(chan struct{}, n.cfg.QueueSize)
	queues := make([]chan *job, len(n.targets))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range n.targets {
		queues[i] = make(chan *job, n.cfg.QueueSize)
		wg.Add(1)
		go func(t *target, q <-chan *job) {
			defer wg.Done()
			n.work(wctx, t, q, led, slots)
		}(&n.targets[i], queues[i])
	}
	f := export.Follower{Store: n.cfg.Store, Cursor: startAt{n.cfg.Cursor}, Interval: n.cfg.Interval,
		CaughtUp: func(s int64) {
			led.mu.Lock()
			led.caught = s
			led.advance()
			led.mu.Unlock()
			n.idle(led, slots)
		}}
	ferr := f.Follow(ctx, func(e agentrt.Event) error {
		note, ok, err := build(ctx, n.cfg.Store, e, n.cfg.IncludeArguments)
		if err != nil {
			return err
		}
		if !ok {
			led.mu.Lock()
			led.readTo(e.Seq)
			led.mu.Unlock()
			return nil
		}
		body, err := json.Marshal(note)
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		led.mu.Lock()
		j := &job{seq: e.Seq, prev: led.read, ord: led.readOrd + 1, n: note, body: body, left: len(n.targets)}
		led.pending = append(led.pending, j)
		led.readTo(e.Seq)
		led.mu.Unlock()
		for _, q := range queues {
			q <- j // never blocks: no more than QueueSize jobs are pending
		}
		return nil
	})
	stop()
	wg.Wait()
	led.mu.Lock()
	defer led.mu.Unlock()
	led.advance()
	if ctx.Err() != nil && errors.Is(ferr, context.Canceled) {
		ferr = nil
	}
	if ferr != nil {
		return ferr
	}
	return led.err
}

// work delivers each job of q to t until ctx ends, freeing a slot when
// every target has answered a job.
func (n *Notifier) work(ctx context.Context, t *target, q <-chan *job, led *ledger, slots chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-q:
			if !n.deliver(ctx, t, j) {
				return // stopped: j stays pending and is sent again
			}
			if led.done(j) {
				<-slots
			}
			n.idle(led, slots)
		}
	}
}

// idle reports that everything read has been answered.
func (n *Notifier) idle(led *ledger, slots chan struct{}) {
	if n.cfg.Idle == nil {
		return
	}
	led.mu.Lock()
	quiet := len(led.pending) == 0 && led.saved == led.read && led.caught == led.read
	s := led.saved
	led.mu.Unlock()
	if quiet && len(slots) == 0 {
		n.cfg.Idle(s)
	}
}

func (n *Notifier) sleep(ctx context.Context, d time.Duration) error {
	if n.cfg.Sleep != nil {
		return n.cfg.Sleep(ctx, d)
	}
	return ctxsleep.Sleep(ctx, d)
}

// permanentError is an answer that retrying will not change.
type permanentError struct{ error }

// deliver sends j to t until it is answered, retries run out, or ctx is
// done; it reports false only when ctx stopped it.
func (n *Notifier) deliver(ctx context.Context, t *target, j *job) bool {
	wait := n.cfg.Backoff
	var last error
	attempt := 0
	for attempt < n.cfg.MaxAttempts {
		attempt++
		last = n.post(ctx, t, j)
		if last == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var perm permanentError
		if errors.As(last, &perm) || attempt == n.cfg.MaxAttempts {
			break
		}
		if err := n.sleep(ctx, wait); err != nil {
			return false
		}
		wait = min(2*wait, n.cfg.MaxBackoff)
	}
	fmt.Fprintf(n.stderr, "notify: dead letter: id=%s type=%s run=%s approval=%s url=%s attempts=%d: %s\n",
		j.n.ID, j.n.Type, trace.Sanitize(j.n.RunID), trace.Sanitize(j.n.ApprovalID), redact(t.url), attempt, trace.Sanitize(last.Error()))
	return true
}

// redact is a URL as a log line may show it: no query, which may carry a
// token.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

func (n *Notifier) post(ctx context.Context, t *target, j *job) error {
	now := time.Now
	if n.cfg.Now != nil {
		now = n.cfg.Now
	}
	nonce := token.Hex(16)
	ts := now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url.String(), bytes.NewReader(j.body))
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentrt-notify")
	req.Header.Set("X-Approval-Event", string(j.n.Type))
	req.Header.Set(sign.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(sign.HeaderNonce, nonce)
	req.Header.Set(sign.HeaderSignature, sign.Sign(t.secret, ts, nonce, http.MethodPost, t.path, j.body))
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c >= 300 && c < 400:
		where := ""
		if loc, err := resp.Location(); err == nil {
			where = " to " + loc.Host
		}
		return permanentError{fmt.Errorf("answered %d, a redirect%s, which is not followed", c, where)}
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("answered %d", c)
	default:
		return permanentError{fmt.Errorf("answered %d", c)}
	}
}

// String names the notifier's targets without their secrets or queries.
func (n *Notifier) String() string {
	var b strings.Builder
	b.WriteString("notify.Notifier{")
	for i, t := range n.targets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(redact(t.url))
	}
	b.WriteString("}")
	return b.String()
}
