package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// Bounds applied by [Check].
const (
	// MaxDepth is the deepest nesting of arrays and objects accepted. It is far
	// below encoding/json's own limit because the runtime wraps consumer values
	// in objects of its own, and a wrapped value must still decode.
	MaxDepth = 256

	// MaxNumberLen is the longest number literal accepted, in bytes.
	MaxNumberLen = 10000

	// MaxExponent bounds the decimal exponent of a number, both as written and
	// as implied by the position of its first significant digit. Schema
	// validators turn numbers into big rationals, and a huge exponent there
	// costs unbounded memory or panics.
	MaxExponent = 10000
)

// Reasons carried by [Error], one per refusal.
const (
	ReasonDepth          = "nested deeper than 256 levels"
	ReasonUTF8           = "invalid UTF-8"
	ReasonSyntax         = "not valid JSON"
	ReasonSurrogate      = "unpaired surrogate"
	ReasonDuplicateKey   = "duplicate key"
	ReasonNumberLength   = "number longer than 10000 characters"
	ReasonNumberExponent = "number exponent beyond 10000 in magnitude"
)

// ErrInvalid matches every [*Error] with [errors.Is].
var ErrInvalid = errors.New("JSON refused")

// Error reports a document refused by [Check]. Reason is one of the Reason
// constants.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return "JSON refused: " + e.Reason }

// Is reports whether target is [ErrInvalid].
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Check refuses a document that cannot be hashed without loss. It returns nil
// or an [*Error]. When a document has several faults, the reason is the first
// of: depth, UTF-8, syntax, surrogates, duplicate keys, numbers.
func Check(raw []byte) error {
	p := getParser(false)
	defer p.release()
	_, err := p.parse(raw)
	return err
}

// Canonical checks raw and returns its canonical form: keys sorted by the
// bytes of the unescaped key, no insignificant whitespace, numbers as written,
// and strings escaped like encoding/json with HTML escaping on.
func Canonical(raw []byte) ([]byte, error) {
	return encode(raw, false, true)
}

// Policy checks raw and returns the canonical form without HTML escaping:
// only quotes, backslashes and control characters are escaped. Documents with
// equal [Canonical] forms have equal Policy forms.
func Policy(raw []byte) ([]byte, error) {
	return encode(raw, false, false)
}

// PolicyUnchecked is [Policy] for documents accepted with repeated keys, such
// as tool input schemas: of a repeated key, the last value is kept, as
// encoding/json does, so a schema has the same form whether it comes from
// registration or from storage. Every other refusal of [Check] still applies.
func PolicyUnchecked(raw []byte) ([]byte, error) {
	return encode(raw, true, false)
}

// Hash returns the lowercase hex SHA-256 of the [Canonical] form of raw.
func Hash(raw []byte) (string, error) {
	p := getParser(false)
	defer p.release()
	root, err := p.parse(raw)
	if err != nil {
		return "", err
	}
	p.out = p.emit(p.out[:0], root, true)
	sum := sha256.Sum256(p.out)
	return hex.EncodeToString(sum[:]), nil
}

// HashBytes returns the lowercase hex SHA-256 of b as given.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func encode(raw []byte, keepLast, html bool) ([]byte, error) {
	p := getParser(keepLast)
	defer p.release()
	root, err := p.parse(raw)
	if err != nil {
		return nil, err
	}
	// The canonical form is rarely longer than the input; escapes that grow
	// it are paid for by append.
	return p.emit(make([]byte, 0, len(raw)), root, html), nil
}
