package eino

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/components/tool"
)

// Tools derives the Gate's tool specs from Eino tools
// (agentrt.FrameworkTool): name, description and JSON schema from each
// tool's Info, the class from classes (a tool with none is refused by
// agentrt.NewGate, naming it). They are registered by spec only: the body
// that runs is the Eino tool itself, reached through the middleware.
// timeout zero means agentrt.DefaultFrameworkToolTimeout.
func Tools(ctx context.Context, tools []tool.BaseTool, classes map[string]agentrt.SideEffect, timeout time.Duration) ([]agentrt.Tool, error) {
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		info, err := t.Info(ctx)
		if err != nil {
			return nil, err
		}
		var schema any
		if info.ParamsOneOf != nil {
			if schema, err = info.ParamsOneOf.ToJSONSchema(); err != nil {
				return nil, fmt.Errorf("agentrt/eino: tool %q: %w", info.Name, err)
			}
		}
		spec, err := agentrt.FrameworkTool(info.Name, info.Desc, schema, classes[info.Name], timeout)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}
