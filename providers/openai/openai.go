package openai

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
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
func (c Config) String() string { return c.view().Text("openai.Config", "") }

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
		Auth: providers.BearerAuth, Exchange: providers.Exchange{Encode: m.encode, Decode: decode},
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, Name: cfg.Name, HTTPClient: cfg.HTTPClient, MaxOutputTokens: cfg.MaxOutputTokens})
	if err != nil {
		return nil, err
	}
	return m, nil
}
