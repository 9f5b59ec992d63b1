package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// Middleware is the compose.ToolMiddleware that puts every tool call
// under gate, for a ToolsNodeConfig's ToolCallMiddlewares (an
// adk.ChatModelAgent takes it in ToolsConfig.ToolsNodeConfig). It runs
// only the tools classes names (those given to Tools and registered with
// the gate): any other tool's call is refused as a substitute result. It
// wraps all four endpoint kinds; a streamed result is read whole before it
// is recorded and handed on as one chunk.
func Middleware(gate *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) compose.ToolMiddleware {
	if opts.Goal == "" {
		opts.Goal = "eino agent"
	}
	classes = maps.Clone(classes)
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return guarded(gate, classes, opts, next, func(o *compose.ToolOutput) (string, error) { return o.Result, nil },
				func(s string) *compose.ToolOutput { return &compose.ToolOutput{Result: s} })
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return guarded(gate, classes, opts, next, func(o *compose.StreamToolOutput) (string, error) {
				chunks, err := drain(o.Result)
				return strings.Join(chunks, ""), err
			}, func(s string) *compose.StreamToolOutput {
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{s})}
			})
		},
		EnhancedInvokable: func(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return guarded(gate, classes, opts, next, func(o *compose.EnhancedInvokableToolOutput) (string, error) { return encode(o.Result) },
				func(s string) *compose.EnhancedInvokableToolOutput {
					return &compose.EnhancedInvokableToolOutput{Result: decode(s)}
				})
		},
		EnhancedStreamable: func(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return guarded(gate, classes, opts, next, func(o *compose.EnhancedStreamableToolOutput) (string, error) {
				chunks, err := drain(o.Result)
				if err != nil {
					return "", err
				}
				r, err := schema.ConcatToolResults(chunks)
				if err != nil {
					return "", err
				}
				return encode(r)
			}, func(s string) *compose.EnhancedStreamableToolOutput {
				return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{decode(s)})}
			})
		},
	}
}

var errNoRun = errors.New("agentrt/eino: the call has no run id: start the run with eino.RunOptions(id)... or a context from eino.WithRunID")

// guarded is endpoint next under gate (Gate.Reply): text reads next's
// output as the text recorded, wrap turns the text the model reads back
// into one. next, the framework's own tool, runs only through the gate, so
// at most once and after its start is recorded. The model reads the
// recorded result, the tool's own error as Eino would have had it, or a
// substitute saying why not.
func guarded[O any](gate *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options, next func(context.Context, *compose.ToolInput) (O, error),
	text func(O) (string, error), wrap func(string) O) func(context.Context, *compose.ToolInput) (O, error) {
	return func(ctx context.Context, in *compose.ToolInput) (O, error) {
		var zero O
		if _, ok := classes[in.Name]; !ok {
			return wrap(string(agentrt.Reply{Refusal: fmt.Sprintf("agentrt/eino: %q is not among the tools this middleware governs", in.Name)}.ErrorJSON())), nil
		}
		runID := runIDFrom(ctx)
		if runID == "" {
			return zero, errNoRun
		}
		rep, err := gate.Reply(ctx, opts.Call(runID, in.CallID, in.Name, json.RawMessage(in.Arguments),
			func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				c := *in
				c.Arguments = string(args)
				out, err := next(ctx, &c)
				if err != nil {
					return nil, err
				}
				s, err := text(out)
				if err != nil {
					return nil, err
				}
				return json.Marshal(s)
			}))
		switch {
		case err != nil:
			return zero, err
		case rep.Pending != nil:
			p := Pending{RunID: rep.Pending.RunID, ApprovalID: rep.Pending.ID, Tool: in.Name, CallID: in.CallID}
			return zero, compose.StatefulInterrupt(ctx, p, rep.Pending.ID)
		case rep.Refusal != "":
			return wrap(string(rep.ErrorJSON())), nil
		}
		var s string
		if json.Unmarshal(rep.Result, &s) != nil {
			s = string(rep.Result)
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

// An enhanced result (a stream's, concatenated) is recorded as its JSON;
// a substitute ({"error": ...}) reads back as one text part.
func encode(r *schema.ToolResult) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

func decode(text string) *schema.ToolResult {
	var r schema.ToolResult
	if json.Unmarshal([]byte(text), &r) == nil && (len(r.Parts) > 0 || text == "{}") {
		return &r
	}
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text}}}
}
