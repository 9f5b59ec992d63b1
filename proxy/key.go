package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	agentrt "github.com/agentrt/agentrt"
)

// RequestKey is what identical calls share: the lowercase hex SHA-256 of
// the tool's name as the model sees it, a NUL byte, and
// agentrt.CanonicalJSON of the arguments (empty arguments are {}). The
// canonical form is the one an approval's hash binds, so two calls share a
// key exactly when an approval of one is an approval of the other. Tool
// names cannot hold a NUL, so no name and arguments can be read as another
// pair. Arguments the runtime refuses as JSON have no key.
func RequestKey(tool string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	c, err := agentrt.CanonicalJSON(args)
	if err != nil {
		return "", err
	}
	return keyOf(tool, c), nil
}

// keyOf hashes a name and arguments already in canonical form.
func keyOf(tool string, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}
