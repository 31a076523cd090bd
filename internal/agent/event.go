package agent

import (
	"encoding/json"
	"slices"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Event names (docs/api.md Server-Sent Events). The event is spelled
// "cancelled"; it is contract.
const (
	EventRequestStarted   = "request_started"
	EventThinking         = "thinking"
	EventAnswer           = "answer"
	EventToolCall         = "tool_call"
	EventApprovalRequired = "approval_required"
	// EventApprovalRecorded: a decision counted toward a call's quorum
	// that does not settle its round (docs/api.md, "Approvers").
	EventApprovalRecorded = "approval_recorded"
	EventApproved         = "approved"
	EventRejected         = "rejected"
	EventInputRequired    = "input_required"
	EventAnswered         = "answered"
	EventToolResult       = "tool_result"
	EventCancelled        = "cancelled"
	EventError            = "error"
	EventRequestComplete  = "request_complete"
	// EventContextCompacted: a summary entry now stands in for older turns
	// (docs/guide/configuration.md, "Agent definitions" Context compaction).
	EventContextCompacted = "context_compacted"
)

// Event is one event of a request. IDs number a request's events from 1
// across all its legs.
type Event struct {
	ID   int64
	Name string
	Data any
}

// Sink receives a request's events as they happen. Emit must not block for
// long: the SSE writer buffers and detaches from a slow connection.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Emit calls f.
func (f SinkFunc) Emit(e Event) { f(e) }

type discard struct{}

func (discard) Emit(Event) {}

// Discard is a Sink that drops events: a JSON-mode client.
var Discard Sink = discard{}

// teeSink sends events to the client and to the event log.
type teeSink struct {
	client Sink
	log    *eventlog.Writer
}

func (t teeSink) Emit(e Event) {
	t.log.Add(e.ID, e.Name, e.Data)
	t.client.Emit(e)
}

// RequestResult is the outcome of a request (docs/api.md).
type RequestResult struct {
	SessionID        string        `json:"session_id"`
	TaskID           string        `json:"task_id"`
	RequestID        string        `json:"request_id"`
	Status           Status        `json:"status"`
	Output           string        `json:"output,omitempty"`
	StopReason       string        `json:"stop_reason,omitempty"`
	Round            int           `json:"round,omitempty"`
	PendingApprovals []PendingView `json:"pending_approvals,omitempty"`
	PendingInputs    []PendingView `json:"pending_inputs,omitempty"`
	ResumeURL        string        `json:"resume_url,omitempty"`
	Error            *ErrorInfo    `json:"error,omitempty"`
	Usage            Usage         `json:"usage"`
	Source           string        `json:"source"`
	// OutputTruncated marks a result sent without its output, which was
	// over the receiving service's limit (docs/architecture.md): read it with a get.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// RetryAfter (seconds) is the Retry-After of a throttled request.
	RetryAfter int `json:"-"`
}

// PendingView is a pending approval as clients see it.
type PendingView struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Input      any    `json:"input"`
	ExpiresAt  string `json:"expires_at"`
	Round      int    `json:"round"`
	Expired    *bool  `json:"expired,omitempty"`
	Rule       string `json:"rule,omitempty"`
	// On a caller waiting on a sub-agent (docs/architecture.md): the leaf request
	// that made the call, and where to decide it there.
	Agent     string `json:"agent,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	ResumeURL string `json:"resume_url,omitempty"`
	// On a pending input (docs/api.md, "Pauses for input"): its kind, and
	// what it asks.
	Kind     string   `json:"kind,omitempty"`
	Question string   `json:"question,omitempty"`
	Choices  []string `json:"choices,omitempty"`
	Schema   any      `json:"schema,omitempty"`
	// On an MCP server's request for input: the URL to open (url mode)
	// and the server.
	URL    string `json:"url,omitempty"`
	Server string `json:"server,omitempty"`
	// InputSchema, on an approval as the A2A server shows it, is the
	// tool's input schema: a caller of this agent checks an edit of the
	// call against it before it claims anything (docs/api.md, "Remote
	// agents"; Engine.WithInputSchemas).
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// On a call whose policy is not the default (docs/api.md,
	// "Approvers"): who may approve it, how many approvals it needs and
	// those in, the input they approve (an edit's: the original beside
	// it), whether its requester is excluded, and its outcome once
	// settled while its round waits for another call.
	Approvers     []string       `json:"approvers,omitempty"`
	Needed        int            `json:"needed,omitempty"`
	Approvals     []ApprovalView `json:"approvals,omitempty"`
	InputHash     string         `json:"input_hash,omitempty"`
	FourEyes      bool           `json:"four_eyes,omitempty"`
	Outcome       string         `json:"outcome,omitempty"`
	OriginalInput any            `json:"original_input,omitempty"`
}

// WithInputSchemas is pending with each approval's tool input schema
// (PendingView.InputSchema): the tool of the agent that asked (a leaf's,
// on a caller's copy; served's own otherwise). A tool this system does
// not define (a remote's, two hops down) adds none: the remote checks.
func (e *Engine) WithInputSchemas(served string, pending []PendingView) []PendingView {
	out := slices.Clone(pending)
	for i := range out {
		pv := &out[i]
		if pv.Kind != "" || pv.InputSchema != nil {
			continue
		}
		name := served
		if pv.Agent != "" {
			name = pv.Agent
		}
		if ag, ok := e.Agents.Get(name); ok {
			if bt, ok := ag.Tool(pv.Name); ok {
				pv.InputSchema = bt.Tool.Spec().InputSchema
			}
		}
	}
	return out
}
