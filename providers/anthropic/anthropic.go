package anthropic

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"

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
func (c Config) String() string { return c.view().Text("anthropic.Config", "") }

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
		Exchange: providers.Exchange{Encode: m.encode, Decode: decode}, Header: http.Header{"Anthropic-Version": {APIVersion}},
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, Name: cfg.Name, HTTPClient: cfg.HTTPClient, MaxOutputTokens: cfg.MaxOutputTokens})
	if err != nil {
		return nil, err
	}
	return m, nil
}
