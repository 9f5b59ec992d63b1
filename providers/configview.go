package providers

import "fmt"

// ConfigView is what every encoding of an adapter's Config shows: the URL
// with any credentials redacted, the key as Redacted (or "" when none is
// set), and the HTTP client only as whether one is set. An adapter with
// more settings embeds it.
type ConfigView struct {
	BaseURL         string
	APIKey          string
	Model           string
	Name            string
	HTTPClient      bool
	MaxOutputTokens int64
}

// NewConfigView builds the view of an adapter's common settings.
func NewConfigView(baseURL string, key Secret, model, name string, hasClient bool, maxOutputTokens int64) ConfigView {
	return ConfigView{RedactURL(baseURL), key.String(), model, name, hasClient, maxOutputTokens}
}

// Text is what every adapter's Config.String prints: typeName{BaseURL:…
// APIKey:… Model:… Name:… HTTPClient:… MaxOutputTokens:…}, with more (an
// adapter's own settings, " NumCtx:8") before the closing brace.
func (v ConfigView) Text(typeName, more string) string {
	return fmt.Sprintf("%s{BaseURL:%q APIKey:%q Model:%q Name:%q HTTPClient:%t MaxOutputTokens:%d%s}",
		typeName, v.BaseURL, v.APIKey, v.Model, v.Name, v.HTTPClient, v.MaxOutputTokens, more)
}
