package openai

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// provider prefixes this adapter's errors.
const provider = "openai"

// Config configures a Model.
type Config struct {
	// BaseURL is the API root that /chat/completions is appended to. Zero
	// means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer". Zero sends no Authorization
	// header, for local servers that need none.
	// Make one with providers.NewSecret; no encoding of a Config, or of
	// anything holding one, shows it.
	APIKey providers.Secret
	// Model is the model id sent on the wire. Required.
	Model string
	// Name is the accounting name that keys prices. Zero means Model.
	Name string
	// HTTPClient is copied, never changed. Zero means a new client with
	// providers.DefaultTimeout.
	HTTPClient *http.Client
	// MaxOutputTokens caps a reply when the request sets no cap. Zero sends no
	// cap. It is sent as max_completion_tokens to DefaultBaseURL, whose
	// reasoning models refuse max_tokens, and as max_tokens elsewhere, which
	// every compatible server reads.
	MaxOutputTokens int64
}

// ConfigFromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL.
func ConfigFromEnv() Config {
	return Config{
		APIKey:  providers.NewSecret(os.Getenv("OPENAI_API_KEY")),
		BaseURL: os.Getenv("OPENAI_BASE_URL"),
		Model:   os.Getenv("OPENAI_MODEL"),
	}
}

// FromEnv is New(ConfigFromEnv()).
func FromEnv() (*Model, error) { return New(ConfigFromEnv()) }

// String prints the configuration with the key redacted.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL:%q APIKey:%q Model:%q Name:%q HTTPClient:%t MaxOutputTokens:%d}",
		providers.RedactURL(c.BaseURL), c.APIKey.String(), c.Model, c.Name, c.HTTPClient != nil, c.MaxOutputTokens)
}

// GoString is String, so %#v redacts too.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb.
func (c Config) Format(f fmt.State, verb rune) { providers.FormatString(f, verb, c.String()) }

func (c Config) view() providers.ConfigView {
	return providers.NewConfigView(c.BaseURL, c.APIKey, c.Model, c.Name, c.HTTPClient != nil, c.MaxOutputTokens)
}

// MarshalJSON encodes the configuration with the key redacted and the client
// reduced to whether one is set.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.view()) }

// MarshalXML encodes what MarshalJSON does, as elements; without it
// encoding/xml would refuse the client's function field.
func (c Config) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(c.view(), start)
}

var _ agentrt.Model = (*Model)(nil)

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	name     string
	model    string
	baseURL  string
	endpoint string
	key      providers.Secret
	client   *http.Client
	maxOut   int64
	maxField string
}

// New validates cfg and returns a Model. It refuses an empty model, a
// negative MaxOutputTokens, and an endpoint providers.CheckEndpoint refuses.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, &agentrt.ConfigError{Field: "openai.Config.Model", Reason: "is required"}
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, &agentrt.ConfigError{Field: "openai.Config.MaxOutputTokens", Reason: fmt.Sprintf("must not be negative, got %d", cfg.MaxOutputTokens)}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	client, err := providers.ClientFor(cfg.HTTPClient, base, cfg.APIKey.IsSet())
	if err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Model
	}
	m := &Model{
		name:     name,
		model:    cfg.Model,
		baseURL:  base,
		endpoint: base + "/chat/completions",
		key:      cfg.APIKey,
		client:   client,
		maxOut:   cfg.MaxOutputTokens,
		maxField: "max_tokens",
	}
	if base == DefaultBaseURL {
		m.maxField = "max_completion_tokens"
	}
	return m, nil
}

// Name is the accounting name.
func (m *Model) Name() string { return m.name }

// Provider is "openai", as gen_ai.provider.name spells it (agentrt.ModelProvider).
func (m *Model) Provider() string { return "openai" }

// String prints the model with the key redacted.
func (m *Model) String() string {
	if m == nil {
		return "openai.Model(nil)"
	}
	return m.identity().String()
}

func (m *Model) identity() providers.Identity {
	return providers.Identity{Provider: "openai", Name: m.name, Model: m.model, BaseURL: m.baseURL, Key: m.key}
}

// GoString is String, so %#v redacts too.
func (m *Model) GoString() string { return m.String() }

// Format prints String for every verb.
func (m *Model) Format(f fmt.State, verb rune) { providers.FormatString(f, verb, m.String()) }

// MarshalJSON encodes the model with the key redacted.
func (m *Model) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	return m.identity().MarshalJSON()
}

// Generate sends req and maps the reply. It does not retry.
func (m *Model) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	enc, err := m.EncodeRequest(req)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	return m.SendEncoded(ctx, req, enc)
}

// EncodeRequest returns the exact body Generate sends for req and the
// endpoint's host (agentrt.EncodedModel), for the egress manifest.
func (m *Model) EncodeRequest(req agentrt.ModelRequest) (agentrt.EncodedRequest, error) {
	body, err := m.encode(req)
	if err != nil {
		return agentrt.EncodedRequest{}, err
	}
	host := ""
	if u, err := url.Parse(m.endpoint); err == nil {
		host = u.Host
	}
	return agentrt.EncodedRequest{Host: host, Body: body}, nil
}

// SendEncoded sends enc.Body, made by EncodeRequest, and maps the reply.
func (m *Model) SendEncoded(ctx context.Context, _ agentrt.ModelRequest, enc agentrt.EncodedRequest) (agentrt.ModelResponse, error) {
	body := enc.Body
	header := http.Header{}
	key := m.key.Reveal()
	if key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	data, err := providers.Send(ctx, m.client, provider, m.endpoint, header, body, key)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	return decode(data, key)
}
