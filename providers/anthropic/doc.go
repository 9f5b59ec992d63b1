// Package anthropic adapts Anthropic's Messages API (POST <BaseURL>/v1/messages,
// non-streaming) to agentrt.Model, with the standard library only.
//
// Environment variables read by ConfigFromEnv and FromEnv, and nowhere else:
//
//	ANTHROPIC_API_KEY   the key, sent as x-api-key (Config.APIKey)
//	ANTHROPIC_BASE_URL  the API root (Config.BaseURL), default https://api.anthropic.com
//	ANTHROPIC_MODEL     the model id (Config.Model)
//
// New never reads the environment.
//
// The key stays home: it is sent only in the x-api-key header, over https or
// over plain http to exactly localhost or a literal loopback address (then
// only on a connection whose dialled address is loopback); redirects are
// never followed; Config and Model print and marshal with the key redacted;
// and no error repeats it.
//
// Usage is reported in the runtime's terms. Cache reads count as input and
// as cached input. Cache writes are folded into input at what they cost
// relative to plain input, 1.25 times for the 5-minute cache (rounded up) and
// twice for the 1-hour cache, so one input price charges them right. Usage
// that is not a plain non-negative integer that fits, or that overflows when
// summed, is an *agentrt.ServedError with zero usage matching
// agentrt.ErrUnusableUsage.
//
// A reply stopped by max_tokens or refusal carries no tool uses, only its
// text and usage; stop_sequence maps to end_turn and other stop reasons pass
// through.
package anthropic
