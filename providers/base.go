package providers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt"
)

// Settings are what NewBase reads from every adapter's Config (its
// Endpoint), and what the adapter itself fixes: its name, its path and default root, how it sends
// the key. An adapter's New fills one and calls NewBase.
type Settings struct {
	// Provider is the adapter's package name ("openai"): it prefixes errors
	// and field names, and is gen_ai.provider.name.
	Provider string
	// DefaultBaseURL is used for an empty BaseURL.
	DefaultBaseURL string
	// Path is appended to the base URL ("/chat/completions").
	Path string
	// KeyRequired refuses a Config without a key for DefaultBaseURL.
	KeyRequired bool
	// Auth sets the key on a request's header; it is called only with a
	// key that is set. BearerAuth and HeaderAuth make the usual ones.
	Auth func(h http.Header, key string)
	// Exchange is the adapter's wire format.
	Exchange Exchange
	// Header is sent with every request besides the key's (nil for none).
	Header http.Header

	// Endpoint is the one the Config embeds, as the consumer set it.
	Endpoint
}

// BearerAuth sends the key as "Authorization: Bearer KEY".
func BearerAuth(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }

// HeaderAuth sends the key as the value of the named header.
func HeaderAuth(name string) func(http.Header, string) {
	return func(h http.Header, key string) { h.Set(name, key) }
}

// Base is what every adapter's Model shares: its names, endpoint, key,
// client and wire format, the methods that print and encode it with the
// key redacted (Name, Provider, String, GoString, Format, MarshalJSON), and
// the ones that send a request (Generate, EncodeRequest, SendEncoded). An
// adapter's Model embeds it under an unexported alias, so its methods are
// the Model's and its fields no one else's.
type Base struct {
	id       Identity
	endpoint string
	client   *http.Client
	auth     func(http.Header, string)
	x        Exchange
	header   http.Header
}

// NewBase validates s the way every adapter does and returns the Base: it
// refuses an empty model, a negative MaxOutputTokens, no key where one is
// required, and an endpoint ClientFor refuses. Each refusal is an
// *agentrt.ConfigError naming the adapter's field ("openai.Config.Model").
func NewBase(s Settings) (Base, error) {
	field := func(f string) string { return s.Provider + ".Config." + f }
	if strings.TrimSpace(s.Model) == "" {
		return Base{}, &agentrt.ConfigError{Field: field("Model"), Reason: "is required"}
	}
	if s.MaxOutputTokens < 0 {
		return Base{}, &agentrt.ConfigError{Field: field("MaxOutputTokens"), Reason: fmt.Sprintf("must not be negative, got %d", s.MaxOutputTokens)}
	}
	base := strings.TrimRight(s.BaseURL, "/")
	if base == "" {
		base = s.DefaultBaseURL
	}
	if s.KeyRequired && base == s.DefaultBaseURL && !s.APIKey.IsSet() {
		return Base{}, &agentrt.ConfigError{Field: field("APIKey"), Reason: "is required for " + s.DefaultBaseURL}
	}
	client, err := ClientFor(s.HTTPClient, base, s.APIKey.IsSet())
	if err != nil {
		return Base{}, err
	}
	name := s.Name
	if name == "" {
		name = s.Model
	}
	return Base{
		id:       Identity{Provider: s.Provider, Name: name, Model: s.Model, BaseURL: base, Key: s.APIKey},
		endpoint: base + s.Path,
		client:   client,
		auth:     s.Auth,
		x:        s.Exchange,
		header:   s.Header,
	}, nil
}

// Name is the accounting name that keys prices.
func (b *Base) Name() string { return b.id.Name }

// Provider is the adapter's name, as gen_ai.provider.name spells it
// (agentrt.ModelProvider).
func (b *Base) Provider() string { return b.id.Provider }

// String prints the model with the key redacted.
func (b *Base) String() string { return b.id.String() }

// GoString is String, so %#v redacts too.
func (b *Base) GoString() string { return b.id.String() }

// Format prints String for every verb.
func (b *Base) Format(f fmt.State, verb rune) { FormatString(f, verb, b.id.String()) }

// MarshalJSON encodes the model with the key redacted.
func (b *Base) MarshalJSON() ([]byte, error) { return b.id.MarshalJSON() }

// Exchange is one adapter's wire format: encode turns a request into the
// body to send, decode a 2xx body into the reply (key is the secret to
// keep out of any error it returns).
type Exchange struct {
	Encode func(agentrt.ModelRequest) ([]byte, error)
	Decode func(body []byte, key string) (agentrt.ModelResponse, error)
}

// Generate encodes req, sends it with the key set as the adapter sets it
// (and the adapter's extra header), and decodes the reply. It does not
// retry. Failures are classified as Send classifies them, and the key is
// in none of them.
func (b *Base) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	enc, err := b.EncodeRequest(req)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	return b.SendEncoded(ctx, req, enc)
}

// EncodeRequest is the exact body Generate sends for req and the
// endpoint's host (agentrt.EncodedModel), for the egress manifest the
// caller records before transport.
func (b *Base) EncodeRequest(req agentrt.ModelRequest) (agentrt.EncodedRequest, error) {
	body, err := b.x.Encode(req)
	if err != nil {
		return agentrt.EncodedRequest{}, err
	}
	host := ""
	if u, err := url.Parse(b.endpoint); err == nil {
		host = u.Host
	}
	return agentrt.EncodedRequest{Host: host, Body: body}, nil
}

// SendEncoded sends a body EncodeRequest made and decodes the reply as
// Generate does, so the bytes sent are the bytes the manifest names.
func (b *Base) SendEncoded(ctx context.Context, _ agentrt.ModelRequest, enc agentrt.EncodedRequest) (agentrt.ModelResponse, error) {
	header := b.header.Clone()
	if header == nil {
		header = http.Header{}
	}
	key := b.id.Key.Reveal()
	if key != "" && b.auth != nil {
		b.auth(header, key)
	}
	data, err := Send(ctx, b.client, b.id.Provider, b.endpoint, header, enc.Body, key)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	return b.x.Decode(data, key)
}
