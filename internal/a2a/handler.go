package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/hitch-agents/hitch/internal/agent"
)

// handler implements the SDK's RequestHandler for one call: one agent, one
// authenticated user.
type handler struct {
	e        *agent.Engine
	agent    string
	user     string
	log      *slog.Logger
	deadline time.Time
	// base is the API's base URL as the caller reached it: artifacts'
	// download URLs are absolute.
	base string
	// invalid is the error of a ListTasks call whose params failed the
	// check before the SDK's decoding (listParams).
	invalid error
	// runs counts the requests this call started that have not ended or
	// paused yet, so that a caller that must outlive them (a Lambda
	// invocation) can wait; once it waits (closed), nothing more starts.
	mu     sync.Mutex
	closed bool
	runs   sync.WaitGroup
}

// schemas adds the tools' input schemas to a pause's approvals, so that a
// caller checks an edit whole (agent.PendingView.InputSchema).
func (h *handler) schemas(pending []agent.PendingView) []agent.PendingView {
	return h.e.WithInputSchemas(h.agent, pending)
}

// track registers a request about to start; false once the call is over.
func (h *handler) track() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.runs.Add(1)
	return true
}

// wait returns when every request the call started has ended or paused.
func (h *handler) wait() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.runs.Wait()
}

// execute runs a started request to its end or pause.
func (h *handler) execute(ctx context.Context, run agent.Leg, sink agent.Sink) *agent.RequestResult {
	defer h.runs.Done()
	return run.Execute(context.WithoutCancel(ctx), sink)
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// maxViewPages bounds the item pages read to show one A2A task.
const maxViewPages = 50

// found is a request found by its A2A task id, with its task as GET task
// shows it.
type found struct {
	taskID, rid string
	view        *agent.TaskView
	req         *agent.RequestView
}

func (f *found) active() bool {
	return f.req.Status == agent.StatusRunning || f.req.Status == agent.StatusPaused
}

// find reads the request an A2A task id names: unknown, not a UUID, another
// agent's or another user's → TaskNotFound; none → InvalidParams.
func (h *handler) find(ctx context.Context, id a2a.TaskID) (*found, error) {
	if id == "" {
		return nil, invalidParams(agent.CodeInvalidID, "params.id is required: the id of a task")
	}
	rid, err := agent.ParseID("id", string(id))
	if err != nil {
		return nil, taskNotFound(string(id))
	}
	l, err := h.e.Store.FindRequest(ctx, rid)
	if errors.Is(err, agent.ErrNotFound) {
		return nil, taskNotFound(string(id))
	}
	if err != nil {
		return nil, toProto(err, h.log, string(id))
	}
	if l.Agent != h.agent || l.UserID != h.user {
		return nil, taskNotFound(string(id))
	}
	v, err := h.view(ctx, l.TaskID)
	if err != nil {
		return nil, toProto(err, h.log, string(id))
	}
	for i := range v.Requests {
		if v.Requests[i].RequestID == rid {
			return &found{taskID: l.TaskID, rid: rid, view: v, req: &v.Requests[i]}, nil
		}
	}
	return nil, taskNotFound(string(id))
}

// view reads a task with its whole visible history (superseded entries
// included: an A2A task shows its own messages even after an edit).
func (h *handler) view(ctx context.Context, taskID string) (*agent.TaskView, error) {
	o := agent.ViewOptions{Limit: agent.MaxItemLimit, IncludeSuperseded: true}
	v, err := h.e.GetTask(ctx, h.agent, h.user, taskID, o)
	for page := 1; err == nil && v.NextAfterSeq != nil && page < maxViewPages; page++ {
		o.AfterSeq = *v.NextAfterSeq
		var more *agent.TaskView
		if more, err = h.e.GetTask(ctx, h.agent, h.user, taskID, o); err == nil {
			v.Items = append(v.Items, more.Items...)
			v.NextAfterSeq = more.NextAfterSeq
		}
	}
	return v, err
}

func checkHistoryLength(n *int) error {
	if n != nil && *n < 0 {
		return invalidParams(agent.CodeInvalidQuery, "historyLength must not be negative")
	}
	return nil
}

// GetTask implements a2asrv.RequestHandler.
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	f, err := h.find(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return h.taskOf(ctx, f, req.HistoryLength)
}

func (h *handler) taskOf(ctx context.Context, f *found, historyLength *int) (*a2a.Task, error) {
	t, err := taskOfView(f.view, f.rid, historyLength, h.schemas)
	if err != nil {
		return nil, toProto(err, h.log, f.rid)
	}
	t.Artifacts = append(t.Artifacts, h.artifactsOf(ctx, f.view, f.rid)...)
	return t, nil
}

// start claims the request a message makes: a new task, a follow-on (its
// contextId names the task) or, on an input-required task, a resume.
//
// A request it starts is tracked: the caller must execute it.
func (h *handler) start(ctx context.Context, req *a2a.SendMessageRequest) (agent.Leg, error) {
	if !h.track() {
		return nil, protoErr(a2a.ErrInternalError, agent.CodeInternal, "the call ended before the request started")
	}
	run, err := h.claim(ctx, req)
	if err != nil {
		h.runs.Done()
	}
	return run, err
}

func (h *handler) claim(ctx context.Context, req *a2a.SendMessageRequest) (agent.Leg, error) {
	if req.Message == nil {
		return nil, invalidParams(agent.CodeInvalidItems, "params.message is required")
	}
	if req.Config != nil {
		if err := checkHistoryLength(req.Config.HistoryLength); err != nil {
			return nil, err
		}
	}
	m := req.Message
	ctx = context.WithoutCancel(ctx)
	if m.TaskID != "" {
		f, err := h.find(ctx, m.TaskID)
		if err != nil {
			return nil, err
		}
		if m.ContextID != "" && m.ContextID != f.taskID {
			return nil, invalidParams(agent.CodeSessionMismatch, "contextId "+m.ContextID+" is not the context of task "+string(m.TaskID))
		}
		switch f.req.Status {
		case agent.StatusPaused:
		case agent.StatusRunning:
			// A decision sent again while it runs is a duplicate: it waits
			// for the leg in flight, or takes it over if that leg's process
			// died (the resume answer table); anything else is refused by
			// the resume (not_paused, decision_conflict).
			if _, err := resumeBody(m.Parts); err != nil {
				return nil, protoErr(a2a.ErrUnsupportedOperation, agent.CodeTaskBusy, "task "+f.rid+" is working; send a message once it asks for input")
			}
		default:
			return nil, protoErr(a2a.ErrUnsupportedOperation, agent.CodeNotPaused,
				"task "+f.rid+" is "+string(f.req.Status)+", a terminal state: send a new message in its context instead")
		}
		body, err := resumeBody(m.Parts)
		if reply, ok := questionReply(f.view, m.Parts); ok && f.req.Status == agent.StatusPaused {
			body, err = reply, nil
		}
		if err != nil {
			return nil, toProto(err, h.log, f.rid)
		}
		run, err := h.e.StartResume(ctx, agent.ResumeInput{Agent: h.agent, UserID: h.user, Via: "a2a", TaskID: f.taskID, RequestID: f.rid, Body: body, Deadline: h.deadline})
		if err != nil {
			return nil, toProto(err, h.log, f.rid)
		}
		return run, nil
	}
	items, err := inputItems(m.Parts)
	if err != nil {
		return nil, err
	}
	in := agent.InvokeInput{Agent: h.agent, UserID: h.user, TaskID: m.ContextID, Items: items, Deadline: h.deadline}
	if key := messageKey + m.ID; m.ID != "" && agent.CheckIdempotencyKey(key) == nil {
		// A message sent again (same messageId, same content) is taken
		// once: the resend answers the task the first one made.
		in.Idem = &agent.Idempotency{Key: key, BodyHash: agent.MessageHash("", m.ContextID, items, nil)}
	}
	run, err := h.e.StartInvoke(ctx, in)
	if err != nil {
		return nil, toProto(err, h.log, m.ContextID)
	}
	return run, nil
}

// messageKey prefixes a message's id as the idempotency key of the request
// it starts (docs/api.md Idempotency-Key, scoped to the user and the agent).
const messageKey = "a2a-message:"

func workingTask(run agent.Leg) *a2a.Task { return working(run.TaskID(), run.RequestID()) }

func working(taskID, rid string) *a2a.Task {
	now := time.Now().UTC()
	return &a2a.Task{ID: a2a.TaskID(rid), ContextID: taskID,
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}}
}

// SendMessage implements a2asrv.RequestHandler: it answers when the request
// ends or pauses, or at once with the working task (returnImmediately).
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	run, err := h.start(ctx, req)
	if err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	if req.Config != nil && req.Config.ReturnImmediately {
		go h.execute(bg, run, agent.Discard)
		return workingTask(run), nil
	}
	res := h.execute(bg, run, agent.Discard)
	t := taskOfResult(res, time.Now().UTC(), h.schemas)
	if f, err := h.find(bg, t.ID); err == nil {
		t.Artifacts = append(t.Artifacts, h.artifactsOf(bg, f.view, f.rid)...)
		if req.Config == nil || req.Config.HistoryLength == nil || *req.Config.HistoryLength > 0 {
			if full, err := h.taskOf(bg, f, configHistory(req)); err == nil {
				t.History = full.History
			}
		}
	}
	return t, nil
}

func configHistory(req *a2a.SendMessageRequest) *int {
	if req.Config == nil {
		return nil
	}
	return req.Config.HistoryLength
}

// SendStreamingMessage implements a2asrv.RequestHandler: the working task,
// then the request's events as A2A updates. The request goes on when the
// client goes away.
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		run, err := h.start(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		events := make(chan agent.Event, 4096)
		go func() {
			defer close(events)
			h.execute(ctx, run, agent.SinkFunc(func(e agent.Event) {
				select {
				case events <- e:
				default: // the client is too slow: the event log keeps it
				}
			}))
		}()
		if yield(workingTask(run), nil) {
			h.relay(ctx, run.TaskID(), run.RequestID(), events, yield)
		}
	}
}

// relay turns Hitch events into A2A updates until the request ends or
// pauses, the events end, or the client goes away.
func (h *handler) relay(ctx context.Context, taskID, rid string, events <-chan agent.Event, yield func(a2a.Event, error) bool) {
	c := &converter{taskID: taskID, rid: rid, agent: h.agent, base: h.base, schemas: h.schemas}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			out, err, end := c.convert(e)
			for _, ev := range out {
				if !yield(ev, nil) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if end {
				return
			}
		}
	}
}

// SubscribeToTask implements a2asrv.RequestHandler: the task, then its
// events from the durable log (replayed from the start of the request),
// followed live until it ends or pauses.
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		f, err := h.find(ctx, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		if !f.active() {
			yield(nil, protoErr(a2a.ErrUnsupportedOperation, agent.CodeNotRunning, "task "+f.rid+" is "+string(f.req.Status)+", a terminal state"))
			return
		}
		t, err := h.taskOf(ctx, f, nil)
		if err != nil || !yield(t, nil) {
			return
		}
		fol, err := h.e.OpenEvents(ctx, h.agent, h.user, f.taskID, f.rid, 0)
		if err != nil {
			yield(nil, toProto(err, h.log, f.rid))
			return
		}
		events := make(chan agent.Event, 4096)
		go func() {
			defer close(events)
			fol.Stream(ctx, agent.SinkFunc(func(e agent.Event) {
				select {
				case events <- e:
				case <-ctx.Done():
				}
			}))
		}()
		h.relay(ctx, f.taskID, f.rid, events, yield)
	}
}

// CancelTask implements a2asrv.RequestHandler.
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	f, err := h.find(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if !f.active() {
		return nil, protoErr(a2a.ErrTaskNotCancelable, agent.CodeNotRunning, "task "+f.rid+" is "+string(f.req.Status)+" and cannot be canceled")
	}
	out, err := h.e.Cancel(context.WithoutCancel(ctx), agent.CancelInput{Agent: h.agent, UserID: h.user, TaskID: f.taskID, Reason: "canceled over A2A"})
	if err != nil {
		return nil, toProto(err, h.log, f.rid)
	}
	if out.RequestID != f.rid {
		// The task's active request was another one: this one had ended.
		return nil, protoErr(a2a.ErrTaskNotCancelable, agent.CodeNotRunning, "task "+f.rid+" cannot be canceled")
	}
	if out.Result != nil {
		return taskOfResult(out.Result, time.Now().UTC(), h.schemas), nil
	}
	t := working(f.taskID, f.rid)
	t.Metadata = map[string]any{"cancel_requested": true}
	return t, nil
}

// listTasksScan bounds the Hitch tasks ListTasks reads without a contextId.
const listTasksScan = 50

// ListTasks implements a2asrv.RequestHandler: the user's A2A tasks of this
// agent, newest first by status time. With a contextId it reads that
// context; without one, the requests of the user's 50 most recently updated
// contexts.
func (h *handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if h.invalid != nil {
		return nil, h.invalid
	}
	size := req.PageSize
	switch {
	case size == 0: // absent (an explicit 0 is refused by listParams)
		size = 50
	case size < 1 || size > 100:
		return nil, badPageSize()
	}
	if req.Status != a2a.TaskStateUnspecified && !slices.Contains(taskStates, req.Status) {
		return nil, badStatus(strconv.Quote(string(req.Status)))
	}
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, invalidParams(agent.CodeInvalidQuery, "pageToken is not one this server gave")
		}
		offset = n
	}
	var contexts []string
	if req.ContextID != "" {
		contexts = []string{req.ContextID}
	} else {
		sums, _, err := h.e.ListTasks(ctx, agent.ListQuery{UserID: h.user, Agent: h.agent, Limit: listTasksScan})
		if err != nil {
			return nil, toProto(err, h.log, "")
		}
		for _, s := range sums {
			contexts = append(contexts, s.TaskID)
		}
	}
	var all []*a2a.Task
	for _, c := range contexts {
		v, err := h.view(ctx, c)
		if err != nil {
			if req.ContextID != "" {
				return nil, toProto(err, h.log, c)
			}
			continue
		}
		for _, r := range v.Requests {
			t, err := taskOfView(v, r.RequestID, req.HistoryLength, h.schemas)
			if err != nil {
				continue
			}
			if req.Status != a2a.TaskStateUnspecified && t.Status.State != req.Status {
				continue
			}
			if req.StatusTimestampAfter != nil && !t.Status.Timestamp.After(*req.StatusTimestampAfter) {
				continue
			}
			if !req.IncludeArtifacts {
				t.Artifacts = nil
			} else {
				t.Artifacts = append(t.Artifacts, h.artifactsOf(ctx, v, r.RequestID)...)
			}
			all = append(all, t)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Status.Timestamp.After(*all[j].Status.Timestamp) })
	resp := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: len(all), PageSize: size}
	if offset < len(all) {
		end := min(offset+size, len(all))
		resp.Tasks = all[offset:end]
		if end < len(all) {
			resp.NextPageToken = strconv.Itoa(end)
		}
	}
	return resp, nil
}

// taskStates are the states ListTasks filters on (TASK_STATE_UNSPECIFIED,
// or no status, filters none).
var taskStates = []a2a.TaskState{
	a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
	a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected,
}

func badStatus(got string) error {
	names := make([]string, len(taskStates))
	for i, s := range taskStates {
		names[i] = string(s)
	}
	return invalidParams(agent.CodeInvalidQuery, "status "+got+" is not a task state: one of "+strings.Join(names, ", "))
}

func badPageSize() error {
	return invalidParams(agent.CodeInvalidQuery, "pageSize must be an integer from 1 to 100 (absent: 50)")
}

// listParams checks the ListTasks params that the SDK's decoding misreads:
// pageSize 0, which it takes for an absent one, and a statusTimestampAfter
// that is no RFC 3339 timestamp, which it answers as a parse error though
// the JSON parsed; a status or pageSize of another JSON type, which it
// answers without naming the field. Params that are no object are the
// SDK's to refuse.
func listParams(raw json.RawMessage) error {
	var p map[string]json.RawMessage
	if json.Unmarshal(raw, &p) != nil {
		return nil
	}
	set := func(name string) (json.RawMessage, bool) {
		v, ok := p[name]
		return v, ok && string(v) != "null"
	}
	if v, ok := set("pageSize"); ok {
		var n int
		if json.Unmarshal(v, &n) != nil || n < 1 || n > 100 {
			return badPageSize()
		}
	}
	if v, ok := set("status"); ok {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return badStatus(string(v))
		}
	}
	if v, ok := set("statusTimestampAfter"); ok {
		var at time.Time
		if json.Unmarshal(v, &at) != nil {
			return invalidParams(agent.CodeInvalidQuery, "statusTimestampAfter must be an RFC 3339 timestamp, such as 2026-01-02T15:04:05Z")
		}
	}
	return nil
}

// GetExtendedAgentCard implements a2asrv.RequestHandler: there is none.
func (h *handler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, protoErr(a2a.ErrUnsupportedOperation, "unsupported_operation", "this agent has no extended agent card")
}

func pushUnsupported() error {
	return protoErr(a2a.ErrPushNotificationNotSupported, "push_notifications_not_supported",
		"push notifications are not supported: webhooks are configured by the operator")
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, pushUnsupported()
}

// ListTaskPushConfigs implements a2asrv.RequestHandler.
func (h *handler) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, pushUnsupported()
}

// CreateTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, pushUnsupported()
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return pushUnsupported()
}
