package providers

import (
	"encoding/json"
	"fmt"
)

// Identity is what an adapter's Model prints about itself, in every
// encoding: its names and its endpoint with any user info redacted, and
// whether a key is set, never the key.
type Identity struct {
	Provider string // package name, e.g. "openai"
	Name     string // accounting name
	Model    string // model id on the wire
	BaseURL  string
	Key      Secret
}

// String is the %v, %+v, %#v and %s form.
func (id Identity) String() string {
	return fmt.Sprintf("%s.Model{Name:%q Model:%q BaseURL:%q APIKey:%q}",
		id.Provider, id.Name, id.Model, RedactURL(id.BaseURL), id.Key.String())
}

// MarshalJSON encodes the identity with the key redacted.
func (id Identity) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name, Model, BaseURL, APIKey string
	}{id.Name, id.Model, RedactURL(id.BaseURL), id.Key.String()})
}
