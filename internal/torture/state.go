package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Task is a task as GET task showed it, with the process serving it.
type Task struct {
	Proc         string        `json:"proc"`
	TaskID       string        `json:"task_id"`
	Agent        string        `json:"agent"`
	Status       string        `json:"status"`
	ParentTaskID string        `json:"parent_task_id"`
	Round        int           `json:"round"`
	Items        []Item        `json:"items"`
	NextAfterSeq *int64        `json:"next_after_seq"`
	Requests     []Request     `json:"requests"`
	Pending      []PendingView `json:"pending_approvals"`
	Inputs       []PendingView `json:"pending_inputs"`
	WaitingOn    []WaitingOn   `json:"waiting_on"`
}

// shown are the calls a paused task shows: its approvals and inputs.
func (t *Task) shown() []PendingView {
	return append(append([]PendingView(nil), t.Pending...), t.Inputs...)
}

// Item is a history entry.
type Item struct {
	Seq          int64   `json:"seq"`
	RequestID    string  `json:"request_id"`
	Role         string  `json:"role"`
	Content      []Block `json:"content"`
	SupersededBy string  `json:"superseded_by"`
}

// Block is a content block of an item, or of a tool result.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Status    string          `json:"status"`
	Content   []Block         `json:"content"`
	JSON      json.RawMessage `json:"json"`
}

// Request is a request of a task.
type Request struct {
	RequestID    string     `json:"request_id"`
	Kind         string     `json:"kind"`
	Status       string     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	Error        *ErrorView `json:"error"`
	Decisions    []Decision `json:"decisions"`
	CanceledBy   *string    `json:"canceled_by"`
	SupersededBy *string    `json:"superseded_by"`
	Parent       *ParentRef `json:"parent"`
}

// ParentRef is a child request's caller.
type ParentRef struct {
	Agent      string `json:"agent"`
	TaskID     string `json:"task_id"`
	RequestID  string `json:"request_id"`
	ToolCallID string `json:"tool_call_id"`
}

// Decision is a decided round.
type Decision struct {
	Round     int            `json:"round"`
	Approver  string         `json:"approver"`
	DecidedAt time.Time      `json:"decided_at"`
	Action    string         `json:"action"`
	Calls     []DecisionCall `json:"calls"`
}

// DecisionCall is one call's decision.
type DecisionCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Action     string          `json:"action"`
	Input      json.RawMessage `json:"input"`
	// Result is an answer's value (the leaf's record; callers' copies
	// keep its hash).
	Result json.RawMessage `json:"result"`
	// ResultHash is an answer's SHA-256 (hex) of its canonical JSON: what
	// the leaf's record and every caller's copy keep (docs/api.md, Pauses
	// for input).
	ResultHash string `json:"result_hash,omitempty"`
	// Approvals, on a call whose policy is not the default, are the
	// decisions that settled it (docs/api.md, Approvers).
	Approvals []struct {
		By     string `json:"by"`
		Action string `json:"action"`
	} `json:"approvals,omitempty"`
}

// WaitingOn is a request a paused caller waits on.
type WaitingOn struct {
	Agent     string `json:"agent"`
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
}

// Approver of a round closed by expiry.
const ApproverExpiry = "system:expiry"

// Req is a request of the final state, linked to its caller and children.
type Req struct {
	Proc, Agent, TaskID, ID string
	Kind, Status            string
	ErrorCode               string
	// Text is the request's user message.
	Text       string
	Task       *Task
	Parent     *Req
	ParentCall string
	Children   []*Req
	Decisions  []Decision
	Calls      []*Call
	Superseded bool
}

// Finished is whether the request ended.
func (r *Req) Finished() bool { return Terminal(r.Status) }

// Terminal is whether a status is an end.
func Terminal(s string) bool { return s == "Completed" || s == "Failed" || s == "Canceled" }

// Root is the request at the top of r's chain.
func (r *Req) Root() *Req {
	for r.Parent != nil {
		r = r.Parent
	}
	return r
}

// Below is r and every request under it.
func (r *Req) Below() []*Req {
	out := []*Req{r}
	for _, c := range r.Children {
		out = append(out, c.Below()...)
	}
	return out
}

// Chain is r and its callers up to the root.
func (r *Req) Chain() []*Req {
	var out []*Req
	for ; r != nil; r = r.Parent {
		out = append(out, r)
	}
	return out
}

// Call is a tool call of the final state, with its result and decision.
type Call struct {
	Req  *Req
	ID   string
	Name string
	// Tag and V are the test tools' input; Message a sub-agent call's.
	Tag, V, Message string
	Result          *Block
	// ResultText is the result's text and JSON, joined.
	ResultText string
	// Results counts the history's results of the call (one at most).
	Results int
	// Decision is the decision on this call, if its round was decided.
	Decision *CallVerdict
}

// Key is the call's idempotency key: <request_id>#<tool_call_id>.
func (c *Call) Key() string { return c.Req.ID + "#" + c.ID }

// CallVerdict is the decision recorded on one call.
type CallVerdict struct {
	Round     int
	Approver  string
	Action    string
	DecidedAt time.Time
	// V is the edited input's v, for an edit; the answer, for an answer.
	V string
	// Approvers, on a call of a QuorumTools tool, are who approved (or
	// edited) it, as the recorded decision says.
	Approvers []string
}

// World is the final state, indexed.
type World struct {
	Tasks map[string]*Task
	Reqs  map[string]*Req
	Calls map[string]*Call
	// Order lists the requests in a stable order (process, task, request).
	Order []*Req
}

// NewWorld indexes tasks: requests, their calls and decisions, and the
// links between callers and children — a local child names its caller;
// a remote child (on the other process, over A2A) is found by its user
// message, which is the caller's call's message (unique: it holds the
// generator's tags).
func NewWorld(tasks []*Task) *World {
	w := &World{Tasks: map[string]*Task{}, Reqs: map[string]*Req{}, Calls: map[string]*Call{}}
	sort.Slice(tasks, func(i, j int) bool {
		if tasks[i].Proc != tasks[j].Proc {
			return tasks[i].Proc < tasks[j].Proc
		}
		return tasks[i].TaskID < tasks[j].TaskID
	})
	for _, t := range tasks {
		w.Tasks[t.TaskID] = t
		for _, rq := range t.Requests {
			r := &Req{Proc: t.Proc, Agent: t.Agent, TaskID: t.TaskID, ID: rq.RequestID, Kind: rq.Kind,
				Status: rq.Status, Task: t, Decisions: rq.Decisions, Superseded: rq.SupersededBy != nil}
			if rq.Error != nil {
				r.ErrorCode = rq.Error.Code
			}
			w.Reqs[r.ID] = r
			w.Order = append(w.Order, r)
		}
	}
	for _, t := range tasks {
		w.indexItems(t)
	}
	byText := map[string][]*Req{}
	for _, t := range tasks {
		for _, rq := range t.Requests {
			r := w.Reqs[rq.RequestID]
			if p := rq.Parent; p != nil {
				if pr, ok := w.Reqs[p.RequestID]; ok {
					r.Parent, r.ParentCall = pr, p.ToolCallID
					pr.Children = append(pr.Children, r)
				}
			} else if r.Text != "" {
				byText[r.Text] = append(byText[r.Text], r)
			}
		}
	}
	for _, r := range w.Order {
		for _, c := range r.Calls {
			if c.Message == "" {
				continue
			}
			linked := false
			for _, ch := range r.Children {
				if ch.ParentCall == c.ID {
					linked = true
				}
			}
			if linked {
				continue
			}
			for _, ch := range byText[c.Message] {
				if ch.Parent == nil && ch != r && ch.Proc != r.Proc {
					ch.Parent, ch.ParentCall = r, c.ID
					r.Children = append(r.Children, ch)
				}
			}
		}
	}
	return w
}

func (w *World) indexItems(t *Task) {
	for _, it := range t.Items {
		r := w.Reqs[it.RequestID]
		if r == nil {
			continue
		}
		for i := range it.Content {
			b := &it.Content[i]
			switch b.Type {
			case "text":
				if it.Role == "user" && r.Text == "" {
					r.Text = b.Text
				}
			case "tool_use":
				c := &Call{Req: r, ID: b.ID, Name: b.Name}
				var in struct {
					Tag      string `json:"tag"`
					V        string `json:"v"`
					Message  string `json:"message"`
					Question string `json:"question"`
				}
				_ = json.Unmarshal(b.Input, &in)
				c.Tag, c.V, c.Message = in.Tag, in.V, in.Message
				if b.Name == AskTool {
					// A question names its tag: "tN?".
					c.Tag = strings.TrimSuffix(in.Question, "?")
				}
				r.Calls = append(r.Calls, c)
				w.Calls[c.Key()] = c
			case "tool_result":
				if c := w.Calls[it.RequestID+"#"+b.ToolUseID]; c != nil {
					c.Result, c.ResultText = b, resultText(b)
					c.Results++
				}
			}
		}
	}
	for _, rq := range t.Requests {
		for _, d := range rq.Decisions {
			for _, dc := range d.Calls {
				c := w.Calls[rq.RequestID+"#"+dc.ToolCallID]
				if c == nil {
					continue
				}
				v := &CallVerdict{Round: d.Round, Approver: d.Approver, Action: dc.Action, DecidedAt: d.DecidedAt}
				for _, a := range dc.Approvals {
					if a.Action == "approve" || a.Action == "edit" {
						v.Approvers = append(v.Approvers, a.By)
					}
				}
				switch dc.Action {
				case "edit":
					var in struct {
						V string `json:"v"`
					}
					_ = json.Unmarshal(dc.Input, &in)
					v.V = in.V
				case "answer":
					if json.Unmarshal(dc.Result, &v.V) != nil {
						v.V = compactJSON(dc.Result) // a client tool's result
					}
				}
				c.Decision = v
			}
		}
	}
}

// compactJSON is raw without insignificant space.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func resultText(b *Block) string {
	var parts []string
	for _, c := range b.Content {
		if c.Type == "json" {
			parts = append(parts, compactJSON(c.JSON))
		} else {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Reader reads the state of a process over its HTTP API.
type Reader struct {
	Client *http.Client
	Proc   string
	Base   string
	User   string
}

func (rd *Reader) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rd.Base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+rd.User)
	resp, err := rd.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

// TaskIDs lists the tasks of agent (children included), newest first.
func (rd *Reader) TaskIDs(ctx context.Context, agent string) ([]string, error) {
	var ids []string
	cursor := ""
	for {
		q := "?limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Tasks []struct {
				TaskID string `json:"task_id"`
			} `json:"tasks"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := rd.get(ctx, "/agents/"+agent+"/tasks"+q, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			ids = append(ids, t.TaskID)
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return ids, nil
		}
		cursor = *page.NextCursor
	}
}

// Task reads a task in full: every page of its history, superseded
// entries included.
func (rd *Reader) Task(ctx context.Context, agent, taskID string) (*Task, error) {
	var t *Task
	after := int64(-1)
	for {
		q := "?include_superseded=true&limit=1000"
		if after >= 0 {
			q += fmt.Sprintf("&after_seq=%d", after)
		}
		var page Task
		if err := rd.get(ctx, "/agents/"+agent+"/tasks/"+taskID+q, &page); err != nil {
			return nil, err
		}
		if t == nil {
			t = &page
		} else {
			t.Items = append(t.Items, page.Items...)
		}
		if page.NextAfterSeq == nil {
			break
		}
		after = *page.NextAfterSeq
	}
	t.Proc = rd.Proc
	return t, nil
}

// All reads every task of the agents, eight at a time.
func (rd *Reader) All(ctx context.Context, agents []string) ([]*Task, error) {
	type ref struct{ agent, id string }
	var refs []ref
	for _, a := range agents {
		ids, err := rd.TaskIDs(ctx, a)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			refs = append(refs, ref{a, id})
		}
	}
	out := make([]*Task, len(refs))
	err := forEach(ctx, len(refs), func(ctx context.Context, i int) error {
		t, err := rd.Task(ctx, refs[i].agent, refs[i].id)
		out[i] = t
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forEach runs fn for 0..n-1, eight at a time; the first error ends it.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}
