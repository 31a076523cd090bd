package torture

import (
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Op kinds.
const (
	OpInvoke = "invoke" // a new task
	OpFollow = "follow" // a follow-on message in a task
	OpEdit   = "edit"
	OpResume = "resume"
	OpCancel = "cancel"
	OpGet    = "get"
	// OpReplay reads a request's event stream again (after an id,
	// reconnecting on cuts), as a client that lost its stream does.
	OpReplay = "replay"
)

// Op is one operation of the workload as a client saw it (Jepsen's
// history): what was sent, when, and what came back.
type Op struct {
	ID     int    `json:"id"`
	Worker int    `json:"worker"`
	Flow   int    `json:"flow"`
	Kind   string `json:"kind"`
	Proc   string `json:"proc"`
	Method string `json:"method"`
	// Path is the URL's path (and query) on Proc.
	Path string `json:"path"`
	Body string `json:"body,omitempty"`
	// Key is the Idempotency-Key sent, if any.
	Key   string    `json:"key,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Status is the HTTP status; 0 when no answer came (Err says why).
	Status int    `json:"status"`
	Resp   string `json:"resp,omitempty"`
	Err    string `json:"err,omitempty"`
	// RetryAfter is the answer's Retry-After header, if any.
	RetryAfter string `json:"retry_after,omitempty"`
	// Note is the generator's word on the op: the level it was sent at
	// (leaf, mid, root), stale, twice, race, …
	Note string `json:"note,omitempty"`
	// User is the bearer token sent ("": OwnerToken): one of Approvers
	// (of sre) deciding a call of a QuorumTools tool.
	User string `json:"user,omitempty"`
	// Decides, on a resume, are the leaf calls the sender was shown and
	// decides, with the action it takes on each.
	Decides []CallDecision `json:"decides,omitempty"`
	// Refuse marks a body the API must refuse (malformed, contradictory,
	// or deciding a call wrongly): any 2xx is a violation, and so is a
	// change between Before and After — the user decisions recorded at the
	// level, read just before and just after (empty when not compared).
	Refuse bool   `json:"refuse,omitempty"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Problem, on a replay, is what it found wrong with the stream (the
	// generator reads it whole; a 20,000-event stream is not kept), and
	// Events how many events the first read held.
	Problem string `json:"problem,omitempty"`
	Events  int    `json:"events,omitempty"`
}

// CallDecision is a decision on one leaf call, as a resume sends it.
type CallDecision struct {
	RequestID  string `json:"request_id"` // the leaf request
	ToolCallID string `json:"tool_call_id"`
	Action     string `json:"action"` // approve, reject, edit, answer
	// V is an edit's v, or an answer's value.
	V string `json:"v,omitempty"`
	// ElicitRound, on an answer to the form tool's elicitation, is the
	// server's round the sender was shown (elicit.go).
	ElicitRound int `json:"elicit_round,omitempty"`
}

// Result is the RequestResult an op's answer holds, if any.
func (o *Op) Result() *RequestResult {
	if o.Status == 0 || o.Resp == "" {
		return nil
	}
	var r RequestResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(o.Resp)), &r); err != nil || r.RequestID == "" || r.Status == "" {
		return nil
	}
	return &r
}

// ErrorCode is the error code of an answer ("" when none).
func (o *Op) ErrorCode() string {
	var e struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(o.Resp)), &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Code
}

// RequestResult is the part of a RequestResult the checker reads.
type RequestResult struct {
	TaskID    string        `json:"task_id"`
	RequestID string        `json:"request_id"`
	Status    string        `json:"status"`
	Round     int           `json:"round"`
	Output    string        `json:"output"`
	ResumeURL string        `json:"resume_url"`
	Pending   []PendingView `json:"pending_approvals"`
	Inputs    []PendingView `json:"pending_inputs"`
	Error     *ErrorView    `json:"error"`
}

// ErrorView is an error object.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PendingView is a pending call as a RequestResult or GET task shows it.
type PendingView struct {
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	ExpiresAt  time.Time       `json:"expires_at"`
	Round      int             `json:"round"`
	Expired    *bool           `json:"expired"`
	Agent      string          `json:"agent"`
	TaskID     string          `json:"task_id"`
	RequestID  string          `json:"request_id"`
	ResumeURL  string          `json:"resume_url"`
	// Needed, on a call whose policy is not the default, is how many
	// approvals it needs; an answer showing it still pending after a
	// decision of it recorded that decision (recorded).
	Needed int `json:"needed"`
	// Approvals and InputHash, on such a call: who approved it so far,
	// and the input they approved (an edit's).
	Approvals []struct {
		By string `json:"by"`
	} `json:"approvals"`
	InputHash string `json:"input_hash"`
	// Outcome, on a call settled while its round waits for another (an
	// approval short of a quorum elsewhere), is its decision's action: a
	// decision sent after it leaves it out.
	Outcome string `json:"outcome"`
	// Kind and Choices, on a pending input; Question and URL, on an
	// elicitation (its message, and a URL input's URL).
	Kind     string   `json:"kind"`
	Choices  []string `json:"choices"`
	Question string   `json:"question"`
	URL      string   `json:"url"`
}

// Fault is one fault the nemesis injected.
type Fault struct {
	Kind string `json:"kind"`
	Proc string `json:"proc"`
	// At is the DynamoDB operation a relay kill came at.
	At    string    `json:"at,omitempty"`
	Start time.Time `json:"start"`
	// End is when the process was back: restarted and answering, or
	// continued (SIGCONT).
	End time.Time `json:"end"`
}

// Fault kinds.
const (
	FaultKillBefore = "kill before a DynamoDB call lands"
	FaultKillAfter  = "kill after a DynamoDB call landed"
	FaultKill       = "kill at a random moment"
	FaultStallCont  = "stop past the lease, then continue"
	FaultStallKill  = "stop past the lease, then kill"
	FaultRestart    = "graceful restart"
	// FaultRestartWithout restarts a process with one agent's definition
	// left out for a few seconds (a deployment that dropped it), then
	// again with it: its requests wait, and nothing else may.
	FaultRestartWithout = "restart without an agent"
)

// Delivery is one webhook delivery attempt the receiver got.
type Delivery struct {
	Proc      string    `json:"proc"`
	ID        string    `json:"id"` // webhook-id
	Type      string    `json:"type"`
	TaskID    string    `json:"task_id"`
	RequestID string    `json:"request_id"`
	Status    string    `json:"status"`
	Round     int       `json:"round"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	// Code is what the receiver answered (it refuses some attempts at
	// random, to exercise retries).
	Code int `json:"code"`
	// Verified is whether the signature verified.
	Verified bool   `json:"verified"`
	Problem  string `json:"problem,omitempty"`
}

// Accepted is whether the receiver answered 2xx.
func (d Delivery) Accepted() bool { return d.Code >= 200 && d.Code < 300 }

// Observation is a request's status as some answer showed it at a time.
type Observation struct {
	At        time.Time
	RequestID string
	Status    string
}

// Recorder collects the history; safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	ops   []*Op
	obs   []Observation
	fault []Fault
}

// Begin records the start of an op and returns it; Finish records its end.
func (r *Recorder) Begin(op Op) *Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops) + 1
	op.Start = time.Now()
	p := &op
	r.ops = append(r.ops, p)
	return p
}

// Finish records an op's answer (status 0 and err when none came).
func (r *Recorder) Finish(op *Op, status int, resp string, err error) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	op.End, op.Status, op.Resp = end, status, resp
	if err != nil {
		op.Err = err.Error()
	}
}

// Replay records a replay, whole: it is judged by what the reader found.
func (r *Recorder) Replay(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops) + 1
	r.ops = append(r.ops, &op)
}

// Amend changes a recorded op under the recorder's lock (what the
// generator learns after the op's answer, such as a read that follows it).
func (r *Recorder) Amend(op *Op, fn func(*Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(op)
}

// Observe records statuses an answer showed.
func (r *Recorder) Observe(at time.Time, obs ...Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range obs {
		o.At = at
		r.obs = append(r.obs, o)
	}
}

// AddFault records a fault.
func (r *Recorder) AddFault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fault = append(r.fault, f)
}

// Ops returns copies of the ops recorded.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Op, len(r.ops))
	for i, p := range r.ops {
		out[i] = *p
	}
	return out
}

// Observations returns the observations recorded.
func (r *Recorder) Observations() []Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Observation(nil), r.obs...)
}

// Faults returns the faults recorded.
func (r *Recorder) Faults() []Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Fault(nil), r.fault...)
}
