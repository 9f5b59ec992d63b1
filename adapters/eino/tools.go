package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/components/tool"
)

// DefaultToolTimeout bounds one call when Tools is given no timeout.
const DefaultToolTimeout = 10 * time.Minute

// Tools derives the Gate's tool specs from Eino tools: name, description
// and JSON schema from each tool's Info, the class from classes (a tool
// with no class is an error). They are registered by spec only: the body
// that runs is the Eino tool itself, reached through the middleware.
// timeout zero means DefaultToolTimeout.
func Tools(ctx context.Context, tools []tool.BaseTool, classes map[string]agentrt.SideEffect, timeout time.Duration) ([]agentrt.Tool, error) {
	if timeout == 0 {
		timeout = DefaultToolTimeout
	}
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		info, err := t.Info(ctx)
		if err != nil {
			return nil, err
		}
		class, ok := classes[info.Name]
		if !ok {
			return nil, fmt.Errorf("agentrt/eino: tool %q has no side-effect class in the map", info.Name)
		}
		in := json.RawMessage(`{"type":"object"}`)
		if info.ParamsOneOf != nil {
			s, err := info.ParamsOneOf.ToJSONSchema()
			if err != nil {
				return nil, fmt.Errorf("agentrt/eino: tool %q: %w", info.Name, err)
			}
			if in, err = json.Marshal(s); err != nil {
				return nil, fmt.Errorf("agentrt/eino: tool %q: %w", info.Name, err)
			}
		}
		out = append(out, agentrt.SpecOnly(agentrt.ToolSpec{Name: info.Name, Description: info.Desc,
			InputSchema: in, SideEffect: class, Timeout: timeout}))
	}
	return out, nil
}
