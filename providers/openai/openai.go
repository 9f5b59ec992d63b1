package openai

import (
	"fmt"
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
	// Endpoint is the model and how to reach it. Its BaseURL is the root
	// /chat/completions is appended to (zero: DefaultBaseURL); its APIKey
	// is sent as "Authorization: Bearer" (zero: no Authorization header,
	// for local servers that need none); its MaxOutputTokens is sent when
	// the request sets no cap (zero: none), as max_completion_tokens to
	// DefaultBaseURL, whose reasoning models refuse max_tokens, and as
	// max_tokens elsewhere, which every compatible server reads.
	providers.Endpoint
}

// ConfigFromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL.
func ConfigFromEnv() Config {
	return Config{Endpoint: providers.EndpointFromEnv("OPENAI")}
}

// FromEnv is New(ConfigFromEnv()).
func FromEnv() (*Model, error) { return New(ConfigFromEnv()) }

// String prints the configuration with the key redacted. The encodings
// (MarshalJSON, MarshalXML) are the Endpoint's, which redact it too.
func (c Config) String() string { return c.Endpoint.Text("openai.Config", "") }

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

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	base
	model    string
	maxOut   int64
	maxField string
}

// New validates cfg and returns a Model. It refuses an empty model, a
// negative MaxOutputTokens, and an endpoint providers.CheckEndpoint refuses.
func New(cfg Config) (*Model, error) {
	m := &Model{model: cfg.Model, maxOut: cfg.MaxOutputTokens, maxField: "max_tokens"}
	if base := strings.TrimRight(cfg.BaseURL, "/"); base == "" || base == DefaultBaseURL {
		m.maxField = "max_completion_tokens"
	}
	var err error
	m.base, err = providers.NewBase(providers.Settings{Provider: provider, DefaultBaseURL: DefaultBaseURL, Path: "/chat/completions",
		Auth: providers.BearerAuth, Exchange: providers.Exchange{Encode: m.encode, Decode: replies.Decode}, Endpoint: cfg.Endpoint})
	if err != nil {
		return nil, err
	}
	return m, nil
}
