package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Orchestration (docs/architecture.md): an agent calls other agents as tools; a call
// runs the sub-agent as a request in a child task; a child that pauses
// pauses its callers up to the root; a decision at the leaf or at any caller
// continues the chain.

// KindContinue is the kind of a caller's leg that goes on after a sub-agent
// ended or paused again.
const KindContinue = "continue"

// EventChild carries a sub-agent's event in its caller's stream.
const EventChild = "child"

// MaxAgentDepth is how deep definitions may nest agents as tools.
const MaxAgentDepth = 5

// AgentTool is a tool that calls another agent of the deployment: `- agent:
// NAME` in a definition. The engine runs it; Run is never called.
type AgentTool struct {
	// Agent is the sub-agent's name, which is also the tool's.
	Agent       string
	Description string
	// DefinedAt is where a definition names it (start-up errors).
	DefinedAt string
	// Remote, on an `a2a:` entry, is the remote A2A agent the tool calls
	// (docs/architecture.md and docs/api.md); nil: an agent of this deployment.
	Remote RemoteAgent
}

// agentToolSchema is the input of every agent tool.
const agentToolSchema = `{"type":"object","properties":{` +
	`"message":{"type":"string","description":"What to ask the agent: the whole task, in words it understands without this conversation."},` +
	`"new_task":{"type":"boolean","description":"true starts a new task with the agent instead of continuing the one this task already has with it."}},` +
	`"required":["message"],"additionalProperties":false}`

// Spec is the tool as the model sees it.
func (t *AgentTool) Spec() ToolSpec {
	return ToolSpec{Name: t.Agent, Description: t.Description, InputSchema: json.RawMessage(agentToolSchema)}
}

// Run is not how an agent tool runs: the engine runs the child request.
func (t *AgentTool) Run(context.Context, ToolCall) (ToolOutput, error) {
	return ToolOutput{}, errors.New("an agent tool runs through the engine")
}

// ValidateInput checks {message, new_task?}.
func (t *AgentTool) ValidateInput(in json.RawMessage) error {
	_, err := parseAgentInput(in)
	return err
}

// agentInput is an agent tool's input.
type agentInput struct {
	Message string
	NewTask bool
}

func parseAgentInput(in json.RawMessage) (agentInput, error) {
	var v struct {
		Message *string `json:"message"`
		NewTask *bool   `json:"new_task"`
	}
	dec := json.NewDecoder(bytes.NewReader(inputOrEmpty(in)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return agentInput{}, fmt.Errorf(`want {"message": string, "new_task": boolean (optional)}: %s`, jsonProblem(err))
	}
	if v.Message == nil || strings.TrimSpace(*v.Message) == "" {
		return agentInput{}, errors.New("message is required: what to ask the agent")
	}
	out := agentInput{Message: *v.Message}
	if v.NewTask != nil {
		out.NewTask = *v.NewTask
	}
	return out, nil
}

// ParentRef names the call that made a child request.
type ParentRef struct {
	Agent      string `json:"agent"`
	TaskID     string `json:"task_id"`
	RequestID  string `json:"request_id"`
	ToolCallID string `json:"tool_call_id"`
}

// TaskRequest is a request by its task and id.
type TaskRequest struct {
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
}

// ChildCall is a sub-agent call of a request and the child request that
// runs it (calls[].child): made before the child starts, so that a cancel
// or a takeover can always find it.
type ChildCall struct {
	ToolCallID string `json:"tool_call_id"`
	Agent      string `json:"agent"`
	TaskID     string `json:"task_id"`
	RequestID  string `json:"request_id"`
	// NewTask: the call creates the child task.
	NewTask bool `json:"new_task,omitempty"`
	// Remote, on a call of a remote A2A agent, is its URL: TaskID is the
	// remote context and RequestID the remote task, both known once the
	// remote answered the message MessageID (made before it is sent, the
	// same when it is sent again).
	Remote    string `json:"remote,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// SentAt, on a remote call, is when its message was first sent: once
	// request_timeout passed since then with no answer (no task learned),
	// the call is closed outcome_unknown (remote.go, closeSilent).
	SentAt time.Time `json:"sent_at,omitzero"`
	// Part, on a remote call, is a caller's decision's part for its remote
	// leaf, committed with the caller's claim and sent after it: kept
	// until the remote took it or refused it, so that a send that failed
	// on the way (the remote's system down) is sent again by later legs
	// with the same message id — never taken for a refusal that would
	// pause the caller again (docs/api.md, Agents as tools).
	Part *RemotePart `json:"part,omitempty"`
	// QuietSince, on a remote call whose task was learned, is when the
	// remote last answered before a leg handed the call on having read
	// nothing of its task: once request_timeout passed since then and a
	// read still gets nothing, the call is closed outcome_unknown
	// (remote.go, closeSilent). Any answer clears it.
	QuietSince time.Time `json:"quiet_since,omitzero"`
}

// RemotePart is a caller's decision's part for a remote leaf (ChildCall.Part).
type RemotePart struct {
	// Round is the caller's round (its DecisionKey's), LeafRound the
	// remote task's round the part decides.
	Round     int           `json:"round"`
	LeafRound int           `json:"leaf_round"`
	Body      ResumeRequest `json:"body"`
	// DecidedAt is when the caller's claim took it: once request_timeout
	// passed since then with no answer from the remote, the call is
	// closed outcome_unknown.
	DecidedAt time.Time `json:"decided_at"`
}

// Await is a leaf round a paused caller waits on: the leaf request, its
// round and the calls shown, and Via, the caller's own sub-agent call
// through which it is reached.
type Await struct {
	Agent       string   `json:"agent"`
	TaskID      string   `json:"task_id"`
	RequestID   string   `json:"request_id"`
	Round       int      `json:"round"`
	ToolCallIDs []string `json:"tool_call_ids"`
	Via         string   `json:"via"`
}

// LeafRef is the request that made a pending call a caller shows.
type LeafRef struct {
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
	// URL, for a remote leaf, is where it is decided on its own system
	// (its resume URL there).
	URL string `json:"url,omitempty"`
}

// WaitingOn is a request a paused caller waits on (GET task's waiting_on).
type WaitingOn struct {
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
}

// Join is a child's outcome put for its caller by the transaction that
// ends the child (JOIN#<caller rid>#<tool call id>, in the caller's task,
// docs/architecture.md): the caller's next read of its task (LoadTask, LoadContext)
// brings it along, so a continuation reads no child.
type Join struct {
	CallerTaskID string `json:"caller_task_id"`
	// RequestID and ToolCallID are the caller's request and call.
	RequestID  string `json:"request_id"`
	ToolCallID string `json:"tool_call_id"`
	// The child: its agent, task and request.
	Agent          string     `json:"agent"`
	TaskID         string     `json:"task_id"`
	ChildRequestID string     `json:"child_request_id"`
	Status         Status     `json:"status"`
	Output         string     `json:"output,omitempty"`
	Error          *ErrorInfo `json:"error,omitempty"`
	CanceledBy     string     `json:"canceled_by,omitempty"`
	CancelReason   string     `json:"cancel_reason,omitempty"`
	// Decision is the child's last decided round (its own, or the one it
	// copied from its leaf): what its callers copy.
	Decision *Decision `json:"decision,omitempty"`
}

// JoinSK is a join's sort key under its caller's task.
func JoinSK(requestID, toolCallID string) string { return "JOIN#" + requestID + "#" + toolCallID }

// joinsOf derives the joins a write owes: one for each child request it
// ends (a record with a parent).
func joinsOf(w *Write) []Join {
	var out []Join
	for _, r := range w.Requests {
		p := r.Parent
		if p == nil {
			continue
		}
		j := Join{CallerTaskID: p.TaskID, RequestID: p.RequestID, ToolCallID: p.ToolCallID, Agent: w.Task.Agent, TaskID: w.Task.ID,
			ChildRequestID: r.RequestID, Status: r.Status, Output: r.Output, Error: r.Error}
		if r.CanceledBy != nil {
			j.CanceledBy = *r.CanceledBy
		}
		if r.CancelReason != nil {
			j.CancelReason = *r.CancelReason
		}
		if n := len(r.Decisions); n > 0 {
			d := r.Decisions[n-1]
			j.Decision = &d
		}
		out = append(out, j)
	}
	return out
}
