package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy"
)

// configDoc is a proxy configuration's JSON held generically, numbers as
// written, so that init can build one and review can rewrite its rules
// without dropping or reshaping any other field. The proxy reads the
// result through proxy.LoadConfig, which is the only judge of it.
type configDoc map[string]any

// readConfigDoc reads a configuration through mcp.ReadOwned, refusing
// what the runtime refuses as JSON (a repeated key among it).
func readConfigDoc(path string) (configDoc, error) {
	b, err := mcp.ReadOwned(path)
	if err != nil {
		return nil, err
	}
	if err := agentrt.CheckJSON(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var d configDoc
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return d, nil
}

// servers are the file's server objects, in order.
func (d configDoc) servers() []map[string]any {
	list, _ := d["servers"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// write replaces path with the document, owner-only, after
// proxy.LoadConfig accepts it from a temporary file beside path: a
// rewrite the proxy would refuse leaves the old file in place.
func (d configDoc) write(path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomicChecked(path, append(b, '\n'), 0o600, func(tmp string) error {
		if _, err := proxy.LoadConfig(tmp); err != nil {
			return fmt.Errorf("the configuration would be refused: %w", err)
		}
		return nil
	})
}
