package providers

import (
	"encoding/xml"
	"fmt"
	"log/slog"
)

// Secret holds a credential, such as an API key, so that no encoding shows
// it: not fmt in any verb, slog, encoding/json, encoding/xml, encoding/gob
// or text/template, of the Secret or of any value holding it, by value or by
// pointer, in an exported or an unexported field. Each encoding shows
// Redacted when a key is set and "" when none is. Only Reveal returns the
// key, for the adapter to send.
//
// The key is behind a function so that a reflection-based printer, which
// reads an unexported field without calling its methods, finds a function
// value and not the string. Because of that a Secret, and a Config holding
// one, cannot be compared with ==; use IsSet. The zero Secret holds no key.
//
// No encoding of a Secret decodes back into one: what was written is
// Redacted, never the key.
type Secret struct {
	key func() string
}

// NewSecret holds key. An empty key is the zero Secret.
func NewSecret(key string) Secret {
	if key == "" {
		return Secret{}
	}
	return Secret{key: func() string { return key }}
}

// Reveal returns the key, or "" when none is set. Call it only where the key
// is sent.
func (s Secret) Reveal() string {
	if s.key == nil {
		return ""
	}
	return s.key()
}

// IsSet reports whether a key is held.
func (s Secret) IsSet() bool { return s.key != nil }

// String is Redacted when a key is set, "" when none is.
func (s Secret) String() string {
	if s.IsSet() {
		return Redacted
	}
	return ""
}

// GoString is the %#v form.
func (s Secret) GoString() string { return fmt.Sprintf("providers.Secret(%q)", s.String()) }

// Format prints String for every verb, %q quoted and %#v as GoString, so
// no verb (%x and %d included) reaches the key.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		FormatString(f, 's', s.GoString())
		return
	}
	FormatString(f, verb, s.String())
}

// MarshalJSON encodes String as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", s.String()), nil }

// MarshalText encodes String; encoding/xml uses it for an attribute, and
// slog's text handler and other text encoders for a value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalXML encodes String as the element's text.
func (s Secret) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(s.String(), start)
}

// LogValue is String, for slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// GobEncode encodes String. There is no GobDecode: decoding a Secret is an
// error rather than a key of "[redacted]".
func (s Secret) GobEncode() ([]byte, error) { return []byte(s.String()), nil }
