package agent

import (
	"encoding/json"
	"time"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Status of a task or request.
type Status string

// Statuses. A task's status is that of its latest non-superseded request.
const (
	StatusRunning   Status = "Running"
	StatusPaused    Status = "Paused"
	StatusCompleted Status = "Completed"
	StatusFailed    Status = "Failed"
	StatusCanceled  Status = "Canceled"
)

// ParseStatus checks a status given by a client.
func ParseStatus(s string) (Status, bool) {
	switch st := Status(s); st {
	case StatusRunning, StatusPaused, StatusCompleted, StatusFailed, StatusCanceled:
		return st, true
	}
	return "", false
}

// Request kinds.
const (
	KindInvoke = "invoke"
	KindEdit   = "edit"
	KindResume = "resume"
)

// Usage counts model tokens as Bedrock bills them. InputTokens are the input
// tokens billed at the full price: neither read from the prompt cache
// (CacheReadInputTokens, billed at about a tenth) nor written to it
// (CacheWriteInputTokens, billed at a premium). TotalTokens is the sum of the
// four.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
	CacheReadInputTokens  int64 `json:"cache_read_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
}

// Add sums u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:           u.InputTokens + v.InputTokens,
		OutputTokens:          u.OutputTokens + v.OutputTokens,
		TotalTokens:           u.TotalTokens + v.TotalTokens,
		CacheReadInputTokens:  u.CacheReadInputTokens + v.CacheReadInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens + v.CacheWriteInputTokens,
	}
}

// ErrorInfo is the error of a failed request.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Task is the task's META: who owns it, its status, the next history seq and
// the active request's mutable state. Version guards every read-modify-write.
type Task struct {
	ID        string `json:"task_id"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	UserID    string `json:"user_id"`
	// TenantID is the owner's tenant (the token's tid): a group names
	// approvers within it (approvers.go).
	TenantID   string            `json:"tenant_id,omitempty"`
	Status     Status            `json:"status"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Version    int64             `json:"version"`
	NextSeq    int64             `json:"next_seq"`
	WriteID    string            `json:"write_id"`
	Active     *ActiveRequest    `json:"active,omitempty"`
	Superseded []SeqRange        `json:"superseded,omitempty"`
	// RetainUntil, when retention is configured, is when every item of the
	// finished task expires (epoch seconds; 0: kept).
	RetainUntil int64 `json:"retain_until,omitempty"`
	// Trusted are the tools (and rules) a decision said to remember for
	// the rest of the task.
	Trusted []Trust `json:"trusted,omitempty"`
	// Context is where the model's context starts (compaction, docs/guide/configuration.md, "Agent definitions").
	Context ContextStart `json:"context,omitzero"`
	// ParentTaskID, on a child task, is its caller's task (docs/architecture.md).
	ParentTaskID string `json:"parent_task_id,omitempty"`
	// Children maps each sub-agent this task called to its child task: the
	// next call continues that task unless it asks for a new one.
	Children map[string]string `json:"children,omitempty"`
	// Joins are the outcomes its children put for it (JOIN# items), read
	// with the history (LoadTask, LoadContext); not part of META.
	Joins []Join `json:"-"`
	// ArtifactCount counts the task's artifacts (ART# items), so that a
	// save past MaxArtifacts is refused without reading them.
	ArtifactCount int `json:"artifact_count,omitempty"`
	// ArtifactBytes sums their sizes: what deleting the task gives back
	// to its owner's artifact quota.
	ArtifactBytes int64 `json:"artifact_bytes,omitempty"`
	// InputRefs are the JINP# items of the active round's pending calls
	// whose content META does not keep (jinp.go): the writes that follow
	// know from them what to put and what to delete.
	InputRefs []InputRef `json:"jinp,omitempty"`
}

// SeqRange is a superseded range of history entries [From, To) made by an
// edit (request SupersededBy).
type SeqRange struct {
	From         int64  `json:"from"`
	To           int64  `json:"to"`
	SupersededBy string `json:"superseded_by"`
}

// ActiveRequest is the running or paused request's mutable state, kept on META.
type ActiveRequest struct {
	ID         string    `json:"request_id"`
	Kind       string    `json:"kind"`
	Status     Status    `json:"status"`
	ClaimToken string    `json:"claim_token"`
	LeaseUntil time.Time `json:"lease_until"`
	// ClaimedAt is when the leg in force was claimed: the reaper's index
	// key while it runs (Store.ListDue), never moved by a renewal.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Takeovers counts the takeovers of dead legs since the last write of
	// a leg that held: at MaxTakeovers the request ends Failed
	// lease_expired instead of being taken over once more.
	Takeovers int       `json:"takeovers,omitempty"`
	Round     int       `json:"round"`
	CreatedAt time.Time `json:"created_at"`
	FirstSeq  int64     `json:"first_seq"`
	Usage     Usage     `json:"usage"`
	// EventCursor numbers the request's events across its legs.
	EventCursor
	Pending []PendingCall `json:"pending,omitempty"`
	// Decisions: the current round's; earlier rounds' are DEC# items
	// (Store.ListDecisions).
	Decisions []Decision `json:"decisions,omitempty"`
	CancelFlag
	// Compactions made by the request's legs so far.
	Compactions []Compaction `json:"compactions,omitempty"`
	// Waiters are the direct callers told of the request's end through the
	// outbox (docs/architecture.md); their tokens are TOK# items.
	Waiters []WaiterRef `json:"waiters,omitempty"`
	// Parent, on a child request, is its caller's call; Ancestors are its
	// callers' (task, request) from the root down (docs/architecture.md).
	Parent    *ParentRef    `json:"parent,omitempty"`
	Ancestors []TaskRequest `json:"ancestors,omitempty"`
	// Calls are the request's sub-agent calls with their child requests,
	// recorded before the children start.
	Calls []ChildCall `json:"calls,omitempty"`
	// Awaits, on a caller paused because a sub-agent paused, are the leaf
	// rounds it waits on.
	Awaits []Await `json:"awaits,omitempty"`
}

// PendingCall is a tool call awaiting a decision.
type PendingCall struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	// Input is the call's input: held in memory, never on META, which
	// refers to the ITEM#<ItemSeq> holding the tool_use instead, so that
	// META does not grow with the inputs (docs/architecture.md, The table). Readers of META
	// fill it back (Engine.pendingInputs) where they need it.
	Input   json.RawMessage `json:"-"`
	ItemSeq int64           `json:"item_seq,omitempty"`
	// Leaf, on a caller's copy of a sub-agent's pending call, is the
	// request that made it (ItemSeq is then the leaf task's entry).
	Leaf *LeafRef `json:"leaf,omitempty"`
	// RemoteInput, on a remote agent's pending call, is its input as the
	// remote showed it: there is no entry of it here to refer to.
	RemoteInput json.RawMessage `json:"remote_input,omitempty"`
	// InputSchema, on a remote agent's pending approval, is its tool's
	// input schema as the remote showed it: an edit at this caller is
	// checked against it (a decision is checked whole before anything is
	// claimed, docs/architecture.md, "Orchestration").
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	InputHash   string          `json:"input_hash"`
	ExpiresAt   time.Time       `json:"expires_at"`
	Round       int             `json:"round"`
	// Rule is the approval rule that asked, when a rule did.
	Rule string `json:"rule,omitempty"`
	// Kind, on an input call (inputs.go), is InputQuestion, InputClient
	// or InputElicitation; "" is an approval.
	Kind string `json:"kind,omitempty"`
	// Asked is what an input call asks: held in memory, filled in from the
	// call's input and its tool (Engine.pendingInputs).
	Asked *InputAsk `json:"-"`
	// Elicit, on an MCP server's request for input, is what it asked and
	// what its call runs again with (elicit.go).
	Elicit *ElicitAsk `json:"elicit,omitempty"`
	// Again, on an MCP server's next request in a call that asked in an
	// earlier round too (the same id): a decision naming it must name its
	// round (docs/api.md ResumeRequest).
	Again bool `json:"again,omitempty"`
	// Off: what the call asks (Elicit, RemoteInput) is in its JINP# item,
	// not on META (jinp.go); the stores read it back with the task.
	Off bool `json:"jinp,omitempty"`
	// Clauses are who decides the call, recorded when its round paused
	// (approvers.go); none: its task's owner alone. Approvals are the
	// decisions counted toward it so far, while its round waits.
	Clauses   []Clause   `json:"clauses,omitempty"`
	Approvals []Approval `json:"approvals,omitempty"`
	// Decided, on a call settled while its round still waits for another
	// call's approvals, is its decision; Edited/OriginalInput, on a call an
	// approval edited, is the input its later approvals approve.
	Decided *CallDecision   `json:"decided,omitempty"`
	Edited  json.RawMessage `json:"edited,omitempty"`
}

// Decision records who decided a round's calls, when and why.
type Decision struct {
	Round     int            `json:"round"`
	Approver  string         `json:"approver"`
	DecidedAt time.Time      `json:"decided_at"`
	Action    string         `json:"action"`
	Reason    *string        `json:"reason"`
	Calls     []CallDecision `json:"calls"`
	// Partial, on a caller's copy of its leaves' decision, says the round
	// showed calls it does not decide (a leaf decided at its own URL while
	// another still waited): a whole-round action (approve or reject with
	// no decisions) naming that round is not this decision.
	Partial bool `json:"partial,omitempty"`
}

// CallDecision is the decision on one call; Input is the edited input.
type CallDecision struct {
	ToolCallID string          `json:"tool_call_id"`
	Action     string          `json:"action"`
	Input      json.RawMessage `json:"input"`
	Reason     string          `json:"reason,omitempty"`
	// OriginalInput is the model's input of an edited call.
	OriginalInput json.RawMessage `json:"original_input,omitempty"`
	// InputHash binds the decision to the input it approves.
	InputHash string `json:"input_hash"`
	// Clauses and Approvals, on a call whose policy is not the default,
	// are who could decide it and the decisions counted toward it (those
	// that settled it, or the partial ones an expiry closed).
	Clauses   []Clause   `json:"clauses,omitempty"`
	Approvals []Approval `json:"approvals,omitempty"`
	// Rule is the approval rule that asked; Remember is "task" when the
	// decision trusts the tool (and rule) for the rest of the task.
	Rule     string `json:"rule,omitempty"`
	Remember string `json:"remember,omitempty"`
	// Kind is the input kind of an input call's decision ("" for an
	// approval). Result is an answer's value, kept in the round's DEC#
	// item only; ResultHash, its canonical JSON's SHA-256 (hex), is what
	// META and callers' copies keep and what "the same answer" compares.
	Kind       string          `json:"kind,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	ResultHash string          `json:"result_hash,omitempty"`
	// Elicit, on an answer to an MCP server's request for input, is what
	// the pending input held: the call runs again with it.
	Elicit *ElicitAsk `json:"elicit,omitempty"`
}

// EventCursor is where a request's events stand: the last id given out
// (across its legs), the epoch its leg in force logs under (each claim's
// own: EVT#<rid>#<epoch>#<first id>) and the cuts that end the events of
// legs taken over. Embedded, its fields stay at the item's top level.
type EventCursor struct {
	LastEventID int64          `json:"last_event_id,omitempty"`
	Epoch       int            `json:"epoch,omitempty"`
	Cuts        []eventlog.Cut `json:"cuts,omitempty"`
}

// cut ends the events of a dead leg at its last commit (what META counts):
// readers drop what it logged later, which a stalled holder may still
// flush. The next writer logs under a new epoch, numbering on after last,
// the highest id already logged.
func (c *EventCursor) cut(last int64) {
	c.Cuts = append(c.Cuts, eventlog.Cut{Epoch: c.Epoch, Last: c.LastEventID})
	c.Epoch++
	c.LastEventID = max(c.LastEventID, last)
}

// reserve gives out n ids for events logged once a write lands.
func (c *EventCursor) reserve(n int64) { c.LastEventID += n }

// RequestRecord is a finished request's record (REQ#), written once by the
// commit that ends it: what GET task shows (RequestView) and what a replay of
// its outcome needs.
type RequestRecord struct {
	RequestView
	Output   string `json:"output,omitempty"`
	Round    int    `json:"round,omitempty"`
	FirstSeq int64  `json:"first_seq,omitempty"`
	// EventCursor: where the request's events ended.
	EventCursor
	// Compactions the request made (GET task's compacted_by marks; an edit
	// rolls them back).
	Compactions []Compaction `json:"compactions,omitempty"`
	// Waiters the request's end answered.
	Waiters []WaiterRef `json:"waiters,omitempty"`
	// Calls are the request's sub-agent calls (docs/architecture.md).
	Calls []ChildCall `json:"calls,omitempty"`
	// Cascade: canceled because its caller was.
	Cascade bool `json:"cascade,omitempty"`
}

// Session groups a user's tasks.
type Session struct {
	ID        string    `json:"session_id"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionLink asks a write to upsert the session (owned by UserID) and add the
// task to its index.
type SessionLink struct {
	SessionID string
	UserID    string
	TaskID    string
	Agent     string
	CreatedAt time.Time
}

// TaskSummary is a task in a list.
type TaskSummary struct {
	TaskID    string            `json:"task_id"`
	SessionID string            `json:"session_id"`
	Agent     string            `json:"agent"`
	Status    Status            `json:"status"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Metadata  map[string]string `json:"metadata"`
	// ParentTaskID, on a sub-agent's task, is its caller's task.
	ParentTaskID string `json:"parent_task_id,omitempty"`
}

// Summary returns the task as a list shows it.
func (t *Task) Summary() TaskSummary {
	md := t.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return TaskSummary{TaskID: t.ID, SessionID: t.SessionID, Agent: t.Agent, Status: t.Status, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Metadata: md,
		ParentTaskID: t.ParentTaskID}
}

// IsSuperseded tells whether the entry seq is hidden by an edit, and by which request.
func (t *Task) IsSuperseded(seq int64) (string, bool) {
	for _, r := range t.Superseded {
		if seq >= r.From && seq < r.To {
			return r.SupersededBy, true
		}
	}
	return "", false
}

// Clone returns a deep copy of the task.
func (t *Task) Clone() *Task {
	if t == nil {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		panic("agent: task does not marshal: " + err.Error())
	}
	var c Task
	if err := json.Unmarshal(b, &c); err != nil {
		panic("agent: task does not unmarshal: " + err.Error())
	}
	c.Joins = t.Joins // read with the task, never written with it
	return &c
}
