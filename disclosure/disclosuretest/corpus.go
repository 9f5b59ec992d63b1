package disclosuretest

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Secret is one planted secret of a known format.
type Secret struct {
	// Format names the format, for messages.
	Format string
	// Value is what must never be disclosed.
	Value string
	// Text is how a tool writes it, with %s for the value; empty is the
	// value alone.
	Text string
}

// Rendered is how a tool writes s.
func (s Secret) Rendered() string {
	if s.Text == "" {
		return s.Value
	}
	return strings.Replace(s.Text, "%s", s.Value, 1)
}

// Corpus is the planted corpus: AWS access key id and secret key, GitHub,
// Slack, Stripe, Google, a JWT, a PEM private key, a bearer token, a URL
// with a password and a generic high-entropy assignment. Every format is
// one the disclosure module's default rules cover.
func Corpus() []Secret {
	j := func(parts ...string) string { return strings.Join(parts, "") }
	pem := j("-----BEGIN RSA ", "PRIVATE KEY-----\n",
		"MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2nPwJ4b7vN0xLqE5sYt8Rk1uWcHd\n",
		"Zf9gXhT2pKj4Lm6nQo8rSt0uVw2xYz4aBc6dEf8gHi0jKl2mNo4pQr6sTu8vWx0y\n",
		"-----END RSA ", "PRIVATE KEY-----")
	return []Secret{
		{"aws access key id", j("AKIA", "Q3EGRIXY5TNWZ4VB"), ""},
		{"aws secret access key", j("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzq8Kd3Tm2Q"), "aws_secret_access_key = %s"},
		{"github token", j("ghp", "_", "R8v1kQz2Xw9LmN4pT6yB3cD5fG7hJ0sU2aE4"), ""},
		{"slack token", j("xox", "b-", "223344556677-8899001122334-Ab3dEf7hIj1lMn5pQr9tUv2x"), ""},
		{"stripe key", j("sk_", "live_", "4eC39HqLyjWDarjtT1zdp7dc"), ""},
		{"google api key", j("AI", "za", "SyD3kF9mQ2xL7pR4vT8wZ1yB6nC0dE5hJ3s"), ""},
		{"jwt", j("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
			".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"), ""},
		{"pem private key", pem, ""},
		{"bearer token", j("3f9aK2mQ7xL0pR8v", "T4wZ6yB1nC5dE9hJ"), "Authorization: Bearer %s"},
		{"url with password", j("S3cr3t", "P4ssw0rdX9"), "postgres://admin:%s@db.internal:5432/app"},
		{"generic high-entropy assignment", j("8fK2mQ7xL0pR8vT4", "wZ6yB1nC5dE9hJ3sU"), "API_SECRET=%s"},
	}
}

// File is the corpus as a .env-like file: each secret rendered, one to a
// line (the PEM key on its own lines).
func File() string {
	var lines []string
	for _, s := range Corpus() {
		lines = append(lines, s.Rendered())
	}
	return strings.Join(lines, "\n") + "\n"
}

// Leaks lists the formats of the planted secrets b still holds, whole or
// in part: a multi-line value (the PEM key) counts as held when any of its
// body lines is. Each needle is looked for raw, as a JSON string holds it
// and as a JSON string inside a JSON string holds it.
func Leaks(b []byte) []string {
	var out []string
	for _, s := range Corpus() {
		for _, needle := range needles(s.Value) {
			if holds(b, needle) {
				out = append(out, s.Format)
				break
			}
		}
	}
	return out
}

// needles are the parts of v whose presence discloses it.
func needles(v string) []string {
	if !strings.Contains(v, "\n") {
		return []string{v}
	}
	var out []string
	for _, line := range strings.Split(v, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

func holds(b []byte, needle string) bool {
	form := needle
	for range 3 {
		if bytes.Contains(b, []byte(form)) {
			return true
		}
		esc, _ := json.Marshal(form)
		form = string(esc[1 : len(esc)-1])
	}
	return false
}
