package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agentrt/agentrt/approver/internal/sign"
)

// Why a Receiver refuses a notification.
var (
	// ErrSignature: unsigned, signed under another secret, altered, or
	// with a timestamp outside the skew.
	ErrSignature = errors.New("notify: the notification's signature does not verify")
	// ErrReplay: a signature already accepted. A notification sent again
	// after a restart carries a new signature and the same ID.
	ErrReplay = errors.New("notify: the notification was replayed")
)

// Bounds of a Receiver.
const (
	DefaultSkew        = 5 * time.Minute
	MaxNotificationLen = 256 << 10
	receiverReplayCap  = 100000
)

// Receiver verifies notifications for a receiving server: the signature
// under its secret, the timestamp within Skew, and that the signature was
// not accepted before.
type Receiver struct {
	secret []byte
	// Skew is how far a timestamp may be from Now; zero is DefaultSkew.
	Skew time.Duration
	// Now is the receiver's clock; nil is time.Now.
	Now func() time.Time

	once   sync.Once
	replay *sign.Replay
}

// NewReceiver returns a Receiver for the target's secret.
func NewReceiver(secret []byte) (*Receiver, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("notify: a receiver's secret must be at least %d bytes, got %d", MinSecret, len(secret))
	}
	return &Receiver{secret: bytes.Clone(secret)}, nil
}

// Verify reads r's body (at most MaxNotificationLen bytes) and returns the
// notification it carries if it is signed, fresh and new. The path signed
// is r's, as the receiving handler sees it.
func (rc *Receiver) Verify(r *http.Request) (Notification, error) {
	skew := rc.Skew
	if skew == 0 {
		skew = DefaultSkew
	}
	rc.once.Do(func() { rc.replay = sign.NewReplay(receiverReplayCap, skew) })
	now := time.Now()
	if rc.Now != nil {
		now = rc.Now()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxNotificationLen+1))
	if err != nil {
		return Notification{}, err
	}
	if len(body) > MaxNotificationLen {
		return Notification{}, fmt.Errorf("notify: the notification is over %d bytes", MaxNotificationLen)
	}
	key, err := sign.Verify(rc.secret, r.Header, r.Method, sign.Path(r), body, now, skew)
	if err != nil {
		return Notification{}, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if err := rc.replay.Check(key, now); err != nil {
		return Notification{}, fmt.Errorf("%w: %v", ErrReplay, err)
	}
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil {
		return Notification{}, fmt.Errorf("notify: the body is not a notification: %w", err)
	}
	return n, nil
}
