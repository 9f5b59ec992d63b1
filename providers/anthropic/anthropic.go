package anthropic

import (
	"fmt"
	"net/http"

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
	// Endpoint is the model and how to reach it. Its BaseURL is the root
	// /v1/messages is appended to (zero: DefaultBaseURL); its APIKey is
	// sent as x-api-key, required for DefaultBaseURL (zero elsewhere sends
	// none, for a local gateway that needs none); its MaxOutputTokens is
	// sent when the request sets no cap (zero: DefaultMaxOutputTokens,
	// since the API requires one).
	providers.Endpoint
}

// ConfigFromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_MODEL.
func ConfigFromEnv() Config {
	return Config{Endpoint: providers.EndpointFromEnv("ANTHROPIC")}
}

// FromEnv is New(ConfigFromEnv()).
func FromEnv() (*Model, error) { return New(ConfigFromEnv()) }

// String prints the configuration with the key redacted. The encodings
// (MarshalJSON, MarshalXML) are the Endpoint's, which redact it too.
func (c Config) String() string { return c.Endpoint.Text("anthropic.Config", "") }

// GoString is String, so %#v redacts too.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb.
func (c Config) Format(f fmt.State, verb rune) { providers.FormatString(f, verb, c.String()) }

var (
	_ agentrt.Model        = (*Model)(nil)
	_ agentrt.EncodedModel = (*Model)(nil)
)

// base gives Model the shared methods without a field others can reach.
type base = providers.Base

// Model is an Anthropic model. It is safe for concurrent use.
type Model struct {
	base
	model  string
	maxOut int64
}

// New validates cfg and returns a Model. It refuses an empty model, a
// negative MaxOutputTokens, no key for DefaultBaseURL, and an endpoint
// providers.CheckEndpoint refuses.
func New(cfg Config) (*Model, error) {
	m := &Model{model: cfg.Model, maxOut: cfg.MaxOutputTokens}
	if m.maxOut == 0 {
		m.maxOut = DefaultMaxOutputTokens
	}
	var err error
	m.base, err = providers.NewBase(providers.Settings{Provider: provider, DefaultBaseURL: DefaultBaseURL, Path: "/v1/messages",
		KeyRequired: true, Auth: providers.HeaderAuth("x-api-key"),
		Exchange: providers.Exchange{Encode: m.encode, Decode: replies.Decode}, Header: http.Header{"Anthropic-Version": {APIVersion}}, Endpoint: cfg.Endpoint})
	if err != nil {
		return nil, err
	}
	return m, nil
}
