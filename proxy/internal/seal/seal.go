// Package seal makes and opens the requestState the proxy hands an MCP
// 2026-07-28 host with a held call: an approval id, the request's key and
// an expiry, under an HMAC-SHA256 whose key only the proxy holds. A host
// can carry the state back but cannot alter it, move it to another
// request, or keep it past its expiry.
package seal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/agentrt/agentrt/internal/files"
)

// KeyBytes is the length of a sealing key.
const KeyBytes = 32

// version starts every sealed state, so a later layout is told apart.
const version = 1

// maxState bounds a state the proxy will try to open.
const maxState = 1024

// ErrRefused marks a state that does not open: altered, made under
// another key, of another request, malformed, or expired.
var ErrRefused = errors.New("seal: the requestState is not one this proxy issued for this request, or it has expired")

// RefusedError says why a state was refused; it matches ErrRefused.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "seal: requestState refused: " + e.Reason }

// Is matches ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// State is what a sealed requestState carries.
type State struct {
	// ApprovalID is the approval the held call waits on.
	ApprovalID string
	// Key is the request's key (agentrt.RequestKey): the tool and its
	// canonical arguments.
	Key string
	// Expires is when the state stops opening.
	Expires time.Time
}

// Sealer seals and opens states under one key.
type Sealer struct{ key []byte }

// New is a Sealer under key, which must be KeyBytes long.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("seal: a key must be %d bytes, got %d", KeyBytes, len(key))
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// LoadOrCreate reads the key at path, a file only its owner may read
// (files.ReadSecret), or writes a new random one there, owner-only, when
// none exists.
func LoadOrCreate(path string) (*Sealer, error) {
	b, err := files.ReadSecret(path, KeyBytes)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, KeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := files.WriteNew(path, key, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("seal: the key could not be written: %w", err)
		}
		// Another process may have written one first: read what is there.
		b, err = files.ReadSecret(path, KeyBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("seal: the key could not be read: %w", err)
	}
	return New(b)
}

// Seal is s as an opaque string: version, expiry, the two fields, and the
// MAC over all of them.
func (sl *Sealer) Seal(s State) string {
	body := encode(s)
	return base64.RawURLEncoding.EncodeToString(append(body, sl.mac(body)...))
}

// Derive is a Sealer under a key of its own for label: what one seals
// the other refuses, so a token made for one use (a task handle) is never
// taken for another (a requestState).
func (sl *Sealer) Derive(label string) *Sealer {
	m := hmac.New(sha256.New, sl.key)
	m.Write([]byte("agentrt seal: " + label))
	return &Sealer{key: m.Sum(nil)}
}

// Open checks a state's MAC, that it was made for key, and that now is
// before its expiry, and returns it. Any failure is a *RefusedError.
func (sl *Sealer) Open(state, key string, now time.Time) (State, error) {
	s, err := sl.OpenAny(state, now)
	if err != nil {
		return State{}, err
	}
	if s.Key != key {
		return State{}, &RefusedError{"it was issued for another request"}
	}
	return s, nil
}

// OpenAny checks a state's MAC and that now is before its expiry, and
// returns it, whatever request it was made for. Any failure is a
// *RefusedError.
func (sl *Sealer) OpenAny(state string, now time.Time) (State, error) {
	if len(state) > maxState {
		return State{}, &RefusedError{"it is too long"}
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(raw) < sha256.Size {
		return State{}, &RefusedError{"it is malformed"}
	}
	body, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(sum, sl.mac(body)) {
		return State{}, &RefusedError{"it was altered or not issued here"}
	}
	s, ok := decode(body)
	if !ok {
		return State{}, &RefusedError{"it is malformed"}
	}
	if !now.Before(s.Expires) {
		return State{}, &RefusedError{"it has expired"}
	}
	return s, nil
}

func (sl *Sealer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, sl.key)
	m.Write(body)
	return m.Sum(nil)
}

// encode is version (1 byte), expiry in Unix nanoseconds (8 bytes), then
// each field as a 2-byte length and its bytes.
func encode(s State) []byte {
	b := []byte{version}
	b = binary.BigEndian.AppendUint64(b, uint64(s.Expires.UnixNano()))
	for _, f := range []string{s.ApprovalID, s.Key} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
		b = append(b, f...)
	}
	return b
}

func decode(b []byte) (State, bool) {
	if len(b) < 9 || b[0] != version {
		return State{}, false
	}
	s := State{Expires: time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9])))}
	b = b[9:]
	var fields [2]string
	for i := range fields {
		if len(b) < 2 {
			return State{}, false
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return State{}, false
		}
		fields[i], b = string(b[2:2+n]), b[2+n:]
	}
	if len(b) != 0 {
		return State{}, false
	}
	s.ApprovalID, s.Key = fields[0], fields[1]
	return s, true
}
