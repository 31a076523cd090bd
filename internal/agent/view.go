package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TaskView is GET task's answer (docs/api.md, GET task).
type TaskView struct {
	TaskID           string            `json:"task_id"`
	SessionID        string            `json:"session_id"`
	Agent            string            `json:"agent"`
	Status           Status            `json:"status"`
	UserID           string            `json:"user_id"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        time.Time         `json:"updated_at"`
	Metadata         map[string]string `json:"metadata"`
	Items            []ItemView        `json:"items"`
	NextAfterSeq     *int64            `json:"next_after_seq"`
	Requests         []RequestView     `json:"requests"`
	PendingApprovals []PendingView     `json:"pending_approvals"`
	PendingInputs    []PendingView     `json:"pending_inputs"`
	// Trusted: what decisions said to remember for the rest of the task.
	Trusted []TrustView `json:"trusted"`
	// ParentTaskID, on a sub-agent's task, is its caller's task.
	ParentTaskID string `json:"parent_task_id,omitempty"`
	// WaitingOn, on a caller paused because a sub-agent paused, are the
	// requests whose decisions it waits for.
	WaitingOn []WaitingOn `json:"waiting_on,omitempty"`
	// Round, on a paused task, is the round its pending calls are decided
	// in (a resume's round).
	Round int `json:"round,omitempty"`
	// Artifacts are what the task's tool calls made, oldest first (those
	// of superseded requests only with include_superseded).
	Artifacts []ArtifactView `json:"artifacts"`
	// View is "approver" on the decision view of one who may decide a
	// call of the task but does not own it (decisionView).
	View string `json:"view,omitempty"`
}

// ItemView is a history entry as clients see it.
type ItemView struct {
	Seq          int64            `json:"seq"`
	RequestID    string           `json:"request_id"`
	Role         string           `json:"role"`
	CreatedAt    time.Time        `json:"created_at"`
	Content      []map[string]any `json:"content"`
	SupersededBy string           `json:"superseded_by,omitempty"`
	// CompactedBy is the seq of the summary that stands in for the entry
	// in the model's context.
	CompactedBy int64 `json:"compacted_by,omitempty"`
	// Compacts, on a summary, is the range of entries it stands in for.
	Compacts *SeqSpan `json:"compacts,omitempty"`
}

// SeqSpan is a range of entries [FromSeq, ToSeq).
type SeqSpan struct {
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
}

// ViewOptions are GET task's query options.
type ViewOptions struct {
	AfterSeq          int64
	Limit             int
	IncludeSuperseded bool
	IncludeImages     bool
	// Viewer, when set, is who reads (their tenant and groups): one who
	// may decide a call of the task's paused round, not its owner, gets
	// the decision view (docs/api.md, "Approvers").
	Viewer *Decider
}

// ViewApprover names the decision view: a party's, limited to the request
// they may decide.
const ViewApprover = "approver"

// Item paging limits.
const (
	DefaultItemLimit = 200
	MaxItemLimit     = 1000
)

// GetTask reads a task the user owns, as GET task shows it.
func (e *Engine) GetTask(ctx context.Context, agentName, userID, taskID string, o ViewOptions) (_ *TaskView, err error) {
	defer wrap(&err, "read task %s", taskID)
	t, err := e.ownedMeta(ctx, agentName, userID, taskID)
	party := false
	if CodeOf(err) == CodeNotOwner && o.Viewer != nil && t.Active != nil && t.Active.Status == StatusPaused && activeParty(t, *o.Viewer) {
		party, err = true, nil
	}
	if err != nil {
		return nil, err
	}
	if o.Limit <= 0 {
		o.Limit = DefaultItemLimit
	}
	v := &TaskView{
		TaskID: t.ID, SessionID: t.SessionID, Agent: t.Agent, Status: t.Status, UserID: t.UserID,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Metadata: t.Metadata,
		Items: []ItemView{}, Requests: []RequestView{}, PendingApprovals: []PendingView{}, PendingInputs: []PendingView{},
		Trusted: trustViews(t.Trusted), ParentTaskID: t.ParentTaskID,
	}
	if a := t.Active; a != nil && a.Status == StatusPaused {
		v.Round = a.Round
		for _, w := range a.Awaits {
			v.WaitingOn = append(v.WaitingOn, WaitingOn{Agent: w.Agent, TaskID: w.TaskID, RequestID: w.RequestID})
		}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if err := e.viewItems(ctx, t, o, v); err != nil {
		return nil, err
	}
	arts, err := e.taskArtifacts(ctx, t, o.IncludeSuperseded)
	if err != nil {
		return nil, err
	}
	v.Artifacts = make([]ArtifactView, 0, len(arts))
	for _, a := range arts {
		v.Artifacts = append(v.Artifacts, t.ArtifactView(a))
	}
	recs, err := e.viewRequests(ctx, t)
	if err != nil {
		return nil, err
	}
	var compactions []Compaction
	for _, rec := range recs {
		v.Requests = append(v.Requests, rec.RequestView)
		compactions = append(compactions, rec.Compactions...)
	}
	if len(compactions) > 0 {
		by := compactedBy(t, compactions)
		for i := range v.Items {
			if v.Items[i].SupersededBy == "" {
				v.Items[i].CompactedBy = by(v.Items[i].Seq)
			}
		}
	}
	if t.Active != nil && t.Active.Status == StatusPaused {
		if err := e.pendingInputs(ctx, t, nil); err != nil {
			return nil, err
		}
		v.PendingApprovals = PendingViews(t.Active.Pending, e.now(), true)
		v.PendingInputs = PendingInputViews(t.Active.Pending, e.now(), true)
	}
	if party {
		decisionView(v, t.Active.ID)
	}
	return v, nil
}

// decisionView limits v to what a party who is not the owner sees: the
// request they may decide — its entries, its record, its artifacts, its
// pending calls — and the task's user and metadata; no other request, no
// trust (docs/api.md, "Approvers").
func decisionView(v *TaskView, rid string) {
	v.View = ViewApprover
	v.Trusted = []TrustView{}
	v.Items = slices.DeleteFunc(v.Items, func(it ItemView) bool { return it.RequestID != rid })
	v.Requests = slices.DeleteFunc(v.Requests, func(r RequestView) bool { return r.RequestID != rid })
	v.Artifacts = slices.DeleteFunc(v.Artifacts, func(a ArtifactView) bool { return a.RequestID != rid })
}

// viewItems reads a page of the history into v, from o.AfterSeq, up to
// o.Limit entries (superseded ones only when asked for).
func (e *Engine) viewItems(ctx context.Context, t *Task, o ViewOptions, v *TaskView) error {
	after := o.AfterSeq
	for len(v.Items) < o.Limit {
		page, err := e.Store.ListItems(ctx, t, after, o.Limit+1)
		if err != nil {
			return fmt.Errorf("list items of %s: %w", t.ID, err)
		}
		for _, it := range page {
			after = it.Seq
			by, sup := t.IsSuperseded(it.Seq)
			if sup && !o.IncludeSuperseded {
				continue
			}
			if len(v.Items) == o.Limit {
				last := v.Items[len(v.Items)-1].Seq
				v.NextAfterSeq = &last
				break
			}
			iv := itemView(it, o.IncludeImages)
			iv.SupersededBy = by
			v.Items = append(v.Items, iv)
		}
		if v.NextAfterSeq != nil || len(page) < o.Limit+1 {
			return nil
		}
	}
	return nil
}

// viewRequests reads the task's requests, the active one last, each with
// its decisions and the request that superseded it.
func (e *Engine) viewRequests(ctx context.Context, t *Task) ([]RequestRecord, error) {
	recs, err := e.Store.ListRequests(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("list requests of %s: %w", t.ID, err)
	}
	// A record older than the task is one a delete kept for what its
	// outbox still owes, of the task deleted before a caller made this one
	// again under the same id: not this task's history.
	recs = slices.DeleteFunc(recs, func(r RequestRecord) bool { return r.CreatedAt.Before(t.CreatedAt) })
	// The active request ended between the two reads (its record is
	// listed): it is shown once, as its record says.
	if a := t.Active; a != nil && !slices.ContainsFunc(recs, func(r RequestRecord) bool { return r.RequestID == a.ID }) {
		recs = append(recs, recordOf(a, a.Status, t.UpdatedAt))
	}
	decs, err := e.Store.ListDecisions(ctx, t.ID, "")
	if err != nil {
		return nil, fmt.Errorf("list decisions of %s: %w", t.ID, err)
	}
	byRequest := map[string][]Decision{}
	for _, d := range decs {
		byRequest[d.RequestID] = append(byRequest[d.RequestID], d.Decision)
	}
	for i := range recs {
		if ds, ok := byRequest[recs[i].RequestID]; ok {
			recs[i].Decisions = ds
		}
		for _, r := range t.Superseded {
			if recs[i].FirstSeq >= r.From && recs[i].FirstSeq < r.To {
				by := r.SupersededBy
				recs[i].SupersededBy = &by
			}
		}
		if recs[i].Decisions == nil {
			recs[i].Decisions = []Decision{}
		}
		for j, d := range recs[i].Decisions {
			recs[i].Decisions[j] = d.shown()
		}
	}
	return recs, nil
}

// ownedMeta reads META and checks the agent and the owner.
func (e *Engine) ownedMeta(ctx context.Context, agentName, userID, taskID string) (*Task, error) {
	if _, ok := e.Agents.Get(agentName); !ok {
		return nil, Errorf(CodeAgentNotFound, "no agent is named %q", agentName)
	}
	t, err := e.getTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if err := owned(t, agentName, userID); err != nil {
		return t, err // with its 401 or 404: a party's read looks further (GetTask)
	}
	return t, nil
}

// PendingViews shows the pending approvals; withExpired adds the expired
// flag. The pending inputs are PendingInputViews'.
func PendingViews(ps []PendingCall, now time.Time, withExpired bool) []PendingView {
	out := make([]PendingView, 0, len(ps))
	for _, p := range ps {
		if p.Kind == "" {
			out = append(out, pendingView(p, now, withExpired))
		}
	}
	return out
}

func pendingView(p PendingCall, now time.Time, withExpired bool) PendingView {
	pv := PendingView{ToolCallID: p.ToolCallID, Name: p.Name, Input: rawOrEmpty(p.Input), ExpiresAt: p.ExpiresAt.UTC().Format(time.RFC3339), Round: p.Round, Rule: p.Rule}
	if l := p.Leaf; l != nil {
		pv.Agent, pv.TaskID, pv.RequestID, pv.ResumeURL = l.Agent, l.TaskID, l.RequestID, l.resumeURL()
	}
	if withExpired {
		exp := !now.Before(p.ExpiresAt)
		pv.Expired = &exp
	}
	if p.Decided != nil {
		pv.Outcome = p.Decided.Action // settled, while another call waits
	}
	if len(p.Clauses) > 0 {
		pv.Approvers, pv.Needed, pv.Approvals = p.principals(), p.needed(), approvalViews(p.Approvals)
		pv.InputHash, pv.FourEyes = p.InputHash, p.fourEyes()
		if p.Edited != nil {
			pv.Input, pv.OriginalInput = rawOrEmpty(p.Edited), rawOrEmpty(p.Input)
		}
	}
	return pv
}

func itemView(it Item, images bool) ItemView {
	iv := ItemView{Seq: it.Seq, RequestID: it.RequestID, Role: it.Role, CreatedAt: it.CreatedAt, Content: make([]map[string]any, 0, len(it.Content))}
	if it.Compacts != nil {
		iv.Compacts = &SeqSpan{FromSeq: it.Compacts.From, ToSeq: it.Compacts.To}
	}
	for _, b := range it.Content {
		iv.Content = append(iv.Content, blockView(b, images))
	}
	return iv
}

func blockView(b Block, images bool) map[string]any {
	switch b.Type {
	case BlockText, BlockReasoning:
		return map[string]any{"type": b.Type, "text": b.Text}
	case BlockImage:
		m := map[string]any{"type": b.Type, "media_type": b.MediaType}
		if images {
			m["data"] = "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
		}
		return m
	case BlockToolUse:
		return map[string]any{"type": b.Type, "id": b.ID, "name": b.Name, "input": rawOrEmpty(b.Input)}
	case BlockToolResult:
		content := make([]map[string]any, 0, len(b.Content))
		for _, c := range b.Content {
			if c.Type == BlockJSON {
				content = append(content, map[string]any{"type": BlockJSON, "json": json.RawMessage(c.JSON)})
			} else {
				content = append(content, map[string]any{"type": BlockText, "text": c.Text})
			}
		}
		return map[string]any{"type": b.Type, "tool_use_id": b.ToolUseID, "status": b.Status, "content": content}
	case BlockJSON:
		return map[string]any{"type": BlockJSON, "json": json.RawMessage(b.JSON)}
	}
	return map[string]any{"type": b.Type}
}

// ListTasks lists the user's tasks of an agent (GET …/tasks).
func (e *Engine) ListTasks(ctx context.Context, q ListQuery) (_ []TaskSummary, _ string, err error) {
	defer wrap(&err, "list tasks of %s", q.Agent)
	if _, ok := e.Agents.Get(q.Agent); !ok {
		return nil, "", Errorf(CodeAgentNotFound, "no agent is named %q", q.Agent)
	}
	return e.Store.ListUserTasks(ctx, q)
}

// ListSessionTasks lists a session's tasks of an agent; the session must be
// the user's.
func (e *Engine) ListSessionTasks(ctx context.Context, q ListQuery) (_ []TaskSummary, _ string, err error) {
	defer wrap(&err, "list the tasks of session %s", q.SessionID)
	if _, ok := e.Agents.Get(q.Agent); !ok {
		return nil, "", Errorf(CodeAgentNotFound, "no agent is named %q", q.Agent)
	}
	s, err := e.Store.GetSession(ctx, q.SessionID)
	if err != nil {
		if isNotFound(err) {
			return nil, "", Errorf(CodeSessionNotFound, "no session %s", q.SessionID)
		}
		return nil, "", fmt.Errorf("get session %s: %w", q.SessionID, err)
	}
	if s.UserID != q.UserID {
		return nil, "", Errorf(CodeNotOwner, "session %s belongs to another user", q.SessionID)
	}
	return e.Store.ListSessionTasks(ctx, q)
}

// RequestView is a request as GET task shows it (docs/api.md, GET task).
type RequestView struct {
	RequestID    string     `json:"request_id"`
	Kind         string     `json:"kind"`
	Status       Status     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	Usage        Usage      `json:"usage"`
	Error        *ErrorInfo `json:"error"`
	StopReason   *string    `json:"stop_reason"`
	SupersededBy *string    `json:"superseded_by"`
	Decisions    []Decision `json:"decisions"`
	CanceledBy   *string    `json:"canceled_by"`
	CanceledAt   *time.Time `json:"canceled_at,omitempty"`
	CancelReason *string    `json:"cancel_reason,omitempty"`
	// Parent, on a sub-agent's request, is the call that made it.
	Parent *ParentRef `json:"parent,omitempty"`
}
