// MCP elicitation (docs/api.md, "Pauses for input"): an MCP server's
// tools/call may answer input_required. The call has run; it asks for
// input before it gives its result. The turn pauses once its other
// running calls finish, with one pending input of kind elicitation per
// request the server made; the answers go back to the server in a new
// call of the same tool with the same arguments, the server's request
// state unchanged.

package agent

import "encoding/json"

// InputElicitation is the kind of an MCP server's request for input.
const InputElicitation = "elicitation"

// Elicitation modes.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// Elicitation is one request for input an MCP server made.
type Elicitation struct {
	// Key is the server's name for the request (its InputRequests key).
	Key  string `json:"key"`
	Mode string `json:"mode"`
	// Message is what the server says to the person.
	Message string `json:"message,omitempty"`
	// Schema, in form mode, is the schema the content must satisfy.
	Schema json.RawMessage `json:"schema,omitempty"`
	// URL and ElicitationID, in url mode: where the person goes.
	URL           string `json:"url,omitempty"`
	ElicitationID string `json:"elicitation_id,omitempty"`
}

// NeedsInput is a tool's answer that it needs input before it can give
// its result (ToolOutput.NeedsInput).
type NeedsInput struct {
	// Server names the MCP server (its URL), shown as the input's server.
	Server string `json:"server,omitempty"`
	// State is the server's request state, sent back unchanged.
	State    string        `json:"state,omitempty"`
	Requests []Elicitation `json:"requests"`
}

// Elicitation actions: what a person answers an elicitation with.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResponse is the answer to one elicitation.
type ElicitResponse struct {
	Key    string `json:"key"`
	Action string `json:"action"`
	// Content is an accepted form's content (nil for a URL or a decline).
	Content json.RawMessage `json:"content,omitempty"`
}

// InputReply is what a call that needed input runs again with
// (ToolCall.Reply): the server's state and the answers.
type InputReply struct {
	State     string           `json:"state,omitempty"`
	Responses []ElicitResponse `json:"responses"`
}
