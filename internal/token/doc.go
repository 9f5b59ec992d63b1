// Package token draws the random strings agentrt hands out or checks once:
// bearer and invitation tokens, nonces, opaque ids. Every one of them is
// crypto/rand bytes in one of two encodings, so a reader looking for how a
// secret is made finds one place.
package token
