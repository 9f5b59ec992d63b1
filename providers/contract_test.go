package providers_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/internal/adaptertest"
	"github.com/agentrt/agentrt/providers/ollama"
	"github.com/agentrt/agentrt/providers/openai"
)

// The shared contract (package adaptertest) runs here once over every
// adapter, each described by its wire format; an adapter's own tests keep
// only what its format alone does.

// Every model adapter passes the whole shared contract.
func TestAdapter_SharedContract(t *testing.T) { eachAdapter(t, "") }

// No adapter follows a redirect, and the key stays home (a seed's name for
// one of the contract's cases, run for each adapter).
func TestGenerate_RedirectIsRefusedAndTheKeyStaysHome(t *testing.T) {
	eachAdapter(t, "RedirectIsRefusedAndTheKeyStaysHome")
}

// Every adapter charges usage it cannot believe nothing.
func TestGenerate_UnusableUsageIsChargedNothing(t *testing.T) {
	eachAdapter(t, "UnusableUsageIsChargedNothing")
}

// No encoding of any adapter's Config or Model shows the key.
func TestConfigAndModel_EncodeWithoutTheKey(t *testing.T) {
	eachAdapter(t, "ConfigAndModelEncodeWithoutTheKey")
}

// eachAdapter runs the contract's case called name (every case when name
// is empty) on each adapter, as a subtest named for the adapter.
func eachAdapter(t *testing.T, name string) {
	for _, a := range []adaptertest.Contract{anthropicFormat(), openaiFormat(), ollamaFormat()} {
		t.Run(a.Name(), func(t *testing.T) {
			if name == "" {
				a.Run(t)
				return
			}
			a.RunOne(t, name)
		})
	}
}

func bearer(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") }

// Anthropic's Messages API: the key in x-api-key, usage nested.
func anthropicFormat() adaptertest.Adapter[anthropic.Config, *anthropic.Model] {
	return adaptertest.Adapter[anthropic.Config, *anthropic.Model]{
		Provider: "anthropic", Key: "sk-ant-api03-test-0123456789abcdef", Path: "/v1/messages",
		DefaultBaseURL: anthropic.DefaultBaseURL, KeyRequired: true,
		Config:  func(e providers.Endpoint) anthropic.Config { return anthropic.Config{Endpoint: e} },
		New:     anthropic.New,
		SentKey: func(h http.Header) string { return h.Get("x-api-key") },
		Reply: func(text, usage string) string {
			return `{"type":"message","role":"assistant","content":[{"type":"text","text":` + strconv.Quote(text) +
				`}],"stop_reason":"end_turn","usage":` + usage + `}`
		},
		Usage: `{"input_tokens":20,"output_tokens":7}`,
		BadUsages: []string{
			`{"input_tokens":-1,"output_tokens":7}`,
			`{"input_tokens":20,"output_tokens":-7}`,
			`{"input_tokens":2.5,"output_tokens":7}`,
			`{"input_tokens":2e1,"output_tokens":7}`,
			`{"input_tokens":"20","output_tokens":7}`,
			`{"input_tokens":99999999999999999999,"output_tokens":7}`,
			`{"input_tokens":9223372036854775807,"output_tokens":7,"cache_read_input_tokens":9223372036854775807}`,
			`{"input_tokens":1,"output_tokens":7,"cache_creation_input_tokens":9223372036854775000}`,
			`{"input_tokens":1,"output_tokens":7,"cache_read_input_tokens":-3}`,
			`[]`,
		},
		ErrorBody: func(msg string) string {
			return `{"type":"error","error":{"type":"api_error","message":` + strconv.Quote(msg) + `}}`
		},
		EnvKey: "ANTHROPIC_API_KEY", EnvBaseURL: "ANTHROPIC_BASE_URL", EnvModel: "ANTHROPIC_MODEL",
		FromEnv: anthropic.FromEnv,
	}
}

// OpenAI's chat completions: a bearer key, usage nested under other names.
func openaiFormat() adaptertest.Adapter[openai.Config, *openai.Model] {
	return adaptertest.Adapter[openai.Config, *openai.Model]{
		Provider: "openai", Key: "sk-test-0123456789abcdef", Path: "/chat/completions", DefaultBaseURL: openai.DefaultBaseURL,
		Config:  func(e providers.Endpoint) openai.Config { return openai.Config{Endpoint: e} },
		New:     openai.New,
		SentKey: bearer,
		Reply: func(text, usage string) string {
			return `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` + strconv.Quote(text) +
				`},"finish_reason":"stop"}],"usage":` + usage + `}`
		},
		Usage: `{"prompt_tokens":20,"completion_tokens":7}`,
		BadUsages: []string{
			`{"prompt_tokens":-5,"completion_tokens":10}`,
			`{"prompt_tokens":5,"completion_tokens":-1}`,
			`{"prompt_tokens":5.5,"completion_tokens":10}`,
			`{"prompt_tokens":1e3,"completion_tokens":10}`,
			`{"prompt_tokens":"5","completion_tokens":10}`,
			`{"prompt_tokens":99999999999999999999999,"completion_tokens":10}`,
			`{"prompt_tokens":5,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":6}}`,
			`{"prompt_tokens":5,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":-1}}`,
			`"lots"`,
		},
		ErrorBody: func(msg string) string {
			return `{"error":{"message":` + strconv.Quote(msg) + `,"type":"invalid_request_error"}}`
		},
		EnvKey: "OPENAI_API_KEY", EnvBaseURL: "OPENAI_BASE_URL", EnvModel: "OPENAI_MODEL",
		FromEnv: openai.FromEnv,
	}
}

// Ollama's /api/chat: a bearer key for a hosted server, the counts spread
// over the reply; OLLAMA_HOST names the root.
func ollamaFormat() adaptertest.Adapter[ollama.Config, *ollama.Model] {
	return adaptertest.Adapter[ollama.Config, *ollama.Model]{
		Provider: "ollama", Key: "ollama-key-0123456789abcdef", Path: "/api/chat", DefaultBaseURL: ollama.DefaultBaseURL,
		Config:  func(e providers.Endpoint) ollama.Config { return ollama.Config{Endpoint: e} },
		New:     ollama.New,
		SentKey: bearer,
		Reply: func(text, counts string) string {
			return `{"model":"llama-test","message":{"role":"assistant","content":` + strconv.Quote(text) +
				`},"done_reason":"stop","done":true,` + counts + `}`
		},
		Usage: `"prompt_eval_count":20,"eval_count":7`,
		BadUsages: []string{
			`"prompt_eval_count":-1,"eval_count":3`,
			`"prompt_eval_count":1.5,"eval_count":3`,
			`"prompt_eval_count":2,"eval_count":1e2`,
			`"prompt_eval_count":99999999999999999999,"eval_count":3`,
			`"prompt_eval_count":"2","eval_count":3`,
		},
		ErrorBody: func(msg string) string { return `{"error":` + strconv.Quote(msg) + `}` },
		EnvKey:    "OLLAMA_API_KEY", EnvBaseURL: "OLLAMA_HOST", EnvModel: "OLLAMA_MODEL",
		FromEnv: ollama.FromEnv,
	}
}
