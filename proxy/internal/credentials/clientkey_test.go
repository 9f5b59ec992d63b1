package credentials

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// An RSA key signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256): the assertion
// verifies with crypto/rsa and carries the claims an ES256 one does.
func TestClientCredentials_RS256AssertionVerifies(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s := &assertionSigner{clientID: "c", alg: RS256, key: key, now: func() time.Time { return now }}
	a, err := s.assertion("https://as.example.com")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(a, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %d parts", len(parts))
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		t.Fatalf("the RS256 signature: %v", err)
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var h struct{ Alg, Typ, Kid string }
	var c struct {
		Iss, Sub, Aud string
		Iat, Exp      int64
		JTI           string `json:"jti"`
	}
	if json.Unmarshal(hb, &h) != nil || h.Alg != "RS256" || h.Typ != "JWT" || h.Kid != "" {
		t.Fatalf("header %s", hb)
	}
	if json.Unmarshal(cb, &c) != nil || c.Iss != "c" || c.Sub != "c" || c.Aud != "https://as.example.com" || c.Iat != now.Unix() ||
		c.Exp != now.Add(assertionLifetime).Unix() || c.JTI == "" {
		t.Fatalf("claims %s", cb)
	}
}
