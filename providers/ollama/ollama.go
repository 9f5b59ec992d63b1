package ollama

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

const (
	// DefaultBaseURL is where a local Ollama listens.
	DefaultBaseURL = "http://127.0.0.1:11434"
	// DefaultNumCtx is the context window requested when Config.NumCtx is zero.
	DefaultNumCtx = 32768
)

const provider = "ollama"

// Config configures a Model.
type Config struct {
	// Endpoint is the model and how to reach it. Its BaseURL is the
	// server root /api/chat is appended to (zero: DefaultBaseURL), taken
	// as given (Host normalises OLLAMA_HOST forms); its APIKey is sent as
	// "Authorization: Bearer" to a hosted server (zero: none); its
	// MaxOutputTokens is sent as num_predict when the request sets no cap
	// (zero: none).
	providers.Endpoint
	// NumCtx is the context window requested (num_ctx). Zero means
	// DefaultNumCtx.
	NumCtx int
}

// Host turns an OLLAMA_HOST value into a base URL: "" is DefaultBaseURL,
// ":port" is 127.0.0.1:port, a value without a scheme gets http://, and a
// trailing slash is dropped. New still checks the result.
func Host(h string) string {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return DefaultBaseURL
	case strings.HasPrefix(h, ":"):
		h = "http://127.0.0.1" + h
	case !strings.Contains(h, "://"):
		h = "http://" + h
	}
	return strings.TrimRight(h, "/")
}

// ConfigFromEnv reads OLLAMA_HOST, OLLAMA_MODEL and OLLAMA_API_KEY.
func ConfigFromEnv() Config {
	return Config{Endpoint: providers.Endpoint{
		BaseURL: Host(os.Getenv("OLLAMA_HOST")),
		Model:   os.Getenv("OLLAMA_MODEL"),
		APIKey:  providers.NewSecret(os.Getenv("OLLAMA_API_KEY")),
	}}
}

// FromEnv is New(ConfigFromEnv()).
func FromEnv() (*Model, error) { return New(ConfigFromEnv()) }

// String prints the configuration with the key redacted.
func (c Config) String() string {
	return c.Endpoint.Text("ollama.Config", fmt.Sprintf(" NumCtx:%d", c.NumCtx))
}

// GoString is String, so %#v redacts too.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb.
func (c Config) Format(f fmt.State, verb rune) { providers.FormatString(f, verb, c.String()) }

// configView is the shared view plus ollama's context size.
type configView struct {
	providers.ConfigView
	NumCtx int
}

func (c Config) view() configView {
	return configView{c.Endpoint.View(), c.NumCtx}
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

// Model is an Ollama chat model. It is safe for concurrent use.
type Model struct {
	base
	model  string
	maxOut int64
	numCtx int
}

// New validates cfg and returns a Model. It refuses an empty model, a
// negative MaxOutputTokens or NumCtx, and an endpoint
// providers.CheckEndpoint refuses.
func New(cfg Config) (*Model, error) {
	m := &Model{model: cfg.Model, maxOut: cfg.MaxOutputTokens, numCtx: cfg.NumCtx}
	if m.numCtx == 0 {
		m.numCtx = DefaultNumCtx
	}
	var err error
	m.base, err = providers.NewBase(providers.Settings{Provider: provider, DefaultBaseURL: DefaultBaseURL, Path: "/api/chat",
		Auth: providers.BearerAuth, Exchange: providers.Exchange{Encode: m.encode, Decode: replies.Decode}, Endpoint: cfg.Endpoint})
	if err != nil {
		return nil, err
	}
	if cfg.NumCtx < 0 {
		return nil, &agentrt.ConfigError{Field: "ollama.Config.NumCtx", Reason: fmt.Sprintf("must not be negative, got %d", cfg.NumCtx)}
	}
	return m, nil
}
