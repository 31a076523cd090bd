package agent

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is something the model may call.
type Tool interface {
	Spec() ToolSpec
	// Run runs the tool. An error is the tool's failure, reported to the
	// model as an error result; it never fails the request.
	Run(ctx context.Context, call ToolCall) (ToolOutput, error)
}

// ToolCall is one call of a tool.
type ToolCall struct {
	ID        string
	Name      string
	Input     json.RawMessage
	RequestID string
	// IdempotencyKey is passed downstream: request_id#tool_call_id.
	IdempotencyKey string
	// Reply, on a call run again after it needed input (an MCP
	// elicitation), is the server's state and the person's answers.
	Reply *InputReply
}

// ToolOutput is a successful result: text and/or JSON blocks.
type ToolOutput struct {
	Content []Block
	// NeedsInput, when set, is the tool asking for input before it gives
	// its result (an MCP server's input_required): Content is ignored and
	// the request pauses for the input (elicit.go).
	NeedsInput *NeedsInput
}

// InputValidator is implemented by tools whose input is checked against
// their schema before they run.
type InputValidator interface {
	ValidateInput(input json.RawMessage) error
}

// ToolPolicy is how a tool is governed by an agent.
type ToolPolicy struct {
	RequiresApproval bool
	ApprovalTTL      time.Duration
	Idempotent       bool
	Timeout          time.Duration
	// Rules, when set with RequiresApproval, limit approval to the calls a
	// rule matches.
	Rules []ApprovalRule
	// InputTTL, on an input tool, is how long its calls wait for their
	// answer (0: DefaultInputTTL).
	InputTTL time.Duration
	// Approvers, when set, decide the tool's calls that need approval
	// (a rule's own replace it); nil: the task's owner (approvers.go).
	Approvers *ApproverPolicy
	// Answerers, on an input tool, may answer its calls; nil: the owner.
	Answerers []string
}

// BoundTool is a tool as an agent has it: the tool and its policy.
type BoundTool struct {
	Tool   Tool
	Policy ToolPolicy
}

// DefaultApprovalTTL is how long an approval waits when the agent says nothing.
const DefaultApprovalTTL = 24 * time.Hour
