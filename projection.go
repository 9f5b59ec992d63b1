package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// What a provider may add to a request around the bytes it is sent: the
// chat template's role and turn markers, the wrapper around each tool use
// and tool result, each tool's definition in the prompt, and a preamble
// for tool use. The numbers are generous on purpose; docs/limits.md gives
// the sources they are measured against.
const (
	// projectedPerRequest covers a request's fixed overhead. Anthropic
	// documents a tool-use system prompt of up to 346 tokens; OpenAI's
	// templates add a few tokens to prime the reply.
	projectedPerRequest = 1024
	// projectedPerMessage covers a message's role and turn markers, which
	// OpenAI documents as three or four tokens.
	projectedPerMessage = 32
	// projectedPerBlock covers the markers around one content block.
	projectedPerBlock = 16
	// projectedPerTool covers the wrapper a provider renders around a
	// tool's name, description and schema.
	projectedPerTool = 128
	// projectedJSONFactor is how many times a tool use's input and a tool's
	// schema are counted: a provider may render JSON it is sent again, with
	// a space after every separator or every non-ASCII character escaped,
	// and neither makes a compact document more than three times longer.
	projectedJSONFactor = 3
)

// TokenCounter is an optional capability of a Model: counting a request's
// input tokens exactly, as its provider's API does (Anthropic's
// count_tokens, Gemini's countTokens). The accounting caller asks it only
// under a token or cost limit, before the limit check; an error, a panic,
// or a count that is negative or implausibly large falls back to
// EstimateInputTokens, never to less.
type TokenCounter interface {
	CountInputTokens(ctx context.Context, req ModelRequest) (int64, error)
}

// EstimateInputTokens bounds the input tokens of req from above. A
// byte-level BPE token, the kind every hosted model uses, is at least one
// byte of the text it stands for, so a request cannot be more tokens than
// the bytes of what it renders to: its JSON encoding (whose escapes only
// lengthen it), with each tool use's input and each tool's schema counted
// three times, plus a generous allowance per request, message, content
// block and tool for the provider's template. Text that tokenizes at one
// token per byte, as random bytes, rare ideographs or emoji do, stays
// within it, where a guess at bytes per token would let a call cross a
// limit. The accounting caller projects each attempt with it, unless the
// model is a TokenCounter, and charges it for an attempt whose real usage
// is unknown.
func EstimateInputTokens(req ModelRequest) int64 {
	var n int64
	if b, err := json.Marshal(req); err == nil {
		n = int64(len(b))
	} else {
		// A block whose raw input is not JSON will not encode; count its
		// bytes anyway, since the adapter may still send them.
		n = rawSize(req)
	}
	n = satAdd(n, projectedPerRequest)
	for _, m := range req.Messages {
		n = satAdd(n, projectedPerMessage)
		for _, b := range m.Content {
			n = satAdd(n, projectedPerBlock)
			n = satAdd(n, (projectedJSONFactor-1)*int64(len(b.Input)))
		}
	}
	for _, t := range req.Tools {
		n = satAdd(n, projectedPerTool)
		n = satAdd(n, (projectedJSONFactor-1)*int64(len(t.InputSchema)))
	}
	return n
}

// rawSize is a generous byte count of req for when it will not encode.
func rawSize(req ModelRequest) int64 {
	const overhead = 64 // keys, quotes and punctuation around each value
	n := textSize(req.System) + overhead
	for _, m := range req.Messages {
		n += textSize(m.Role) + overhead
		for _, b := range m.Content {
			n += textSize(b.Type) + textSize(b.Text) + textSize(b.ToolUseID) + textSize(b.Name) +
				int64(len(b.Input)) + textSize(b.Content) + overhead
		}
	}
	for _, t := range req.Tools {
		n += textSize(t.Name) + textSize(t.Description) + int64(len(t.InputSchema)) + textSize(string(t.SideEffect)) + overhead
	}
	return n
}

// textSize is the bytes s is sent as once an encoder replaces each byte
// that is not UTF-8 with U+FFFD, three bytes.
func textSize(s string) int64 {
	n := int64(len(s))
	if utf8.ValidString(s) {
		return n
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 2
		}
		i += size
	}
	return n
}

// projectInput is the input tokens the limits project for req: the model's
// own count when it offers one and a token or cost limit needs it, else
// the upper bound. Asking the counter sends the request to the provider,
// so a loop that lost its lease is refused before it asks.
func (c *modelCaller) projectInput(ctx context.Context, req ModelRequest) (int64, error) {
	bound := EstimateInputTokens(req)
	tc, ok := c.cfg.Model.(TokenCounter)
	if !ok {
		return bound, nil
	}
	c.mu.Lock()
	l := c.s.run.Limits
	c.mu.Unlock()
	if l.MaxTotalTokens <= 0 && l.MaxEstimatedCost <= 0 {
		return bound, nil
	}
	if err := c.s.requireLive(); err != nil {
		return 0, err
	}
	n, err := c.count(ctx, tc, req)
	if err != nil || n < 0 || n > maxPlausibleTokens {
		return bound, nil
	}
	return n, nil
}

// count asks tc under the per-attempt timeout, turning a panic into an
// error.
func (c *modelCaller) count(ctx context.Context, tc TokenCounter, req ModelRequest) (n int64, err error) {
	timeout := c.cfg.CallTimeout
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("token counter panicked: %v", p)
		}
	}()
	return tc.CountInputTokens(cctx, req)
}
