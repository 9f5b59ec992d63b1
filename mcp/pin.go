package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/trace"
)

// Manifest is what an operator reviewed: each tool's description, input
// schema and output schema as the server presented them, with their hashes.
// Load refuses a tool that no longer matches.
type Manifest struct {
	Server   string                `json:"server"`
	PinnedAt time.Time             `json:"pinned_at"`
	Tools    map[string]PinnedTool `json:"tools"`
}

// PinnedTool is one tool's pin. The schemas are canonical JSON (sorted keys,
// numbers exactly as the server wrote them); a hash is the lowercase hex
// SHA-256 of the canonical bytes, or of the description's JSON string
// encoding. Annotations are recorded for review and for the hint check;
// they are not hashed.
type PinnedTool struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	InputSchema      json.RawMessage `json:"input_schema"`
	SchemaHash       string          `json:"schema_hash"`
	DescriptionHash  string          `json:"description_hash"`
	OutputSchema     json.RawMessage `json:"output_schema,omitempty"`
	OutputSchemaHash string          `json:"output_schema_hash,omitempty"`
	Annotations      *Annotations    `json:"annotations,omitempty"`
}

func pinOf(t *liveTool) PinnedTool {
	return PinnedTool{
		Name: t.Name, Description: t.Description,
		InputSchema: t.InputSchema, SchemaHash: t.SchemaHash, DescriptionHash: t.DescriptionHash,
		OutputSchema: t.OutputSchema, OutputSchemaHash: t.OutputSchemaHash,
		Annotations: t.Annotations,
	}
}

// Pin connects, lists the server's tools under one ConnectTimeout and
// records what it presents. A tool whose entry cannot be read soundly fails
// the pin, naming it: the operator is reviewing, and should know.
func Pin(ctx context.Context, srv Server) (*Manifest, error) {
	return withTimeout(ctx, &srv, "pin", func(ctx context.Context, opened func(*Connection)) (*Manifest, error) {
		c, err := connect(ctx, &srv)
		if err != nil {
			return nil, err
		}
		opened(c)
		defer c.Close()
		l, err := c.list(ctx)
		if err != nil {
			return nil, c.phaseError(ctx, "list tools", err)
		}
		m := &Manifest{Server: srv.Name, PinnedAt: time.Now().UTC(), Tools: map[string]PinnedTool{}}
		for _, t := range l.tools {
			if t.problem != "" && t.SchemaHash == "" {
				return nil, fmt.Errorf("mcp: server %q: tool %q: %s", srv.Name, trace.Sanitize(t.Name), trace.Sanitize(t.problem))
			}
			m.Tools[t.Name] = pinOf(t)
		}
		return m, nil
	})
}
