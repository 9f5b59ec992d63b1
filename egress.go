package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrEgressDenied is matched by *EgressDeniedError.
var ErrEgressDenied = errors.New("agentrt: egress denied")

// EgressDeniedError says the egress rules refused a provider request; it
// never left the process.
type EgressDeniedError struct {
	Manifest EgressManifest
	Reason   string
}

func (e *EgressDeniedError) Error() string {
	return fmt.Sprintf("agentrt: egress denied for %s/%s to %q: %s", e.Manifest.Provider, e.Manifest.Model, e.Manifest.Host, e.Reason)
}

// Is matches ErrEgressDenied.
func (e *EgressDeniedError) Is(target error) bool { return target == ErrEgressDenied }

// EgressRules decide each provider request from its manifest. An empty
// list allows any value; a set list allows only the values it names (a
// request whose Model does not name its provider or host is then denied).
type EgressRules struct {
	Providers []string `json:"providers,omitempty"`
	Models    []string `json:"models,omitempty"`
	Hosts     []string `json:"hosts,omitempty"`
	// MaxRequestBytes bounds the whole serialized request: system text,
	// messages, tool definitions and their schemas. Zero is no ceiling.
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
	// Secrets judges the secrets the engine's Disclosure finds in a
	// request's system text and messages: EgressSecretsRedact sends them
	// redacted, EgressSecretsDeny refuses the request; the manifest lists
	// the findings either way. Zero looks for none. Setting it needs
	// EngineConfig.Disclosure.
	Secrets EgressSecrets `json:"secrets,omitempty"`
}

// Decide returns "" when the rules allow m, or why they deny it.
func (r *EgressRules) Decide(m EgressManifest) string {
	if r == nil {
		return ""
	}
	if len(r.Providers) > 0 && !slices.Contains(r.Providers, m.Provider) {
		return fmt.Sprintf("provider %q is not one the egress rules allow", m.Provider)
	}
	if len(r.Models) > 0 && !slices.Contains(r.Models, m.Model) {
		return fmt.Sprintf("model %q is not one the egress rules allow", m.Model)
	}
	if len(r.Hosts) > 0 && !slices.Contains(r.Hosts, m.Host) {
		return fmt.Sprintf("host %q is not one the egress rules allow", m.Host)
	}
	if r.MaxRequestBytes > 0 && m.Bytes > r.MaxRequestBytes {
		return fmt.Sprintf("the serialized request is %d bytes, over the ceiling of %d", m.Bytes, r.MaxRequestBytes)
	}
	return ""
}

func (r *EgressRules) check(d Disclosure) error {
	switch {
	case r == nil:
	case r.MaxRequestBytes < 0:
		return &ConfigError{Field: "Config.Egress.MaxRequestBytes", Reason: "must not be negative"}
	case !r.Secrets.valid():
		return &ConfigError{Field: "Config.Egress.Secrets", Reason: fmt.Sprintf("must be %q, %q or empty, got %q", EgressSecretsRedact, EgressSecretsDeny, clipText(string(r.Secrets), 64))}
	case r.Secrets != EgressSecretsUnjudged && d == nil:
		return &ConfigError{Field: "Config.Egress.Secrets", Reason: "needs Config.Disclosure, whose rules find the secrets"}
	}
	return nil
}

// EgressManifest describes one provider request before it is sent.
type EgressManifest struct {
	CallID   string `json:"call_id"`
	Attempt  int    `json:"attempt"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Host is the endpoint's host (and port), as the Model names it.
	Host string `json:"host"`
	// Bytes and SHA256 describe the exact serialized request: the body an
	// EncodedModel sends, or else the provider-neutral JSON of the request.
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256" audit:"digest"`
	Tools    int    `json:"tools"`
	Messages int    `json:"messages"`
	// MaxBytes is the byte ceiling that applied; zero is none.
	MaxBytes int64 `json:"max_bytes"`
	// Exact says the bytes are those the Model sends (an EncodedModel);
	// otherwise they are the provider-neutral request, which the adapter
	// re-encodes.
	Exact bool `json:"exact"`
	// Secrets lists where the request's system text and messages carried
	// a secret and of which kind (EgressRules.Secrets): JSON pointers into
	// {"system", "messages"} of the provider-neutral request, never a
	// value.
	Secrets []ArgumentSecret `json:"secrets,omitempty"`
	// Redacted says the request was sent with each of Secrets redacted.
	Redacted bool `json:"redacted,omitempty"`
}

// EncodedRequest is the exact body a Model sends for a request and the host
// it sends it to.
type EncodedRequest struct {
	Host string
	Body []byte
}

// EncodedModel is an optional capability of a Model: it encodes a request
// once, so the caller can record the exact bytes in the egress manifest
// before transport, and then sends exactly those bytes.
type EncodedModel interface {
	// EncodeRequest returns the body Generate would send for req.
	EncodeRequest(req ModelRequest) (EncodedRequest, error)
	// SendEncoded sends enc (made by EncodeRequest from req) and maps the
	// reply as Generate does.
	SendEncoded(ctx context.Context, req ModelRequest, enc EncodedRequest) (ModelResponse, error)
}

// ModelEndpoint is an optional capability of a Model that is not an
// EncodedModel: the host its requests go to, for the manifest.
type ModelEndpoint interface {
	EndpointHost() string
}

// manifest serializes req as the model will send it and describes it.
func (c *modelCaller) manifest(req ModelRequest, name string, attempt int) (EgressManifest, *EncodedRequest, error) {
	m := EgressManifest{Attempt: attempt, Provider: c.provider(), Model: name, Tools: len(req.Tools), Messages: len(req.Messages)}
	if r := c.s.e.egress; r != nil {
		m.MaxBytes = r.MaxRequestBytes
	}
	var body []byte
	var enc *EncodedRequest
	if em, ok := c.cfg.Model.(EncodedModel); ok {
		e, err := em.EncodeRequest(req)
		if err != nil {
			return m, nil, &ModelUnavailableError{Attempts: attempt, Last: fmt.Errorf("encoding the request: %w", err)}
		}
		enc, body, m.Host, m.Exact = &e, e.Body, e.Host, true
	} else {
		b, err := json.Marshal(req)
		if err != nil {
			return m, nil, &ModelUnavailableError{Attempts: attempt, Last: fmt.Errorf("encoding the request: %w", err)}
		}
		body = b
		if me, ok := c.cfg.Model.(ModelEndpoint); ok {
			m.Host = me.EndpointHost()
		}
	}
	m.Host = clipText(m.Host, 256)
	sum := sha256.Sum256(body)
	m.Bytes, m.SHA256 = int64(len(body)), hex.EncodeToString(sum[:])
	return m, enc, nil
}

// EgressSecrets is what the egress rules do with a provider request whose
// system text or messages (a goal, a tool's result, the model's own
// earlier arguments) carry a secret the engine's Disclosure finds.
type EgressSecrets string

const (
	// EgressSecretsUnjudged sends a request without looking for secrets.
	// It is the zero value.
	EgressSecretsUnjudged EgressSecrets = ""
	// EgressSecretsRedact sends the request with each secret replaced in
	// place by [REDACTED:<rule>]; its manifest lists where and of which
	// kind. A rule the Disclosure blocks on denies the request instead.
	EgressSecretsRedact EgressSecrets = "redact"
	// EgressSecretsDeny refuses a request that carries a secret: it never
	// leaves, and egress.denied records its manifest with the findings.
	EgressSecretsDeny EgressSecrets = "deny"
)

// EgressDisclosureTool is the tool name under which the engine's
// Disclosure judges a provider request (as that tool's result), so a
// rule can be turned off for provider requests by this name (the
// disclosure module's Config.Off).
const EgressDisclosureTool = "#model_request"

func (s EgressSecrets) valid() bool {
	return s == EgressSecretsUnjudged || s == EgressSecretsRedact || s == EgressSecretsDeny
}
