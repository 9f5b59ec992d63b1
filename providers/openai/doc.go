// Package openai adapts any OpenAI-compatible Chat Completions endpoint
// (POST <BaseURL>/chat/completions, non-streaming) to agentrt.Model, with the
// standard library only.
//
// Environment variables read by ConfigFromEnv and FromEnv, and nowhere else:
//
//	OPENAI_API_KEY   the bearer key (Config.APIKey)
//	OPENAI_BASE_URL  the API root (Config.BaseURL), default https://api.openai.com/v1
//	OPENAI_MODEL     the model id (Config.Model)
//
// New never reads the environment, so a key set for OpenAI is not sent to a
// local server configured in code.
//
// The key stays home. It is sent only as an Authorization header, over https
// or over plain http to exactly localhost or a literal loopback address (and
// then only on a connection whose dialled address is loopback); redirects are
// never followed; Config and Model print and marshal with the key redacted;
// and no error repeats it.
//
// Replies map to the runtime's vocabulary: finish_reason tool_calls is
// tool_use, stop is end_turn, length is max_tokens, and content_filter or a
// refusal message is refusal. A reply cut off or refused carries no tool
// uses, only its text and usage. Tool-call arguments come back as the exact
// bytes the server sent, so arguments that are not valid JSON reach the
// driver verbatim and are recorded as an invalid decision. Usage that is not
// a plain non-negative integer that fits, or claims more cached than input
// tokens, is an *agentrt.ServedError with zero usage matching
// agentrt.ErrUnusableUsage.
package openai
