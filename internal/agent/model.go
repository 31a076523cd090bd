package agent

import (
	"context"
	"encoding/json"
	"time"
)

// Model is a language model that streams one turn (Bedrock ConverseStream, or
// the local model over the same wire protocol).
type Model interface {
	// Converse sends the request and streams its deltas to on as they come;
	// it returns the whole message once the model ends its turn. Errors are
	// *Error with code throttled, model_error or context_window_exceeded, or
	// the context's error.
	Converse(ctx context.Context, req *ModelRequest, on func(Delta)) (*ModelResponse, error)
}

// ModelRequest is one model call.
type ModelRequest struct {
	ModelID     string
	System      string
	Messages    []Message
	Tools       []ToolSpec
	Temperature *float64
	MaxTokens   int
	// ReasoningBudget, when > 0, asks for reasoning with that many tokens;
	// the temperature is then not sent.
	ReasoningBudget int
	// CacheTTL, when > 0, asks the model to cache the request's prefix for
	// that long (5 minutes or an hour): the model marks the end of the
	// system prompt (with the tools before it) and the end of the newest
	// message as cache points. 0 sends none.
	CacheTTL time.Duration
}

// Message is one Bedrock message: role user or assistant.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Delta kinds.
const (
	DeltaThinking = "thinking"
	DeltaAnswer   = "answer"
)

// Delta is a piece of the model's streamed output.
type Delta struct {
	Kind string
	Text string
}

// Model stop reasons, as Bedrock names them.
const (
	StopEndTurn         = "end_turn"
	StopToolUse         = "tool_use"
	StopMaxTokens       = "max_tokens"
	StopSequence        = "stop_sequence"
	StopGuardrail       = "guardrail_intervened"
	StopContentFiltered = "content_filtered"
	StopContextWindow   = "model_context_window_exceeded"
	StopMaxIterations   = "max_iterations"
)

// ModelResponse is the model's whole message.
type ModelResponse struct {
	// Content holds reasoning, text and tool_use blocks in order.
	Content    []Block
	StopReason string
	Usage      Usage
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}
