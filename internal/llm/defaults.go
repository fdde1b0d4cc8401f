package llm

import "time"

// Defaults of the model clients: a zero option takes them, and the `llm:`
// section of aster.yaml starts from them.
const (
	// DefaultOpenAIBaseURL is OpenAI's API; any OpenAI-compatible server (Azure
	// OpenAI, vLLM, Ollama, llama.cpp's server) works with its own base URL.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1/"
	// DefaultAnthropicBaseURL is Anthropic's API (without /v1: the SDK adds it).
	DefaultAnthropicBaseURL = "https://api.anthropic.com/"
	// DefaultAnthropicRequestTimeout is handed to Anthropic's SDK, which
	// refuses a large max_tokens on a non-streaming call without one; the
	// per-call deadline (call_timeout) is what bounds each attempt.
	DefaultAnthropicRequestTimeout = 10 * time.Minute
	// DefaultMaxOutputTokens caps the tokens of one answer.
	DefaultMaxOutputTokens = 4_096
	// DefaultMaxResponseBytes caps every response body.
	DefaultMaxResponseBytes = 8 << 20
)
