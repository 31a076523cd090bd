// Package bedrockwire is the server side of Bedrock's ConverseStream wire
// protocol, shared by the test fake (fakebedrock) and the local model
// (localmodel): the request's JSON shape, Bedrock's message validation, and a
// writer of the application/vnd.amazon.eventstream response encoded with the
// SDK's own eventstream encoder.
//
// A server built on it is talked to by the real bedrockruntime client, so
// what the adapter sends and what it parses are checked at the wire, never
// against a mock of the SDK.
package bedrockwire

import (
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// Request is the JSON body of POST /model/{modelId}/converse-stream, as the
// service receives it. Blobs (image bytes, redacted reasoning) are base64 in
// JSON and decoded into []byte; documents stay raw JSON.
type Request struct {
	// ModelID is taken from the path, not the body.
	ModelID                      string           `json:"-"`
	Messages                     []Message        `json:"messages"`
	System                       []SystemBlock    `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig                   *ToolConfig      `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage  `json:"additionalModelRequestFields,omitempty"`
}

// Message is one message of the conversation.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is a union: exactly one field is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *Image            `json:"image,omitempty"`
	ToolUse          *ToolUse          `json:"toolUse,omitempty"`
	ToolResult       *ToolResult       `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
	CachePoint       *CachePoint       `json:"cachePoint,omitempty"`
}

// CachePoint marks the end of a prefix to cache (CachePointBlock), in the
// system prompt, a message's content or the tools; its fields take the SDK's
// own enums.
type CachePoint struct {
	Type types.CachePointType `json:"type"`
	// TTL is 5m or 1h; empty is 5m.
	TTL types.CacheTTL `json:"ttl,omitempty"`
}

// Duration is the point's TTL as a string Bedrock knows: an empty TTL is
// 5m.
func (c *CachePoint) Duration() types.CacheTTL {
	if c.TTL == "" {
		return types.CacheTTLFiveMinutes
	}
	return c.TTL
}

// Image is an image block with inline bytes.
type Image struct {
	Format string      `json:"format"`
	Source ImageSource `json:"source"`
}

// ImageSource holds the image bytes.
type ImageSource struct {
	Bytes []byte `json:"bytes,omitempty"`
}

// ToolUse is the model's call of a tool, sent back in the history.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResult answers a ToolUse.
type ToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"`
}

// ToolResultContent is a union: text, json or an image.
type ToolResultContent struct {
	Text  *string         `json:"text,omitempty"`
	JSON  json.RawMessage `json:"json,omitempty"`
	Image *Image          `json:"image,omitempty"`
}

// ReasoningContent is a union: reasoning text with its signature, or
// redacted content.
type ReasoningContent struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitempty"`
	RedactedContent []byte         `json:"redactedContent,omitempty"`
}

// ReasoningText is reasoning as the model produced it, signed.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// SystemBlock is one block of the system prompt: text or a cache point.
type SystemBlock struct {
	Text       string      `json:"text,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// InferenceConfig holds the sampling parameters.
type InferenceConfig struct {
	MaxTokens   *int     `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"topP,omitempty"`
}

// ToolConfig lists the tools the model may call.
type ToolConfig struct {
	Tools []Tool `json:"tools"`
}

// Tool is one tool of a ToolConfig, or a cache point after the tools
// before it.
type Tool struct {
	ToolSpec   *ToolSpec   `json:"toolSpec,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// ToolSpec describes a tool.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// Thinking is the anthropic-style reasoning request found in
// additionalModelRequestFields, if any.
func (r *Request) Thinking() (enabled bool, budget int) {
	var f struct {
		Thinking *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	if len(r.AdditionalModelRequestFields) == 0 || json.Unmarshal(r.AdditionalModelRequestFields, &f) != nil || f.Thinking == nil {
		return false, 0
	}
	return f.Thinking.Type == "enabled", f.Thinking.BudgetTokens
}
