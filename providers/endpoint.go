package providers

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
)

// Endpoint is the model an adapter talks to and how: what every adapter's
// Config embeds, so cfg.BaseURL and the rest read the same in each. An
// adapter's Config says what a zero field means for it (its default root,
// how it sends the key, its default output cap). No encoding of an
// Endpoint, or of a Config embedding one, shows the key or the client.
type Endpoint struct {
	// BaseURL is the API root the adapter's path is appended to. Zero
	// means the adapter's DefaultBaseURL.
	BaseURL string
	// APIKey is the key, sent as the adapter sends it. Zero sends none,
	// for a local server that needs none. Make one with NewSecret.
	APIKey Secret
	// Model is the model id sent on the wire. Required.
	Model string
	// Name is the accounting name that keys prices. Zero means Model.
	Name string
	// HTTPClient is copied, never changed. Zero means a new client with
	// DefaultTimeout.
	HTTPClient *http.Client
	// MaxOutputTokens caps a reply when the request sets no cap. Zero
	// means the adapter's default; negative is refused.
	MaxOutputTokens int64
}

// EndpointFromEnv reads PREFIX_API_KEY, PREFIX_BASE_URL and PREFIX_MODEL
// ("OPENAI" reads OPENAI_API_KEY, …), the variables of an adapter whose
// ConfigFromEnv follows the common scheme.
func EndpointFromEnv(prefix string) Endpoint {
	return Endpoint{
		APIKey:  NewSecret(os.Getenv(prefix + "_API_KEY")),
		BaseURL: os.Getenv(prefix + "_BASE_URL"),
		Model:   os.Getenv(prefix + "_MODEL"),
	}
}

// ConfigView is what every encoding of an Endpoint shows: the URL with any
// credentials redacted, the key as Redacted (or "" when none is set), and
// the HTTP client only as whether one is set. An adapter with more
// settings embeds it in its own view.
type ConfigView struct {
	BaseURL         string
	APIKey          string
	Model           string
	Name            string
	HTTPClient      bool
	MaxOutputTokens int64
}

// View is e as its encodings show it.
func (e Endpoint) View() ConfigView {
	return ConfigView{RedactURL(e.BaseURL), e.APIKey.String(), e.Model, e.Name, e.HTTPClient != nil, e.MaxOutputTokens}
}

// Text is what an adapter's Config.String prints: typeName{BaseURL:…
// APIKey:… Model:… Name:… HTTPClient:… MaxOutputTokens:…}, with more (an
// adapter's own settings, " NumCtx:8") before the closing brace.
func (e Endpoint) Text(typeName, more string) string {
	v := e.View()
	return fmt.Sprintf("%s{BaseURL:%q APIKey:%q Model:%q Name:%q HTTPClient:%t MaxOutputTokens:%d%s}",
		typeName, v.BaseURL, v.APIKey, v.Model, v.Name, v.HTTPClient, v.MaxOutputTokens, more)
}

// String prints the endpoint with the key redacted.
func (e Endpoint) String() string { return e.Text("providers.Endpoint", "") }

// GoString is String, so %#v redacts too.
func (e Endpoint) GoString() string { return e.String() }

// Format prints String for every verb.
func (e Endpoint) Format(f fmt.State, verb rune) { FormatString(f, verb, e.String()) }

// MarshalJSON encodes the View: the key redacted, the client reduced to
// whether one is set. A Config embedding the Endpoint and adding nothing
// encodes as this too.
func (e Endpoint) MarshalJSON() ([]byte, error) { return json.Marshal(e.View()) }

// MarshalXML encodes what MarshalJSON does, as elements; without it
// encoding/xml would refuse the client's function field.
func (e Endpoint) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	return enc.EncodeElement(e.View(), start)
}
