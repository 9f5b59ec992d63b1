// Package sign is the request signature the approval webhook and the
// approval notifications share: HMAC-SHA256 under a shared secret over the
// timestamp, the nonce, the method, the path and the body, and the set of
// signatures already seen that refuses a replay.
package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The headers a signed request carries.
const (
	HeaderTimestamp = "X-Approval-Timestamp"
	HeaderNonce     = "X-Approval-Nonce"
	HeaderSignature = "X-Approval-Signature"
)

// Bounds of the scheme.
const (
	// MinSecret is the shortest secret either side accepts, in bytes.
	MinSecret = 32
	// MaxNonce is the longest nonce; a nonce is 1 to MaxNonce letters,
	// digits, '-' or '_', so it cannot carry the newline that separates
	// the signed fields.
	MaxNonce = 64
	prefix   = "v1="
)

// Why a signature is refused. Each is distinct so a server can say which,
// and none says anything about the secret.
var (
	ErrMissing = errors.New("the request is not signed: it needs " + HeaderTimestamp + ", " + HeaderNonce + " and " + HeaderSignature)
	ErrSkew    = errors.New("the request's timestamp is outside the allowed skew")
	ErrBad     = errors.New("the request's signature does not match")
	ErrReplay  = errors.New("the request's signature was seen before")
	ErrFull    = errors.New("too many signatures in the window")
)

// Sign returns the signature of a request: "v1=" and the hex of
// HMAC-SHA256(secret, timestamp "\n" nonce "\n" method "\n" path "\n" body).
// The timestamp is decimal unix seconds; path is the escaped path with its
// query, if any, as the receiving handler sees it.
func Sign(secret []byte, timestamp int64, nonce, method, path string, body []byte) string {
	return prefix + hex.EncodeToString(mac(secret, timestamp, nonce, method, path, body))
}

func mac(secret []byte, timestamp int64, nonce, method, path string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	var head []byte
	head = strconv.AppendInt(head, timestamp, 10)
	head = append(head, '\n')
	head = append(head, nonce...)
	head = append(head, '\n')
	head = append(head, method...)
	head = append(head, '\n')
	head = append(head, path...)
	head = append(head, '\n')
	m.Write(head)
	m.Write(body)
	return m.Sum(nil)
}

// ValidNonce reports whether n is a nonce the scheme accepts.
func ValidNonce(n string) bool {
	if n == "" || len(n) > MaxNonce {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Path is what a signature covers of a request's URL: the escaped path,
// and "?" and the raw query when there is one.
func Path(r *http.Request) string {
	p := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	return p
}

// Key is a verified signature, as the replay set remembers it.
type Key [sha256.Size]byte

// Verify checks the signature headers h of a request against secret, at
// now, with timestamps accepted within skew either way. It returns the
// signature to remember against a replay. The comparison is constant-time.
func Verify(secret []byte, h http.Header, method, path string, body []byte, now time.Time, skew time.Duration) (Key, error) {
	k, t, nonce, err := parse(h, now, skew)
	if err != nil {
		return Key{}, err
	}
	if !hmac.Equal(k[:], mac(secret, t, nonce, method, path, body)) {
		return Key{}, ErrBad
	}
	return k, nil
}

// Precheck is what Verify checks before it needs the body: the three
// headers present, the timestamp within skew of now, the nonce and the
// signature well formed. A request that fails it can be refused without
// reading its body.
func Precheck(h http.Header, now time.Time, skew time.Duration) error {
	_, _, _, err := parse(h, now, skew)
	return err
}

func parse(h http.Header, now time.Time, skew time.Duration) (k Key, t int64, nonce string, err error) {
	ts, nonce, sig := h.Get(HeaderTimestamp), h.Get(HeaderNonce), h.Get(HeaderSignature)
	if ts == "" || nonce == "" || sig == "" {
		return k, 0, "", ErrMissing
	}
	if len(ts) > 12 || strings.TrimLeft(ts, "0123456789") != "" {
		return k, 0, "", ErrSkew
	}
	t, err = strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return k, 0, "", ErrSkew
	}
	if d := now.Sub(time.Unix(t, 0)); d > skew || d < -skew {
		return k, 0, "", ErrSkew
	}
	if !ValidNonce(nonce) {
		return k, 0, "", ErrBad
	}
	got, ok := strings.CutPrefix(sig, prefix)
	if !ok || len(got) != 2*sha256.Size {
		return k, 0, "", ErrBad
	}
	if _, err := hex.Decode(k[:], []byte(got)); err != nil {
		return k, 0, "", ErrBad
	}
	return k, t, nonce, nil
}

// Replay remembers verified signatures so that each is accepted once. A
// signature is remembered for twice the skew from when it was accepted:
// its timestamp is at most one skew ahead of that moment, and it is
// refused for skew once its timestamp is one skew behind, so it can never
// be accepted again after it is forgotten. At most Cap are remembered;
// past that, Check refuses rather than grow.
type Replay struct {
	mu    sync.Mutex
	ttl   time.Duration
	cap   int
	seen  map[Key]struct{}
	queue []entry // in the order accepted, oldest at head
	head  int
}

type entry struct {
	key   Key
	until time.Time
}

// NewReplay remembers at most capacity signatures, each for 2×skew.
func NewReplay(capacity int, skew time.Duration) *Replay {
	return &Replay{ttl: 2 * skew, cap: capacity, seen: make(map[Key]struct{})}
}

// Check accepts k at now, once. Forgetting what has lapsed costs O(1) per
// signature over its life, so a check costs O(1) however many are held.
func (r *Replay) Check(k Key, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.head < len(r.queue) && !now.Before(r.queue[r.head].until) {
		delete(r.seen, r.queue[r.head].key)
		r.queue[r.head] = entry{}
		r.head++
	}
	if r.head > 0 && r.head >= len(r.queue)/2 {
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue, r.head = r.queue[:n], 0
	}
	if _, ok := r.seen[k]; ok {
		return ErrReplay
	}
	if len(r.seen) >= r.cap {
		return ErrFull
	}
	r.seen[k] = struct{}{}
	r.queue = append(r.queue, entry{key: k, until: now.Add(r.ttl)})
	return nil
}

// Len is how many signatures are remembered.
func (r *Replay) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
