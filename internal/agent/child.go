// Child calls: a model turn's calls of agent tools run as requests of the
// sub-agents, in their own tasks, in this invocation (docs/architecture.md,
// "Orchestration"). runChild runs one call to its end or its pause; a
// pause of any child pauses the caller with the children's pending calls
// as its own (pauseOnChildren), each awaited call recorded in the caller's
// round; an `a2a:` call goes to the remote system instead (remote.go).

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
	if out.handoff || out.res.Status == StatusRunning {
		// Not attached for lack of time, or the child handed its own
		// chain to the outbox (a remote below it whose answer did not
		// come): the caller hands off too, and a new leg attaches to the
		// child — never an error result above a child that goes on.
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
		if out, done, err := e.startChild(ctx, caller, sub, cc, message, sink); done {
			return out, err
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
			out, again, err := e.attachActive(ctx, caller, sub, cc, t, sink)
			if again {
				continue
			}
			return out, err
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

// startChild starts a child request this leg planned, without reading
// first: it cannot exist yet. done false: it does (a conflict, a task
// not found where a follow-on was planned), to be attached.
func (e *Engine) startChild(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, message string, sink Sink) (out childOutcome, done bool, err error) {
	var run *Run
	if cc.NewTask {
		run, err = e.createChild(ctx, caller, sub, cc, message)
	} else {
		run, err = e.claimChild(ctx, caller, sub, cc.TaskID, cc, message)
	}
	var ce *ConflictError
	var ae *Error
	switch {
	case err == nil:
		res := run.Execute(ctx, sink)
		return childOutcome{res: res, child: run.task}, true, nil
	case errors.As(err, &ce), errors.Is(err, ErrNotFound), errors.As(err, &ae) && ae.Code == CodeTaskNotFound:
		return childOutcome{}, false, nil
	}
	return childOutcome{}, true, err
}

// attachActive attaches to the child request while it is its task's
// active one: paused, run by another invocation (waited for), or with its
// leg dead (taken over). again: read the child's task again.
func (e *Engine) attachActive(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, t *Task, sink Sink) (out childOutcome, again bool, err error) {
	a := t.Active
	switch {
	case a.Status == StatusPaused:
		return e.attachPaused(ctx, caller, sub, cc, t, sink)
	case e.now().Before(a.LeaseUntil):
		// Another invocation runs it: wait for its end or pause.
		res, _ := e.waitOutcome(ctx, sub, t.ID, a.ID, a.Round)
		if res.Error != nil && (res.Error.Code == CodeRequestLost || res.Error.Code == CodeDeadlineExceeded) {
			return childOutcome{}, true, nil
		}
		out, err := e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
		return out, false, err
	}
	return e.attachDead(ctx, caller, sub, cc, t, sink)
}

// attachPaused: a paused leaf is the caller's pause; a paused caller's own
// sub-agents may have moved, so it is continued first.
func (e *Engine) attachPaused(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, t *Task, sink Sink) (out childOutcome, again bool, err error) {
	a := t.Active
	if len(a.Awaits) > 0 {
		if caller.handoffDue() {
			return childOutcome{handoff: true}, false, nil
		}
		run, err := e.StartContinue(ctx, t.ID, a.ID)
		if errors.Is(err, ErrBusy) {
			res, _ := e.waitOutcome(ctx, sub, t.ID, a.ID, a.Round)
			if res.Status != StatusPaused && res.Status != StatusFailed {
				out, err := e.outcomeOf(ctx, sub, t.ID, cc.RequestID, res)
				return out, false, err
			}
			return childOutcome{}, true, nil
		}
		if err != nil {
			// Its own sub-agents cannot be read now (a remote agent
			// down): it is still paused where it was, and so is this
			// caller — never an error result that would leave it paused
			// below a caller that moved on.
			e.log().Warn("a paused sub-agent's own sub-agents could not be read; its caller pauses on it as it is", "task_id", t.ID, "request_id", a.ID, "err", err)
		}
		if run != nil {
			out, err := e.executeChild(ctx, run, sub, cc, sink)
			return out, false, err
		}
	}
	if err := e.pendingInputs(ctx, t, nil); err != nil {
		return childOutcome{}, false, err
	}
	return childOutcome{res: pausedResult(sub, t, e.now()), child: t}, false, nil
}

// attachDead takes over a child request whose leg died: a resume's with
// its decision, a caller's as its continuation; a plain leg that died is
// lost (settled), and read again.
func (e *Engine) attachDead(ctx context.Context, caller *Run, sub *Agent, cc ChildCall, t *Task, sink Sink) (out childOutcome, again bool, err error) {
	a := t.Active
	if d := lastDecision(a); d != nil {
		run, err := e.StartResume(ctx, ResumeInput{Agent: sub.Name, UserID: t.UserID, Via: viaEngine, TaskID: t.ID, RequestID: a.ID, Body: bodyOf(d), Deadline: caller.deadline})
		if err != nil {
			return childOutcome{}, false, err
		}
		out, err := e.executeChild(ctx, run, sub, cc, sink)
		return out, false, err
	}
	if caller.handoffDue() {
		return childOutcome{handoff: true}, false, nil
	}
	run, err := e.StartContinue(ctx, t.ID, a.ID)
	if err != nil && !errors.Is(err, ErrBusy) {
		return childOutcome{}, false, err
	}
	if run != nil {
		out, err := e.executeChild(ctx, run, sub, cc, sink)
		return out, false, err
	}
	if err == nil {
		// Not a caller: a plain leg that died is lost.
		if err := e.settleLost(ctx, sub, t); err != nil {
			return childOutcome{}, false, err
		}
	}
	return childOutcome{}, true, nil
}

// executeChild runs a claimed leg of the child request and reads its
// outcome.
func (e *Engine) executeChild(ctx context.Context, run Leg, sub *Agent, cc ChildCall, sink Sink) (childOutcome, error) {
	res := run.Execute(ctx, sink)
	id := cc.TaskID
	if t := run.Task(); t != nil {
		id = t.ID
	}
	// (A follower — the decision sent again found it taken — has no task.)
	return e.outcomeOf(ctx, sub, id, cc.RequestID, res)
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
	t := &Task{
		ID: cc.TaskID, SessionID: pt.SessionID, Agent: sub.Name, UserID: pt.UserID, TenantID: pt.TenantID,
		Status: StatusRunning, CreatedAt: now, UpdatedAt: now, Version: 1, NextSeq: 2, WriteID: e.newID(),
		ParentTaskID: pt.ID,
		Active: &ActiveRequest{
			ID: cc.RequestID, Kind: KindInvoke, EventCursor: EventCursor{Epoch: 1}, CreatedAt: now, FirstSeq: 1,
			Parent: caller.parentRef(cc), Ancestors: caller.ancestors(),
		},
	}
	deadline := e.claim(t.Active, caller.deadline, now)
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
	pending, awaits := r.leafRounds(paused)
	if len(pending) == 0 {
		r.fail(CodeInternal, "a sub-agent paused without pending calls")
		return
	}
	keep := pollKeep(pending, r.e.now())
	for _, p := range paused {
		if !p.remote {
			continue
		}
		if r.fresh[p.call.ToolCallID] && keep.IsZero() {
			continue // the poll put with the call outlives the round
		}
		// A remote call paused again (a later round): nothing on this
		// system hears of its decision there but a poll, so this pause
		// puts one (the call's first poll, put with it, went when the
		// caller went on). Every open remote call has one in every
		// round, kept as long as the round lasts: a round longer than the
		// outbox's ttl gets one beside the call's first poll too.
		it := r.pollItem(p.call)
		it.KeepUntil = keep
		r.extraOutbox = append(r.extraOutbox, it)
	}
	r.pause(ctx, pending, r.task.Active.Round+1, awaits)
	if r.status == StatusPaused && roundExpired(r.task.Active, r.e.now()) {
		// The round it paused in had expired: a leaf's copy it carries is
		// stale, the leaf's expiry perhaps applied while this leg held the
		// caller, its continuation refused then (ErrBusy) and retried
		// after a backoff. The continuation runs now: the chain's expiry
		// ends the caller, never Paused on a leaf nothing can decide
		// (docs/architecture.md, "The rules that keep a chain honest").
		if err := r.e.ContinueCaller(ctx, r.task.ID, r.reqID); err != nil {
			r.e.log().WarnContext(ctx, "a caller paused in an expired round; its continuation failed and is left to the leaf's", "task_id", r.task.ID, "request_id", r.reqID, "err", err)
		}
	}
}

// leafRounds are the calls the caller pauses on, copied from its paused
// children's rounds (each with the leaf that holds it), and the leaf
// rounds it awaits, one per leaf request.
func (r *Run) leafRounds(paused []childPause) ([]PendingCall, []Await) {
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
			if was, ok := r.askedIn[pc.ToolCallID]; ok && pc.Kind == InputElicitation && pc.Round > was {
				// The same call asks again in its leaf's later round: a
				// decision naming it must name its round (docs/api.md,
				// Resume), here as at the leaf.
				pc.Again = true
			}
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
	return pending, awaits
}

// pollKeep is how long a poll of a round holding pending is kept: the
// round's expiry (its calls' latest) plus a day (docs/architecture.md,
// "Orchestration"), when that is later than the outbox's ttl; else zero
// (OutboxTTL).
func pollKeep(pending []PendingCall, now time.Time) time.Time {
	var last time.Time
	for _, p := range pending {
		if p.ExpiresAt.After(last) {
			last = p.ExpiresAt
		}
	}
	if keep := last.Add(24 * time.Hour); keep.After(now.Add(OutboxTTL)) {
		return keep
	}
	return time.Time{}
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

// DefaultChainMinRemaining is ChainMinRemaining's default.
const DefaultChainMinRemaining = 60 * time.Second
