package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt"
)

// Key identifies an exchange: the hex SHA-256 of the JSON object
// {"model": model, "request": req}, where the request is re-decoded with its
// numbers kept as their literal text and re-encoded with sorted keys. So
// whitespace and key order inside raw JSON do not change a key, and two
// requests differing only in an integer past float64 precision do not share
// one. A request holding raw JSON that is not valid has no key.
func Key(model string, req agentrt.ModelRequest) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("replay: the request has no key: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("replay: the request has no key: %w", err)
	}
	canon, err := json.Marshal(map[string]any{"model": model, "request": v})
	if err != nil {
		return "", fmt.Errorf("replay: the request has no key: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
