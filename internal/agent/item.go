package agent

import (
	"encoding/json"
	"time"
)

// Roles of history items.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Block types.
const (
	BlockText       = "text"
	BlockImage      = "image"
	BlockReasoning  = "reasoning"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockJSON       = "json"
)

// Tool result statuses.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// Block is one piece of content of a history item. It is stored with every
// field; the API view (APIBlock) leaves out image bytes unless asked and never
// shows reasoning signatures.
type Block struct {
	Type string `json:"type"`
	// text, reasoning
	Text string `json:"text,omitempty"`
	// image: media type and raw bytes
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data,omitempty"`
	// reasoning: sent back to the model verbatim
	Signature string `json:"signature,omitempty"`
	Redacted  []byte `json:"redacted,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Status    string  `json:"status,omitempty"`
	Content   []Block `json:"content,omitempty"`
	// json (inside a tool_result)
	JSON json.RawMessage `json:"json,omitempty"`
}

// Item is one history entry: one model message, one user message, or all the
// results of one model turn's tool calls.
type Item struct {
	Seq       int64     `json:"seq"`
	RequestID string    `json:"request_id"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	Content   []Block   `json:"content"`
	// Compacts, on a summary entry, is what it stands in for.
	Compacts *Compaction `json:"compacts,omitempty"`
}

// TextBlock is a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// ErrorResult is an error tool result for the call id.
func ErrorResult(toolUseID, msg string) Block {
	return Block{Type: BlockToolResult, ToolUseID: toolUseID, Status: ResultError, Content: []Block{TextBlock(msg)}}
}

// ToolUses returns the tool_use blocks of the item.
func (it *Item) ToolUses() []Block {
	var out []Block
	for _, b := range it.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// Text returns the item's text blocks joined.
func (it *Item) Text() string {
	var s string
	for _, b := range it.Content {
		if b.Type == BlockText {
			s += b.Text
		}
	}
	return s
}
