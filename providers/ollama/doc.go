// Package ollama adapts Ollama's native chat API (POST <BaseURL>/api/chat,
// non-streaming) to agentrt.Model, with the standard library only.
//
// Environment variables read by ConfigFromEnv and FromEnv, and nowhere else:
//
//	OLLAMA_HOST     the server (Config.BaseURL), as Ollama's own client reads
//	                it: "host:port", ":port" or a URL; default http://127.0.0.1:11434
//	OLLAMA_MODEL    the model (Config.Model)
//	OLLAMA_API_KEY  a bearer key for a hosted server (Config.APIKey); a local
//	                server needs none
//
// New never reads the environment.
//
// A local model costs nothing, but the runtime treats an unpriced model as
// unpriced: declare it free with providers.Free(m.Name()).
//
// Requests set num_ctx (Config.NumCtx, default DefaultNumCtx) because
// Ollama's own default context is small and it silently drops the start of a
// longer conversation, which is where an agent's goal is. A reply with
// done_reason length maps to max_tokens and carries no tool uses; otherwise a
// reply with tool calls is tool_use and one without is end_turn. Usage comes
// from prompt_eval_count and eval_count and is refused, as a zero-usage
// *agentrt.ServedError matching agentrt.ErrUnusableUsage, unless each is a
// plain non-negative integer that fits.
package ollama
