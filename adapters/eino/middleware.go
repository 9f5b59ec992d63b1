package eino

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// Middleware is the compose.ToolMiddleware that puts every tool call under
// the guard's Gate, for a ToolsNodeConfig's ToolCallMiddlewares (an
// adk.ChatModelAgent takes it in ToolsConfig.ToolsNodeConfig). It wraps
// all four endpoint kinds; a streamed result is read whole before it is
// recorded and handed on as one chunk.
func (m *Guard) Middleware() compose.ToolMiddleware {
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return guarded(m, next, func(o *compose.ToolOutput) (string, error) { return o.Result, nil },
				func(s string) *compose.ToolOutput { return &compose.ToolOutput{Result: s} })
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return guarded(m, next, func(o *compose.StreamToolOutput) (string, error) {
				chunks, err := drain(o.Result)
				return strings.Join(chunks, ""), err
			}, func(s string) *compose.StreamToolOutput {
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{s})}
			})
		},
		EnhancedInvokable: func(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return guarded(m, next, func(o *compose.EnhancedInvokableToolOutput) (string, error) {
				return encode([]*schema.ToolResult{o.Result})
			}, func(s string) *compose.EnhancedInvokableToolOutput {
				return &compose.EnhancedInvokableToolOutput{Result: join(decode(s))}
			})
		},
		EnhancedStreamable: func(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return guarded(m, next, func(o *compose.EnhancedStreamableToolOutput) (string, error) {
				chunks, err := drain(o.Result)
				if err != nil {
					return "", err
				}
				return encode(chunks)
			}, func(s string) *compose.EnhancedStreamableToolOutput {
				return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray(decode(s))}
			})
		},
	}
}

// guarded is endpoint next under the guard: text reads next's output as
// the text recorded, wrap turns the text the model reads back into one.
func guarded[O any](m *Guard, next func(context.Context, *compose.ToolInput) (O, error), text func(O) (string, error), wrap func(string) O) func(context.Context, *compose.ToolInput) (O, error) {
	return func(ctx context.Context, in *compose.ToolInput) (O, error) {
		s, err := m.call(ctx, in, func(ctx context.Context, in *compose.ToolInput) (string, error) {
			out, err := next(ctx, in)
			if err != nil {
				return "", err
			}
			return text(out)
		})
		if err != nil {
			var zero O
			return zero, err
		}
		return wrap(s), nil
	}
}

func drain[T any](r *schema.StreamReader[T]) ([]T, error) {
	defer r.Close()
	var out []T
	for {
		c, err := r.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

// An enhanced result is recorded as the JSON of its parts; a substitute
// (plain text) reads back as one text part.
func encode(rs []*schema.ToolResult) (string, error) {
	b, err := json.Marshal(rs)
	return string(b), err
}

func decode(text string) []*schema.ToolResult {
	var rs []*schema.ToolResult
	if json.Unmarshal([]byte(text), &rs) == nil && rs != nil {
		return rs
	}
	return []*schema.ToolResult{{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text}}}}
}

func join(rs []*schema.ToolResult) *schema.ToolResult {
	out := &schema.ToolResult{}
	for _, r := range rs {
		if r != nil {
			out.Parts = append(out.Parts, r.Parts...)
		}
	}
	return out
}
