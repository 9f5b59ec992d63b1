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
			return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				text, err := m.call(ctx, in, func(ctx context.Context, in *compose.ToolInput) (string, error) {
					out, err := next(ctx, in)
					if err != nil {
						return "", err
					}
					return out.Result, nil
				})
				if err != nil {
					return nil, err
				}
				return &compose.ToolOutput{Result: text}, nil
			}
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
				text, err := m.call(ctx, in, func(ctx context.Context, in *compose.ToolInput) (string, error) {
					out, err := next(ctx, in)
					if err != nil {
						return "", err
					}
					chunks, err := drain(out.Result)
					return strings.Join(chunks, ""), err
				})
				if err != nil {
					return nil, err
				}
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{text})}, nil
			}
		},
		EnhancedInvokable: func(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
				text, err := m.call(ctx, in, func(ctx context.Context, in *compose.ToolInput) (string, error) {
					out, err := next(ctx, in)
					if err != nil {
						return "", err
					}
					return encode([]*schema.ToolResult{out.Result})
				})
				if err != nil {
					return nil, err
				}
				return &compose.EnhancedInvokableToolOutput{Result: join(decode(text))}, nil
			}
		},
		EnhancedStreamable: func(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
				text, err := m.call(ctx, in, func(ctx context.Context, in *compose.ToolInput) (string, error) {
					out, err := next(ctx, in)
					if err != nil {
						return "", err
					}
					chunks, err := drain(out.Result)
					if err != nil {
						return "", err
					}
					return encode(chunks)
				})
				if err != nil {
					return nil, err
				}
				return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray(decode(text))}, nil
			}
		},
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
