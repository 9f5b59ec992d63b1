package token_test

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/token"
)

// Hex and URL decode back to exactly the bytes asked for, and two draws of
// the same size never repeat.
func TestToken_EncodesTheBytesAskedForAndNeverRepeats(t *testing.T) {
	for _, n := range []int{6, 8, 16, 32} {
		h1, h2 := token.Hex(n), token.Hex(n)
		if b, err := hex.DecodeString(h1); err != nil || len(b) != n || h1 != strings.ToLower(h1) {
			t.Errorf("Hex(%d) = %q (%d bytes, %v), want %d bytes of lower-case hex", n, h1, len(b), err, n)
		}
		u1, u2 := token.URL(n), token.URL(n)
		if b, err := base64.RawURLEncoding.DecodeString(u1); err != nil || len(b) != n {
			t.Errorf("URL(%d) = %q (%d bytes, %v), want %d bytes of unpadded base64url", n, u1, len(b), err, n)
		}
		if h1 == h2 || u1 == u2 {
			t.Errorf("two draws of %d bytes repeated: %q %q / %q %q", n, h1, h2, u1, u2)
		}
	}
}
