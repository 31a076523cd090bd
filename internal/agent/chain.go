package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// ErrBusy says a caller is held by a live invocation: a continuation of it
// is tried again later.
var ErrBusy = errors.New("agent: the request is held by a live invocation")

// agentTool is the agent tool of that name, or nil.
func (r *Run) agentTool(name string) *AgentTool {
	bt, ok := r.agent.Tool(name)
	if !ok {
		return nil
	}
	at, _ := bt.Tool.(*AgentTool)
	return at
}

// childCall is the recorded child request of the call id, or nil.
func (r *Run) childCall(id string) *ChildCall {
	return findCall(r.task.Active, id)
}

func findCall(a *ActiveRequest, id string) *ChildCall {
	if a == nil {
		return nil
	}
	for i := range a.Calls {
		if a.Calls[i].ToolCallID == id {
			return &a.Calls[i]
		}
	}
	return nil
}

// planChildren records the child request of each new sub-agent call among
// uses, before any runs (docs/architecture.md): the task's child task of that
// sub-agent (unless new_task, or none yet: then a new one) and a new request
// id. It tells whether it planned any, which the caller then saves.
func (r *Run) planChildren(uses []Block) bool {
	planned := false
	a := r.task.Active
	for _, u := range uses {
		at := r.agentTool(u.Name)
		if at == nil || r.childCall(u.ID) != nil {
			continue
		}
		in, err := parseAgentInput(u.Input)
		if err != nil {
			continue // an error result; no child
		}
		cc := ChildCall{ToolCallID: u.ID, Agent: at.Agent, RequestID: r.e.newID()}
		if at.Remote != nil {
			// The remote makes its task's ids; its context is continued
			// unless new_task.
			cc.RequestID, cc.Remote, cc.MessageID = "", at.Remote.URL(), r.e.newID()
			if !in.NewTask {
				cc.TaskID = r.task.Children[at.Agent]
			}
			// Nothing on this system hears of the remote task: a poll,
			// put with the call, takes the caller over if its leg dies
			// (the message is sent again with its id, taken once).
			r.extraOutbox = append(r.extraOutbox, r.pollItem(cc))
		} else if tid, ok := r.task.Children[at.Agent]; ok && !in.NewTask {
			cc.TaskID = tid
		} else {
			cc.TaskID, cc.NewTask = r.e.newID(), true
			children := maps.Clone(r.task.Children)
			if children == nil {
				children = map[string]string{}
			}
			children[at.Agent] = cc.TaskID
			r.task.Children = children
		}
		a.Calls = append(a.Calls, cc)
		if r.fresh == nil {
			r.fresh = map[string]bool{}
		}
		r.fresh[u.ID] = true
		planned = true
	}
	return planned
}

// childPause is a sub-agent call whose child paused: the child's META at
// its pause (its pending calls with their inputs).
type childPause struct {
	call  ChildCall
	child *Task
	// handoff: the chain below was not continued for lack of time; the
	// leg hands itself to the outbox (docs/architecture.md).
	handoff bool
	// remote: a remote agent's task (its round is the remote request's).
	remote bool
}

// runChild runs a sub-agent call: the child request starts (or, on a
// continuation, is found again) and its outcome is the call's result —
// unless it pauses, which pauses the caller.
func (r *Run) runChild(ctx context.Context, u Block) (Block, *childPause) {
	in, err := parseAgentInput(u.Input)
	if err != nil {
		return ErrorResult(u.ID, "invalid input: "+err.Error()), nil
	}
	cc := r.childCall(u.ID)
	if cc == nil {
		return ErrorResult(u.ID, "not run: the call was not recorded"), nil
	}
	call := *cc
	if at := r.agentTool(u.Name); at != nil && at.Remote != nil {
		return r.runRemote(ctx, u, at, in, call)
	}
	if j := r.joinOf(call); j != nil {
		// Ended already: its outcome came with the task (or this leg ran it).
		return r.truncate(childResult(u.ID, call, j.outcome())), nil
	}
	sub, ok := r.e.Agents.Get(call.Agent)
	if !ok {
		return ErrorResult(u.ID, fmt.Sprintf("the agent %s is not deployed here any more", call.Agent)), nil
	}
	sink := &childSink{parent: r, agent: call.Agent, taskID: call.TaskID, rid: call.RequestID}
	fresh := r.fresh[u.ID]
	var out childOutcome
	for attempt := 0; ; attempt++ {
		out, err = r.e.runChildRequest(ctx, r, sub, call, in.Message, sink, fresh)
		var ce *ConflictError
		if !errors.As(err, &ce) || attempt == 3 {
			break
		}
		fresh = false // the child moved while it was read: read it again
	}
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			return ErrorResult(u.ID, fmt.Sprintf("the agent %s could not take the call: %s", call.Agent, ae.Message)), nil
		}
		r.e.log().ErrorContext(ctx, "a sub-agent call failed", "task_id", r.taskID, "request_id", r.reqID, "agent", call.Agent, "err", err)
		return ErrorResult(u.ID, fmt.Sprintf("the agent %s could not be reached", call.Agent)), nil
	}
	if out.handoff {
		return Block{}, &childPause{call: call, handoff: true}
	}
	if out.res.Status == StatusPaused {
		return Block{}, &childPause{call: call, child: out.child}
	}
	return r.truncate(childResult(u.ID, call, out)), nil
}

// childOutcome is a child request's outcome: its result, its META when it
// paused, who canceled it when it was canceled.
type childOutcome struct {
	res        *RequestResult
	child      *Task
	canceledBy string
	reason     string
	// handoff: not attached, for lack of time (docs/architecture.md).
	handoff bool
}

// childResult is a sub-agent call's result (docs/architecture.md): a Completed child's
// output and a JSON block naming it; an error result for Failed or Canceled.
func childResult(id string, cc ChildCall, out childOutcome) Block {
	res := out.res
	switch res.Status {
	case StatusCompleted:
		ids, _ := json.Marshal(map[string]string{"agent": cc.Agent, "task_id": cc.TaskID, "request_id": cc.RequestID, "status": string(res.Status)})
		return Block{Type: BlockToolResult, ToolUseID: id, Status: ResultSuccess,
			Content: []Block{TextBlock(res.Output), {Type: BlockJSON, JSON: ids}}}
	case StatusCanceled:
		msg := "canceled by " + out.canceledBy
		if out.canceledBy == "" {
			msg = "canceled"
		}
		if out.reason != "" {
			msg += ": " + out.reason
		}
		return ErrorResult(id, fmt.Sprintf("the agent %s's request was %s", cc.Agent, msg))
	}
	code, msg := CodeInternal, "it ended without an outcome"
	if res.Error != nil {
		code, msg = res.Error.Code, res.Error.Message
	}
	return ErrorResult(id, fmt.Sprintf("the agent %s failed: %s: %s", cc.Agent, code, msg))
}

// runChildRequest runs the child request of a call, or attaches to it when
// it exists already (a continuation, a takeover): it creates it, follows it
// while another invocation runs it, takes over a caller below that died,
// and answers its outcome.
func (e *Engine) runChildRequest(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, message string, sink Sink, fresh bool) (childOutcome, error) {
	// The child's leg has its own deadline (within the caller's) and hears
	// of a cancel through its flag (a cascade), not through ctx.
	ctx = context.WithoutCancel(ctx)
	if fresh {
		// Planned by this leg: the child request cannot exist yet. Start it
		// without reading first (a conflict means it does: attach below).
		var run *Run
		var err error
		if cc.NewTask {
			run, err = e.createChild(ctx, caller, sub, cc, message)
		} else {
			run, err = e.claimChild(ctx, caller, sub, cc.TaskID, cc, message)
		}
		var ce *ConflictError
		switch {
		case err == nil:
			res := run.Execute(ctx, sink)
			return childOutcome{res: res, child: run.task}, nil
		case !errors.As(err, &ce) && !errors.Is(err, ErrNotFound):
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != CodeTaskNotFound {
				return childOutcome{}, err
			}
		}
	}
	for attempt := 0; attempt < 4; attempt++ {
		t, err := e.Store.GetTask(ctx, cc.TaskID)
		if errors.Is(err, ErrNotFound) {
			run, err := e.createChild(ctx, caller, sub, cc, message)
			var ce *ConflictError
			if errors.As(err, &ce) {
				continue // an earlier attempt created it: attach
			}
			if err != nil {
				return childOutcome{}, err
			}
			res := run.Execute(ctx, sink)
			return childOutcome{res: res, child: run.task}, nil
		}
		if err != nil {
			return childOutcome{}, err
		}
		if t.Agent != sub.Name || t.UserID != caller.task.UserID {
			return childOutcome{}, Errorf(CodeTaskNotFound, "task %s is not a task of %s for this user", t.ID, sub.Name)
		}
		if a := t.Active; a != nil && a.ID == cc.RequestID {
			switch {
			case a.Status == StatusPaused:
				if len(a.Awaits) > 0 {
					// A caller itself: its own sub-agents may have moved.
					if caller.handoffDue() {
						return childOutcome{handoff: true}, nil
					}
					run, err := e.StartContinue(ctx, t.ID, a.ID)
					if errors.Is(err, ErrBusy) {
						res, _ := e.waitOutcome(ctx, sub, t.ID, a.ID, a.Round)
						if res.Status != StatusPaused && res.Status != StatusFailed {
							return e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
						}
						continue
					}
					if err != nil {
						// Its own sub-agents cannot be read now (a remote
						// agent down): it is still paused where it was, and
						// so is this caller — never an error result that
						// would leave it paused below a caller that moved on.
						e.log().Warn("a paused sub-agent's own sub-agents could not be read; its caller pauses on it as it is", "task_id", t.ID, "request_id", a.ID, "err", err)
					}
					if run != nil {
						res := run.Execute(ctx, sink)
						return e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
					}
				}
				if err := e.pendingInputs(ctx, t, nil); err != nil {
					return childOutcome{}, err
				}
				return childOutcome{res: pausedResult(sub, t, e.now()), child: t}, nil
			case e.now().Before(a.LeaseUntil):
				// Another invocation runs it: wait for its end or pause.
				res, _ := e.waitOutcome(ctx, sub, t.ID, a.ID, a.Round)
				if res.Error != nil && (res.Error.Code == CodeRequestLost || res.Error.Code == CodeDeadlineExceeded) {
					continue
				}
				return e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
			}
			// Its leg died. A resume's is taken over with its decision.
			if d := lastDecision(a); d != nil {
				run, err := e.StartResume(ctx, ResumeInput{Agent: sub.Name, UserID: t.UserID, TaskID: t.ID, RequestID: a.ID, Body: bodyOf(d), Deadline: caller.deadline})
				if err != nil {
					return childOutcome{}, err
				}
				res := run.Execute(ctx, sink)
				return e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
			}
			if caller.handoffDue() {
				return childOutcome{handoff: true}, nil
			}
			run, err := e.StartContinue(ctx, t.ID, a.ID)
			if err != nil && !errors.Is(err, ErrBusy) {
				return childOutcome{}, err
			}
			if run != nil {
				res := run.Execute(ctx, sink)
				return e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
			}
			if err == nil {
				// Not a caller: a plain leg that died is lost.
				if err := e.settleLost(ctx, sub, t); err != nil {
					return childOutcome{}, err
				}
			}
			continue
		}
		rec, err := e.findRecord(ctx, t.ID, cc.RequestID)
		if err != nil {
			return childOutcome{}, err
		}
		if rec != nil {
			return recordOutcome(sub, t, rec), nil
		}
		// The child task has no such request yet: a follow-on in it.
		run, err := e.claimChild(ctx, caller, sub, t.ID, cc, message)
		var ce *ConflictError
		if errors.As(err, &ce) {
			continue
		}
		if err != nil {
			return childOutcome{}, err
		}
		res := run.Execute(ctx, sink)
		return childOutcome{res: res, child: run.task}, nil
	}
	return childOutcome{}, fmt.Errorf("the child request %s of task %s could not be attached", cc.RequestID, cc.TaskID)
}

// outcomeOf completes a child's result read from afar: its META when it
// paused, who canceled it.
func (e *Engine) outcomeOf(ctx context.Context, sub *Agent, taskID, rid string, res *RequestResult) (childOutcome, error) {
	out := childOutcome{res: res}
	switch res.Status {
	case StatusPaused:
		t, err := e.Store.GetTask(ctx, taskID)
		if err != nil {
			return out, err
		}
		if t.Active == nil || t.Active.ID != rid || t.Active.Status != StatusPaused {
			return out, &ConflictError{Current: t}
		}
		if err := e.pendingInputs(ctx, t, nil); err != nil {
			return out, err
		}
		out.child = t
	case StatusCanceled:
		if rec, err := e.findRecord(ctx, taskID, rid); err == nil && rec != nil && rec.CanceledBy != nil {
			out.canceledBy = *rec.CanceledBy
			if rec.CancelReason != nil {
				out.reason = *rec.CancelReason
			}
		}
	}
	return out, nil
}

func recordOutcome(sub *Agent, t *Task, rec *RequestRecord) childOutcome {
	out := childOutcome{res: resultOfRecord(sub, t, rec)}
	if rec.CanceledBy != nil {
		out.canceledBy = *rec.CanceledBy
	}
	if rec.CancelReason != nil {
		out.reason = *rec.CancelReason
	}
	return out
}

// parentRef is the caller's call cc, as its child records it.
func (r *Run) parentRef(cc ChildCall) *ParentRef {
	return &ParentRef{Agent: r.agent.Name, TaskID: r.taskID, RequestID: r.reqID, ToolCallID: cc.ToolCallID}
}

// ancestors are a child's callers from the root down: the caller's and the caller.
func (r *Run) ancestors() []TaskRequest {
	return append(slices.Clone(r.task.Active.Ancestors), TaskRequest{TaskID: r.taskID, RequestID: r.reqID})
}

// createChild creates the child task of a call with its first request:
// same session and owner as the caller, its ids made when the call was
// recorded. A *ConflictError says it exists already.
func (e *Engine) createChild(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, message string) (*Run, error) {
	pt := caller.task
	now := e.now()
	deadline, lease := e.legDeadline(caller.deadline)
	t := &Task{
		ID: cc.TaskID, SessionID: pt.SessionID, Agent: sub.Name, UserID: pt.UserID,
		Status: StatusRunning, CreatedAt: now, UpdatedAt: now, Version: 1, NextSeq: 2, WriteID: e.newID(),
		ParentTaskID: pt.ID,
		Active: &ActiveRequest{
			ID: cc.RequestID, Kind: KindInvoke, Status: StatusRunning, ClaimToken: e.newID(), Epoch: 1,
			LeaseUntil: lease, ClaimedAt: now, CreatedAt: now, FirstSeq: 1,
			Parent: caller.parentRef(cc), Ancestors: caller.ancestors(),
		},
	}
	user := Item{Seq: 1, RequestID: cc.RequestID, Role: RoleUser, CreatedAt: now, Content: []Block{TextBlock(message)}}
	w := &Write{Task: t, Items: []Item{user}, Session: &SessionLink{
		SessionID: pt.SessionID, UserID: pt.UserID, TaskID: t.ID, Agent: sub.Name, CreatedAt: now,
	}, Lookup: &RequestLookup{RequestID: cc.RequestID, TaskID: t.ID, Agent: sub.Name, UserID: pt.UserID}}
	if err := e.write(ctx, w); err != nil {
		return nil, err
	}
	return e.newRun(sub, t, []Item{user}, deadline), nil
}

// claimChild starts a call's child request as a follow-on in the
// sub-agent's existing child task.
func (e *Engine) claimChild(ctx context.Context, caller *Run, sub *Agent, taskID string, cc ChildCall, message string) (*Run, error) {
	t, items, err := e.loadFor(ctx, sub, taskID)
	if err != nil {
		return nil, err
	}
	return e.claimNew(ctx, sub, t, items, newRequest{kind: KindInvoke, route: "invoke", user: t.UserID,
		content: []Block{TextBlock(message)}, deadline: caller.deadline,
		rid: cc.RequestID, parent: caller.parentRef(cc), ancestors: caller.ancestors()}, func(*Task, string) {})
}

// loadFor reads a task and its history as the agent's turns need it.
func (e *Engine) loadFor(ctx context.Context, ag *Agent, taskID string) (*Task, []Item, error) {
	load := e.Store.LoadTask
	if ag.Context.MaxInputTokens > 0 {
		load = e.Store.LoadContext
	}
	return load(ctx, taskID)
}

// settleLost records Failed lease_expired a child request whose leg died
// and that no route can take over (it is not a resume, nor a caller).
func (e *Engine) settleLost(ctx context.Context, sub *Agent, t *Task) error {
	t, items, err := e.loadFor(ctx, sub, t.ID)
	if err != nil {
		return err
	}
	a := t.Active
	if a == nil || a.Status != StatusRunning || e.now().Before(a.LeaseUntil) {
		return nil // it moved on
	}
	next := e.nextOf(t)
	now := e.now()
	extra, recs, decided, err := e.settleActive(ctx, sub, next, items, now)
	if err != nil {
		return err
	}
	next.UpdatedAt = now
	next.RetainUntil = e.retainUntil()
	err = e.write(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: recs, Decisions: decided})
	var ce *ConflictError
	if errors.As(err, &ce) {
		return nil // it moved on: the caller reads it again
	}
	if err != nil {
		return err
	}
	e.settled(ctx, sub.Name, next, recs)
	return nil
}

// childSink passes a child's events to its caller's stream as child
// events: {agent, task_id, request_id, depth, event, data}, numbered in the
// caller's sequence; a grandchild's arrive with its depth one more.
type childSink struct {
	parent             *Run
	agent, taskID, rid string
	depth              int // 0: 1, a direct child
}

// childEvent is the data of a child event: a sub-agent's event name and
// data, in its caller's stream (docs/api.md, "Server-Sent Events"); remote
// names the remote system of an `a2a:` call.
func childEvent(agent, taskID, rid string, depth int, remote, name string, data any) map[string]any {
	m := map[string]any{"agent": agent, "task_id": taskID, "request_id": rid, "depth": depth, "event": name, "data": data}
	if remote != "" {
		m["remote"] = remote
	}
	return m
}

// Emit implements Sink.
func (s *childSink) Emit(ev Event) {
	data := childEvent(s.agent, s.taskID, s.rid, max(s.depth, 1), "", ev.Name, ev.Data)
	if ev.Name == EventChild {
		if d, ok := ev.Data.(map[string]any); ok {
			data = maps.Clone(d)
			if n, ok := d["depth"].(int); ok {
				data["depth"] = n + 1
			}
		}
	}
	s.parent.emit(EventChild, data)
}

// pauseOnChildren pauses the caller because sub-agents paused
// (docs/architecture.md): the results of the turn's other calls are recorded; the pause, in
// a round of the caller's own, shows the leaves' pending calls, each with
// its leaf, and awaits their rounds.
func (r *Run) pauseOnChildren(ctx context.Context, results []Block, paused []childPause) {
	var done []Block
	for _, b := range results {
		if b.Type != "" {
			done = append(done, b)
		}
	}
	r.addResults(done)
	var pending []PendingCall
	var awaits []Await
	for _, p := range paused {
		ca := p.child.Active
		at := map[string]int{}
		for _, pc := range ca.Pending {
			leaf := pc.Leaf
			if leaf == nil {
				leaf = &LeafRef{Agent: p.child.Agent, TaskID: p.child.ID, RequestID: ca.ID}
			}
			pc.Leaf = leaf
			pending = append(pending, pc)
			k, ok := at[leaf.RequestID]
			if !ok {
				round := pc.Round
				if p.remote {
					// A decision goes to the remote task, in its round.
					round = ca.Round
				}
				awaits = append(awaits, Await{Agent: leaf.Agent, TaskID: leaf.TaskID, RequestID: leaf.RequestID, Round: round, Via: p.call.ToolCallID})
				k = len(awaits) - 1
				at[leaf.RequestID] = k
			}
			awaits[k].ToolCallIDs = append(awaits[k].ToolCallIDs, pc.ToolCallID)
		}
	}
	if len(pending) == 0 {
		r.fail(CodeInternal, "a sub-agent paused without pending calls")
		return
	}
	for _, p := range paused {
		if p.remote && !r.fresh[p.call.ToolCallID] {
			// A remote call paused again (a later round): nothing on this
			// system hears of its decision there but a poll, so this pause
			// puts one (the call's first poll, put with it, went when the
			// caller went on). Every open remote call has one in every
			// round.
			r.extraOutbox = append(r.extraOutbox, r.pollItem(p.call))
		}
	}
	r.pause(ctx, pending, r.task.Active.Round+1, awaits)
}

// pollItem is the outbox item that polls a remote call's task (docs/architecture.md, "Orchestration"):
// delivered again and again until the caller moved on.
func (r *Run) pollItem(cc ChildCall) OutboxItem {
	return OutboxItem{TaskID: r.taskID, RequestID: r.reqID, Epoch: r.task.Active.Epoch, EventID: r.eventID,
		Agent: r.agent.Name, UserID: r.task.UserID, Kind: OutboxContinue, Event: EventPoll, Recipient: PollRecipient(cc.MessageID), CreatedAt: r.e.now()}
}

// addResults records results of the request's last turn: in the tool
// entry of that turn when one holds some of them already (its sub-agent
// paused), else in a new entry — one entry per turn (docs/architecture.md).
func (r *Run) addResults(blocks []Block) {
	if len(blocks) == 0 {
		return
	}
	idx, turn := -1, -1
	for i := len(r.history) - 1; i >= 0; i-- {
		it := r.history[i]
		if it.RequestID != r.reqID {
			break
		}
		if it.Role == RoleAssistant {
			turn = i
			break
		}
		if it.Role == RoleTool && idx < 0 {
			idx = i
		}
	}
	if idx < 0 || turn < 0 {
		r.add(RoleTool, blocks)
		return
	}
	order := map[string]int{}
	for k, u := range r.history[turn].ToolUses() {
		order[u.ID] = k
	}
	it := r.history[idx]
	merged := append(slices.Clone(it.Content), blocks...)
	slices.SortStableFunc(merged, func(a, b Block) int { return order[a.ToolUseID] - order[b.ToolUseID] })
	it.Content = merged
	r.history[idx] = it
	for i := range r.unsaved {
		if r.unsaved[i].Seq == it.Seq {
			r.unsaved[i] = it
			return
		}
	}
	r.unsaved = append(r.unsaved, it)
}

// StartContinue claims a caller whose sub-agent ended or paused again, or
// whose leg died while it waited on one, for the leg that goes on
// (docs/architecture.md); nil when there is nothing to do (the caller moved on, or its
// sub-agents are where it saw them). ErrBusy: a live invocation holds it.
func (e *Engine) StartContinue(ctx context.Context, taskID, rid string) (*Run, error) {
	return e.startContinue(ctx, taskID, rid, false, "")
}

// ConsumeContinue is StartContinue for a continuation item (the outbox
// key sk of the caller's task): the claim that continues the caller
// deletes the item in its own transaction — only the commit that consumes
// a continuation deletes it (a leg that dies after the claim is taken over
// by the reaper). When there is nothing to do (nil, nil) the item is stale
// and its deliverer deletes it; ErrBusy keeps it for later.
func (e *Engine) ConsumeContinue(ctx context.Context, taskID, rid, sk string) (*Run, error) {
	return e.startContinue(ctx, taskID, rid, false, sk)
}

// StartPoll is StartContinue for a caller's poll of its remote calls
// (docs/architecture.md): ErrWaiting when it still waits on a remote that has not
// moved, so that the poll is delivered again later.
func (e *Engine) StartPoll(ctx context.Context, taskID, rid string) (*Run, error) {
	return e.startContinue(ctx, taskID, rid, true, "")
}

func (e *Engine) startContinue(ctx context.Context, taskID, rid string, poll bool, consumed string) (*Run, error) {
	for attempt := 0; attempt < 5; attempt++ {
		run, err := e.tryContinue(ctx, taskID, rid, poll, consumed)
		var ce *ConflictError
		if errors.As(err, &ce) {
			continue
		}
		return run, err
	}
	return nil, ErrBusy
}

func (e *Engine) tryContinue(ctx context.Context, taskID, rid string, poll bool, consumed string) (*Run, error) {
	if poll {
		// A poll reads META alone until there is something to do.
		if done, err := e.pollIdle(ctx, taskID, rid); done || err != nil {
			return nil, err
		}
	}
	// One read: META, the history and the children's joins.
	t, items, ag, err := e.loadActive(ctx, taskID, rid)
	if t == nil || err != nil {
		return nil, err
	}
	a := t.Active
	now := e.now()
	open := e.openCalls(t, items)
	switch {
	case a.Status == StatusRunning && now.Before(a.LeaseUntil):
		return nil, ErrBusy
	case a.CancelRequested:
		_, err := e.finaliseCanceled(ctx, ag, t, items, cancelInfo{by: a.CanceledBy, reason: a.CancelReason, at: a.CanceledAt})
		return nil, err
	case a.Status == StatusRunning && len(open) == 0:
		// Not waiting on a sub-agent: the resume route or a new message
		// recovers it (docs/architecture.md).
		return nil, nil
	case a.Status == StatusRunning:
		return e.claimContinue(ctx, ag, t, items, nil, consumed)
	case a.Status != StatusPaused || len(a.Awaits) == 0:
		return nil, nil
	}
	changed, expired, err := e.childrenMoved(ctx, t, open)
	if err != nil {
		return nil, err
	}
	if !changed {
		if poll && slices.ContainsFunc(open, func(cc ChildCall) bool { return cc.Remote != "" }) {
			return nil, ErrWaiting
		}
		return nil, nil
	}
	if expired != nil {
		// An expiry below ends the whole chain (docs/architecture.md Expiry): no
		// model call anywhere.
		return nil, e.expireCaller(ctx, ag, t, items, expired)
	}
	d, err := e.copiedDecision(ctx, t)
	if err != nil {
		return nil, err
	}
	return e.claimContinue(ctx, ag, t, items, d, consumed)
}

// loadActive reads a task whose request rid should be the active one
// (with its history and its children's joins) and the task's agent; nil
// task, nil error when the task is gone or has moved on (nothing to do).
func (e *Engine) loadActive(ctx context.Context, taskID, rid string) (*Task, []Item, *Agent, error) {
	t, items, err := e.Store.LoadTask(ctx, taskID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if a := t.Active; a == nil || a.ID != rid {
		return nil, nil, nil, nil
	}
	ag, ok := e.Agents.Get(t.Agent)
	if !ok {
		return nil, nil, nil, fmt.Errorf("agent %s is not loaded: its task %s waits", t.Agent, t.ID)
	}
	return t, items, ag, nil
}

// openCalls are the request's sub-agent calls still without a result.
func (e *Engine) openCalls(t *Task, items []Item) []ChildCall {
	a := t.Active
	if a == nil || len(a.Calls) == 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, it := range items {
		if it.Role == RoleTool {
			for _, b := range it.Content {
				answered[b.ToolUseID] = true
			}
		}
	}
	var out []ChildCall
	for _, c := range a.Calls {
		if !answered[c.ToolCallID] {
			out = append(out, c)
		}
	}
	return out
}

// childrenMoved tells whether a paused caller's sub-agents are no longer
// where its pause saw them: one ended, or paused in a newer round. expired
// is the record of a child that ended with its approval expired.
func (e *Engine) childrenMoved(ctx context.Context, t *Task, open []ChildCall) (bool, *RequestRecord, error) {
	a := t.Active
	seen := map[string]int{} // leaf request → round the pause shows
	for _, w := range a.Awaits {
		seen[w.RequestID] = w.Round
	}
	changed := false
	for _, cc := range open {
		if cc.Remote != "" {
			moved, expired, err := e.remoteMoved(ctx, t, cc)
			if err != nil || expired != nil {
				return true, expired, err
			}
			changed = changed || moved
			continue
		}
		if j := findJoin(t.Joins, a.ID, cc); j != nil {
			// Ended: its outcome is here already.
			if j.Status == StatusFailed && j.Error != nil && j.Error.Code == CodeApprovalExpired {
				return true, &RequestRecord{RequestView: RequestView{RequestID: j.ChildRequestID, Status: j.Status, Error: j.Error}}, nil
			}
			changed = true
			continue
		}
		ct, err := e.Store.GetTask(ctx, cc.TaskID)
		if errors.Is(err, ErrNotFound) {
			changed = true // deleted: the continuation gives the call its error
			continue
		}
		if err != nil {
			return false, nil, err
		}
		ca := ct.Active
		if ca != nil && ca.ID == cc.RequestID {
			if ca.Status != StatusPaused {
				continue // running: its pause or end sends a continuation
			}
			for _, p := range ca.Pending {
				leaf := cc.RequestID
				if p.Leaf != nil {
					leaf = p.Leaf.RequestID
				}
				if r, ok := seen[leaf]; !ok || p.Round > r {
					changed = true
				}
			}
			continue
		}
		rec, err := e.findRecord(ctx, ct.ID, cc.RequestID)
		if err != nil {
			return false, nil, err
		}
		if rec == nil {
			continue // not started: it runs once the calls before it have their results
		}
		changed = true
		if rec.Status == StatusFailed && rec.Error != nil && rec.Error.Code == CodeApprovalExpired {
			return true, rec, nil
		}
	}
	return changed, nil, nil
}

// copiedDecision is the decision taken at the leaves a paused caller
// awaits, copied for its own round (GET task shows who decided); nil when
// no leaf was decided (a child that ended otherwise).
func (e *Engine) copiedDecision(ctx context.Context, t *Task) (*Decision, error) {
	a := t.Active
	var out *Decision
	for _, w := range a.Awaits {
		var ds []Decision
		if remoteVia(a, w) != nil {
			continue // decided on the remote system: recorded there
		}
		if cc := findCall(a, w.Via); cc != nil {
			// The child's end carried the decision it took or copied.
			if j := findJoin(t.Joins, a.ID, *cc); j != nil && j.Decision != nil && coversCalls(j.Decision, w.ToolCallIDs) {
				d := *j.Decision
				d.Round = w.Round
				ds = []Decision{d}
			}
		}
		if ds == nil {
			if err := e.loadDecisions(ctx, w.TaskID, w.RequestID, &ds); err != nil {
				return nil, err
			}
		}
		if len(ds) == 0 {
			if lt, err := e.Store.GetTask(ctx, w.TaskID); err == nil && lt.Active != nil && lt.Active.ID == w.RequestID {
				ds = lt.Active.Decisions
			}
		}
		d := decisionOf(ds, w.Round)
		if d == nil {
			continue
		}
		if out == nil {
			c := *d
			c.Round, c.Calls = a.Round, slices.Clone(d.Calls)
			out = &c
			continue
		}
		out.Calls = append(out.Calls, d.Calls...)
		if out.Action != d.Action {
			out.Action = "mixed"
		}
	}
	return out, nil
}

// claimContinue claims a caller for a continuation leg: a paused caller
// whose sub-agent moved (with the leaves' decision copied), or one whose
// leg died while it waited on a sub-agent (a takeover).
func (e *Engine) claimContinue(ctx context.Context, ag *Agent, t *Task, items []Item, d *Decision, consumed string) (*Run, error) {
	now := e.now()
	next := e.nextOf(t)
	na := next.Active
	takeover := na.Status == StatusRunning
	if takeover {
		e.log().Warn("taking over a caller whose lease expired while it waited on a sub-agent", "task_id", t.ID, "request_id", na.ID)
		cutLeg(na, e.lastLogged(ctx, t.ID, t.Active))
		na.Takeovers++
	} else {
		na.Epoch++
	}
	deadline, lease := e.legDeadline(time.Time{})
	na.Status, na.ClaimToken, na.LeaseUntil, na.ClaimedAt = StatusRunning, e.newID(), lease, now
	na.Pending, na.Awaits = nil, nil
	w := &Write{Task: next, PrevVersion: t.Version}
	if consumed != "" {
		w.Consumed = []string{consumed}
	}
	if d != nil {
		na.Decisions = []Decision{*d}
		w.Decisions = []RequestDecision{{RequestID: na.ID, Decision: *d}}
	}
	next.Status, next.UpdatedAt = StatusRunning, now
	e.outbox(w, true) // a new leg: the waiters hear of it
	if err := e.write(ctx, w); err != nil {
		return nil, err
	}
	run := e.newRun(ag, next, items, deadline)
	run.kind = KindContinue
	run.takeover = takeover
	if takeover {
		run.decided = lastDecision(na)
	}
	run.continuing = run.decided == nil
	return run, nil
}

// runContinued goes on where the caller stopped: each open sub-agent call
// gets its child's outcome (or pauses the caller again); on a takeover, a
// call the dead leg may have run is not run again unless its tool is
// idempotent.
func (r *Run) runContinued(ctx context.Context) {
	uses := r.danglingUses()
	if len(uses) == 0 {
		return
	}
	given := map[string]Block{}
	for _, u := range uses {
		if r.agentTool(u.Name) != nil {
			continue
		}
		if bt, ok := r.agent.Tool(u.Name); !ok || !bt.Policy.Idempotent {
			given[u.ID] = ErrorResult(u.ID, outcomeUnknownMessage)
		}
	}
	r.runAndRecord(ctx, uses, given)
}

// runAndRecord runs a turn's calls and records their results, or pauses
// the request when a sub-agent paused.
func (r *Run) runAndRecord(ctx context.Context, uses []Block, given map[string]Block) {
	results, paused := r.runTools(ctx, uses, given)
	if slices.ContainsFunc(paused, func(p childPause) bool { return p.handoff }) {
		// The chain below is continued by the outbox: what ran is kept.
		var done []Block
		for _, b := range results {
			if b.Type != "" {
				done = append(done, b)
			}
		}
		r.addResults(done)
		r.handedOff = true
		r.status = StatusRunning
		return
	}
	if len(paused) > 0 {
		r.pauseOnChildren(ctx, results, paused)
		return
	}
	r.addResults(results)
}

// DefaultChainMinRemaining is ChainMinRemaining's default.
const DefaultChainMinRemaining = 60 * time.Second

// handoffDue tells whether too little of the leg is left to continue the
// chain below it (docs/architecture.md).
func (r *Run) handoffDue() bool {
	if !r.atCaller {
		// Only a decision sent to a caller hands off: a continuation (what
		// a handoff leads to) always goes on, so a chain always progresses.
		return false
	}
	need := r.e.ChainMinRemaining
	if need <= 0 {
		need = DefaultChainMinRemaining
	}
	return time.Until(r.deadline) <= need
}

// handOff ends the leg without ending the request: its claim is released
// (the request stays Running, its lease over) and a continuation of itself
// is put in the outbox, in one write; the dispatcher (the notifier on AWS)
// takes it over and goes on. The answer is {request_id, status: Running}
// (a 202 in JSON); a stream ends without request_complete: the client
// follows the request with GET events.
func (r *Run) handOff(ctx context.Context) *RequestResult {
	cctx, cancel := writeContext(ctx)
	defer cancel()
	a := r.task.Active
	r.extraOutbox = []OutboxItem{{TaskID: r.taskID, RequestID: r.reqID, Epoch: a.Epoch, EventID: r.eventID, Agent: r.agent.Name, UserID: r.task.UserID,
		Kind: OutboxContinue, Event: EventContinue, Recipient: HandoffRecipient, CreatedAt: r.e.now()}}
	err := r.write(cctx, func(t *Task) {
		t.Status = StatusRunning
		t.Active.Status = StatusRunning
		t.Active.LeaseUntil = r.e.now()
	}, nil, time.Time{})
	if err != nil {
		r.e.log().ErrorContext(ctx, "handing the chain to the outbox failed; the request's lease recovers it", "task_id", r.taskID, "request_id", r.reqID, "err", err)
	}
	return &RequestResult{SessionID: r.task.SessionID, TaskID: r.taskID, RequestID: r.reqID, Status: StatusRunning,
		Round: a.Round, Usage: a.Usage, Source: r.agent.Source()}
}

// expireCaller ends a paused caller Failed approval_expired because a leaf
// of its chain expired (docs/architecture.md, "The rules that keep a chain honest"): its open calls get the expiry
// as their error, nothing runs anywhere. Its end continues its own caller,
// which ends the same way; then every other leaf round it awaits that is
// still paused is expired too, so that none is left approvable at its own
// URL with its result going nowhere.
func (e *Engine) expireCaller(ctx context.Context, ag *Agent, t *Task, items []Item, rec *RequestRecord) error {
	now := e.now()
	next := e.nextOf(t)
	a := next.Active
	msg := "approval expired"
	if rec.Error != nil {
		msg = rec.Error.Message
	}
	var extra []Item
	if closing := danglingResults(items, a.ID, msg); len(closing) > 0 {
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: now, Content: closing})
		next.NextSeq++
	}
	a.LastEventID++ // the error event, logged once written
	r := recordOf(a, StatusFailed, now)
	r.Error = &ErrorInfo{Code: CodeApprovalExpired, Message: msg}
	next.Active, next.Status = nil, StatusFailed
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = now
	if err := e.write(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{r}}); err != nil {
		return err
	}
	e.settled(ctx, ag.Name, next, []RequestRecord{r})
	at := roundExpiry(t.Active)
	if at.IsZero() || at.After(now) {
		at = now
	}
	e.expireLeaves(ctx, t.Agent, t.Active, at)
	return nil
}

// expireLeaves expires, as of at, every local leaf round a ended caller
// awaited that is still paused in that round (the chain's expiry, docs/architecture.md), and cancels its remote leaves' tasks on their systems. A leaf
// decided meanwhile (its own URL, before the expiry reached it) goes on:
// its version moved, and its result reaches nobody.
func (e *Engine) expireLeaves(ctx context.Context, callerAgent string, a *ActiveRequest, at time.Time) {
	for _, w := range a.Awaits {
		if cc := remoteVia(a, w); cc != nil {
			// A remote leaf still paused in its round would wait for ever
			// below an ended chain: its task is canceled there.
			if ra := e.remoteOf(callerAgent, *cc); ra != nil && cc.RequestID != "" {
				if err := ra.Cancel(ctx, cc.TaskID, cc.RequestID); err != nil {
					e.log().Warn("canceling a remote leaf of an expired chain failed; it expires on its own system", "agent", cc.Agent, "remote_task_id", cc.RequestID, "err", err)
				}
			}
			continue
		}
		sub, ok := e.Agents.Get(w.Agent)
		if !ok {
			continue
		}
		for attempt := 0; attempt < 5; attempt++ {
			lt, litems, err := e.loadFor(ctx, sub, w.TaskID)
			if err != nil {
				break
			}
			la := lt.Active
			if la == nil || la.ID != w.RequestID || la.Status != StatusPaused || la.Round != w.Round || len(la.Awaits) > 0 {
				break
			}
			_, err = e.expireAt(ctx, sub, lt, litems, e.now(), at)
			var ce *ConflictError
			if !errors.As(err, &ce) {
				if err != nil {
					e.log().Warn("expiring a leaf of an expired chain failed", "task_id", w.TaskID, "request_id", w.RequestID, "err", err)
				}
				break
			}
		}
	}
}

// ContinueCaller runs a caller's continuation to its end or pause: what
// the dispatcher does with a continuation item (docs/architecture.md Durability).
// ErrBusy: try again later.
func (e *Engine) ContinueCaller(ctx context.Context, taskID, rid string) error {
	run, err := e.StartContinue(ctx, taskID, rid)
	if err != nil || run == nil {
		return err
	}
	run.Execute(ctx, Discard)
	return nil
}

// PollCaller continues a caller paused on a remote agent once that agent's
// task moved (docs/architecture.md): ErrWaiting while it has not.
func (e *Engine) PollCaller(ctx context.Context, taskID, rid string) error {
	run, err := e.StartPoll(ctx, taskID, rid)
	if err != nil || run == nil {
		return err
	}
	run.Execute(ctx, Discard)
	return nil
}

// bodyOf is the resume body that decides a round as d did.
func bodyOf(d *Decision) ResumeRequest {
	round := d.Round
	b := ResumeRequest{Round: &round}
	for _, c := range d.Calls {
		di := DecisionInput{ToolCallID: c.ToolCallID, Action: c.Action, Reason: c.Reason, Remember: c.Remember}
		if c.Action == ActionEdit {
			di.Input = c.Input
		}
		b.Decisions = append(b.Decisions, di)
	}
	return b
}

// leafRun is a leaf's resume that a caller's leg runs first (a decision
// sent to the caller).
type leafRun struct {
	run   *Run
	leaf  LeafRef
	depth int
	via   string // the caller's call it is reached through
	// remote, for a remote task the decision was sent to, is its agent
	// (run is nil): the leg waits for the remote task's end or pause.
	remote RemoteAgent
	call   ChildCall
	follow RemoteFollow
}

// resumeAtCaller decides a caller's round (docs/architecture.md): its decisions name
// the leaves' calls it shows. Each leaf's resume is started first, with the
// decisions of its calls — the leaf's answer table applies: a refusal there
// changes nothing here — then the caller is claimed; its leg runs the
// leaves' legs, continues the chain below it, and goes on.
func (e *Engine) resumeAtCaller(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (*Run, error) {
	a := t.Active
	d, err := e.decide(ag, in, a.Pending, a.Round, now)
	if err != nil {
		return nil, err
	}
	byCall := map[string]CallDecision{}
	for _, c := range d.Calls {
		byCall[c.ToolCallID] = c
	}
	remote := func(w Await) bool { return remoteVia(a, w) != nil }
	// A leaf on another system reached through a local child (a caller
	// itself): the decision goes to that child, which carries it there.
	awaits := viaLocalCallers(a)
	for _, w := range awaits {
		if _, ok := e.Agents.Get(w.Agent); !ok && !remote(w) {
			return nil, Errorf(CodeAgentNotFound, "task %s waits on the agent %s, which is not deployed here any more: the decision cannot reach it; cancel the task", t.ID, w.Agent)
		}
	}
	var leaves []leafRun
	for _, w := range awaits {
		if remote(w) {
			continue
		}
		round := w.Round
		body := ResumeRequest{Round: &round, Reason: in.Body.Reason}
		if w.Round == 0 {
			body.Round = nil // a local caller: the decisions name its round by their calls
		}
		for _, id := range w.ToolCallIDs {
			c := byCall[id]
			di := DecisionInput{ToolCallID: id, Action: c.Action, Reason: c.Reason, Remember: c.Remember}
			if c.Action == ActionEdit {
				di.Input = c.Input
			}
			body.Decisions = append(body.Decisions, di)
		}
		run, err := e.StartResume(ctx, ResumeInput{Agent: w.Agent, UserID: t.UserID, TaskID: w.TaskID, RequestID: w.RequestID,
			Body: body, Deadline: in.Deadline})
		if err != nil {
			if len(leaves) == 0 {
				return nil, err
			}
			// An earlier leaf took its decision: the caller goes on and
			// pauses again on this one.
			e.log().Warn("a leaf refused its part of a caller's decision", "task_id", t.ID, "leaf_task_id", w.TaskID, "err", err)
			continue
		}
		leaves = append(leaves, leafRun{run: run, leaf: LeafRef{Agent: w.Agent, TaskID: w.TaskID, RequestID: w.RequestID}, depth: depthBelow(run, t.ID), via: w.Via})
	}
	took, err := e.decideRemotes(ctx, t, byCall, in.Body.Reason, len(leaves) > 0)
	if err != nil {
		return nil, err
	}
	for _, d := range took {
		cc := d.call
		leaves = append(leaves, leafRun{remote: e.remoteOf(t.Agent, cc), call: cc, follow: d.follow,
			leaf: LeafRef{Agent: cc.Agent, TaskID: cc.TaskID, RequestID: cc.RequestID}, depth: 1, via: cc.ToolCallID})
	}
	next := e.nextOf(t)
	deadline, lease := e.legDeadline(in.Deadline)
	na := next.Active
	na.Status, na.ClaimToken, na.LeaseUntil, na.ClaimedAt = StatusRunning, e.newID(), lease, now
	na.Epoch++
	na.Decisions = []Decision{*d}
	na.Pending, na.Awaits = nil, nil
	next.Status, next.UpdatedAt = StatusRunning, now
	w := &Write{Task: next, PrevVersion: t.Version, Decisions: []RequestDecision{{RequestID: a.ID, Decision: *d}},
		Idem: e.newIdem(in.UserID, ag.Name, "resume", in.Idem, t.ID, t.SessionID, a.ID, a.Round)}
	addWaiter(w, in.Waiter)
	e.outbox(w, true)
	if err := e.write(ctx, w); err != nil {
		// Another call moved the caller on (a continuation): the leaves
		// still run their legs; the caller's outcome is followed.
		e.log().Warn("a caller moved on while its leaves were decided", "task_id", t.ID, "err", err)
		f := e.follower(ag, t.ID, a.ID, a.Round, in.Deadline)
		follow := f.follow
		f.follow = func(ctx context.Context, sink Sink) *RequestResult {
			for _, l := range leaves {
				if l.run != nil {
					// The caller may have moved on by a cancel: the
					// leaf reads its flag before it runs anything.
					l.run.pollFirst = true
					l.run.Execute(ctx, Discard)
				}
				if l.follow != nil {
					_ = l.follow(ctx, nil) // the remote's stream, let go of
				}
			}
			return follow(ctx, sink)
		}
		return f, nil
	}
	e.observeDecision(ag.Name, d, now.Sub(t.UpdatedAt))
	run := e.newRun(ag, next, items, deadline)
	run.kind = KindResume
	run.continuing = true
	run.leafRuns = leaves
	run.atCaller = true
	return run, nil
}

// viaLocalCallers is what a decision at the caller a sends where: each
// await of a leaf on this system, or reached through a remote call, as it
// is; an await of a leaf on another system reached through a local child
// (that child is a caller of a remote agent: the pending copies carry the
// remote's inputs) becomes one await of that child, Round 0 (its own
// round, which the decisions name by their calls), with the leaf's calls.
func viaLocalCallers(a *ActiveRequest) []Await {
	remoteLeaf := map[string]bool{}
	for _, p := range a.Pending {
		if p.Leaf != nil && p.RemoteInput != nil {
			remoteLeaf[p.Leaf.RequestID] = true
		}
	}
	var out []Await
	byChild := map[string]int{}
	for _, w := range a.Awaits {
		cc := findCall(a, w.Via)
		if !remoteLeaf[w.RequestID] || cc == nil || cc.Remote != "" || cc.TaskID == w.TaskID {
			out = append(out, w)
			continue
		}
		if i, ok := byChild[cc.RequestID]; ok {
			out[i].ToolCallIDs = append(out[i].ToolCallIDs, w.ToolCallIDs...)
			continue
		}
		byChild[cc.RequestID] = len(out)
		out = append(out, Await{Agent: cc.Agent, TaskID: cc.TaskID, RequestID: cc.RequestID, Via: w.Via,
			ToolCallIDs: slices.Clone(w.ToolCallIDs)})
	}
	return out
}

// depthBelow is how many levels below the caller task a leaf's request is.
func depthBelow(leaf *Run, callerTaskID string) int {
	if leaf.task == nil || leaf.task.Active == nil {
		return 1
	}
	anc := leaf.task.Active.Ancestors
	for i := len(anc) - 1; i >= 0; i-- {
		if anc[i].TaskID == callerTaskID {
			return len(anc) - i
		}
	}
	return 1
}

// runLeaves runs the leaves' legs a decision at this caller started, their
// events in this caller's stream at their depth.
func (r *Run) runLeaves(ctx context.Context) {
	for _, l := range r.leafRuns {
		if l.remote != nil {
			r.awaitRemoteLeaf(ctx, l)
			continue
		}
		sink := &childSink{parent: r, agent: l.leaf.Agent, taskID: l.leaf.TaskID, rid: l.leaf.RequestID, depth: l.depth}
		res := l.run.Execute(context.WithoutCancel(ctx), sink)
		cc := r.childCall(l.via)
		if l.depth != 1 || cc == nil || cc.RequestID != res.RequestID || (res.Status != StatusCompleted && res.Status != StatusFailed) {
			continue // paused again, canceled, or deeper: read when continued
		}
		// A direct child that ended: its outcome is known here.
		r.emitMu.Lock()
		r.joins = append(r.joins, Join{RequestID: r.reqID, ToolCallID: cc.ToolCallID, Agent: cc.Agent, TaskID: cc.TaskID,
			ChildRequestID: cc.RequestID, Status: res.Status, Output: res.Output, Error: res.Error})
		r.emitMu.Unlock()
	}
	r.leafRuns = nil
}

// joinOf is the ended child of the call, when its outcome is known
// without a read.
func (r *Run) joinOf(cc ChildCall) *Join {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	return findJoin(r.joins, r.reqID, cc)
}

func findJoin(js []Join, rid string, cc ChildCall) *Join {
	for i := range js {
		if js[i].RequestID == rid && js[i].ToolCallID == cc.ToolCallID && js[i].ChildRequestID == cc.RequestID {
			return &js[i]
		}
	}
	return nil
}

// outcome is the child's outcome as its join tells it.
func (j *Join) outcome() childOutcome {
	return childOutcome{res: &RequestResult{TaskID: j.TaskID, RequestID: j.ChildRequestID, Status: j.Status, Output: j.Output, Error: j.Error},
		canceledBy: j.CanceledBy, reason: j.CancelReason}
}

// coversCalls tells whether the decision decides the calls.
func coversCalls(d *Decision, ids []string) bool {
	for _, id := range ids {
		if !slices.ContainsFunc(d.Calls, func(c CallDecision) bool { return c.ToolCallID == id }) {
			return false
		}
	}
	return true
}
