package token

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
)

// read fills a fresh slice of n bytes from crypto/rand. Since Go 1.24
// rand.Read never returns an error: it ends the program instead, so there
// is nothing for a caller to handle.
func read(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// Hex returns n random bytes in lower-case hex: 2n characters from
// [0-9a-f], safe in a SQL identifier, a file name or a header.
func Hex(n int) string { return hex.EncodeToString(read(n)) }

// URL returns n random bytes in unpadded base64url (RFC 4648 §5): the
// shortest form that needs no escaping in a URL, a cookie or a header.
func URL(n int) string { return base64.RawURLEncoding.EncodeToString(read(n)) }
