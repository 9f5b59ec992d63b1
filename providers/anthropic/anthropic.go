package anthropic

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

const (
	// DefaultBaseURL is Anthropic's API root.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxOutputTokens is sent when neither the request nor the Config
	// sets a cap; the API requires one.
	DefaultMaxOutputTokens = 4096
	// APIVersion is the anthropic-version header sent with every request.
	APIVersion = "2023-06-01"
)

const provider = "anthropic"

// Config configures a Model.
type Config struct {
	// BaseURL is the API root that /v1/messages is appended to. Zero means
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key. Required for DefaultBaseURL; zero sends no
	// key, for a local gateway that needs none.
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
	// MaxOutputTokens caps a reply when the request sets no cap. Zero means
	// DefaultMaxOutputTokens.
	MaxOutputTokens int64
}

// ConfigFromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_MODEL.
func ConfigFromEnv() Config {
	return Config{
		APIKey:  providers.NewSecret(os.Getenv("ANTHROPIC_API_KEY")),
		BaseURL: os.Getenv("ANTHROPIC_BASE_URL"),
		Model:   os.Getenv("ANTHROPIC_MODEL"),
	}
}

// FromEnv is New(ConfigFromEnv()).
func FromEnv() (*Model, error) { return New(ConfigFromEnv()) }

// String prints the configuration with the key redacted.
func (c Config) String() string {
	return fmt.Sprintf("anthropic.Config{BaseURL:%q APIKey:%q Model:%q Name:%q HTTPClient:%t MaxOutputTokens:%d}",
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

// Model is an Anthropic model. It is safe for concurrent use.
type Model struct {
	name     string
	model    string
	baseURL  string
	endpoint string
	key      providers.Secret
	client   *http.Client
	maxOut   int64
}

// New validates cfg and returns a Model. It refuses an empty model, a
// negative MaxOutputTokens, no key for DefaultBaseURL, and an endpoint
// providers.CheckEndpoint refuses.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, &agentrt.ConfigError{Field: "anthropic.Config.Model", Reason: "is required"}
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, &agentrt.ConfigError{Field: "anthropic.Config.MaxOutputTokens", Reason: fmt.Sprintf("must not be negative, got %d", cfg.MaxOutputTokens)}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if base == DefaultBaseURL && !cfg.APIKey.IsSet() {
		return nil, &agentrt.ConfigError{Field: "anthropic.Config.APIKey", Reason: "is required for " + DefaultBaseURL}
	}
	client, err := providers.ClientFor(cfg.HTTPClient, base, cfg.APIKey.IsSet())
	if err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Model
	}
	maxOut := cfg.MaxOutputTokens
	if maxOut == 0 {
		maxOut = DefaultMaxOutputTokens
	}
	return &Model{
		name:     name,
		model:    cfg.Model,
		baseURL:  base,
		endpoint: base + "/v1/messages",
		key:      cfg.APIKey,
		client:   client,
		maxOut:   maxOut,
	}, nil
}

// Name is the accounting name.
func (m *Model) Name() string { return m.name }

// Provider is "anthropic", as gen_ai.provider.name spells it (agentrt.ModelProvider).
func (m *Model) Provider() string { return "anthropic" }

// String prints the model with the key redacted.
func (m *Model) String() string {
	if m == nil {
		return "anthropic.Model(nil)"
	}
	return m.identity().String()
}

func (m *Model) identity() providers.Identity {
	return providers.Identity{Provider: "anthropic", Name: m.name, Model: m.model, BaseURL: m.baseURL, Key: m.key}
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
	body, err := m.encode(req)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	header := http.Header{}
	header.Set("anthropic-version", APIVersion)
	key := m.key.Reveal()
	if key != "" {
		header.Set("x-api-key", key)
	}
	data, err := providers.Send(ctx, m.client, provider, m.endpoint, header, body, key)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	return decode(data, key)
}
