package providers

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/textcut"
)

// Redacted is what a key is printed as.
const Redacted = "[redacted]"

// Excerpt makes server-chosen bytes fit for an error message: every non-empty
// secret is replaced with Redacted, invalid UTF-8 becomes U+FFFD, control
// characters and runs of white space become one space, characters that
// reorder or hide text are shown as \u{XXXX}, and the result is cut to
// ExcerptBytes on a rune boundary.
func Excerpt(body []byte, secrets ...string) string {
	s := string(body)
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
			space = false
		case r < 0x20 || r == ' ' || (r >= 0x7f && r < 0xa0):
			if !space {
				b.WriteByte(' ')
				space = true
			}
		case hidden(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
			space = false
		default:
			b.WriteRune(r)
			space = false
		}
		if b.Len() > 4*ExcerptBytes {
			break
		}
	}
	return textcut.Truncate(strings.TrimSpace(b.String()), ExcerptBytes)
}

// hidden reports characters that reorder, join or hide text on a terminal.
func hidden(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069,
		r == 0x2028, r == 0x2029, r == 0xfeff, r == 0x061c, r == 0x00ad, r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}

// RedactURL shows a base URL for humans: user information and a query are
// replaced with Redacted, and an unparsable URL is not repeated at all.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	user := u.User != nil
	u.User = nil
	query := u.RawQuery != "" || u.ForceQuery
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	s := u.String()
	if user {
		s = strings.Replace(s, "//", "//"+Redacted+"@", 1)
	}
	if query {
		s += "?" + Redacted
	}
	return Excerpt([]byte(s))
}

var toolUseSeq atomic.Uint64

// SynthesizeToolUseID names a tool use a provider left without an id:
// "call_<unix nanos>_<i>", unique in the process.
func SynthesizeToolUseID(i int) string {
	return fmt.Sprintf("call_%d_%d_%d", time.Now().UnixNano(), toolUseSeq.Add(1), i)
}

// FormatString writes s for any fmt verb: %q quotes it and every other verb
// writes it as is. Adapters' Format methods use it so %v, %+v, %#v and %s of
// a value holding a key all print its redacted form.
func FormatString(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s)
		return
	}
	_, _ = io.WriteString(f, s)
}
