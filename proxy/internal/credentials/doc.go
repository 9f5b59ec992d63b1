// Package credentials holds what the proxy authenticates to upstream
// servers with: secret references read from the environment or owner-only
// files, OAuth 2.1 logins and the tokens they store, client credentials
// with a secret or a private key (signed client assertions), and the
// issuer guard that sends a client's secret or key to no authorization
// server but the one it is registered with.
//
// The go-sdk does the protocol; this package decides what is sent where
// and what is kept. Package proxy re-exports the configuration types
// (OAuthConfig, SecretRef, PrivateKeyRef) and errors under their old
// names.
package credentials

import (
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/canon"
)

// bad is a configuration error naming its field.
func bad(field, format string, args ...any) error {
	return &agentrt.ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// decodeStrict refuses what the runtime refuses as JSON, unknown fields
// and trailing data, as the proxy's configuration reader does.
func decodeStrict(b []byte, v any) error {
	if err := agentrt.CheckJSON(b); err != nil {
		return err
	}
	return canon.DecodeStrict(b, v)
}
