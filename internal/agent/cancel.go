// Cancel: a running request is flagged and its leg stops at once in this
// process (or at its next poll of the flag in another); a paused or dead
// one is finalised Canceled — after the tree below it, top-down flagged,
// has ended. Nothing a flagged request's claim runs (docs/api.md,
// "Cancel"; docs/architecture.md, "The rules that keep a chain honest").

package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errCanceled is the cause of a leg's context when the request is canceled.
var errCanceled = errors.New("the request was canceled")

// CancelPollInterval is how often a running leg reads its META for the
// cancel flag set by another process (docs/architecture.md: the first poll after 1 s),
// or, when RenewAfter has passed without a write, renews its lease instead
// (the renewal answers the flag too).
var CancelPollInterval = time.Second

// cancelInfo says who canceled and why.
type cancelInfo struct {
	by, reason string
	at         time.Time
	// cascade: the request is canceled because its caller was (docs/architecture.md, "Orchestration").
	cascade bool
}

// CancelFlag is a request's cancel flag: set by a cancel call (or a
// caller's, top-down), read by the engine's polls and claims. Every claim of
// a flagged request finalises it Canceled and runs nothing. Embedded in
// ActiveRequest, its fields stay at META's top level.
type CancelFlag struct {
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	CanceledBy      string    `json:"canceled_by,omitempty"`
	CanceledAt      time.Time `json:"canceled_at,omitzero"`
	CancelReason    string    `json:"cancel_reason,omitempty"`
}

// info is the cancel f records.
func (f CancelFlag) info() cancelInfo {
	return cancelInfo{by: f.CanceledBy, reason: f.CancelReason, at: f.CanceledAt}
}

// set flags f canceled by ci.
func (f *CancelFlag) set(ci cancelInfo) {
	*f = CancelFlag{CancelRequested: true, CanceledBy: ci.by, CanceledAt: ci.at, CancelReason: ci.reason}
}

// cascading is ci as a caller's cancel that reaches its children.
func (ci cancelInfo) cascading() cancelInfo {
	ci.cascade = true
	return ci
}

// flagged is the write that flags t's active request canceled by ci.
func (e *Engine) flagged(t *Task, ci cancelInfo) *Write {
	next := e.nextOf(t)
	next.Active.CancelFlag.set(ci)
	return &Write{Task: next, PrevVersion: t.Version}
}

// flagOrphans reads the local children whose calls a caller's end closes
// and returns a cancel flag for each still in the call's request and not
// yet flagged, to land in the end's own transaction (as endLost's do): a
// process that dies after the end and before it cancels them leaves each
// to the reaper (a flagged paused request is due at once; a running one
// at its lease's end), never waiting below an ended caller. A child that
// cannot be read is left to the cancel that follows the end.
func (e *Engine) flagOrphans(ctx context.Context, calls []ChildCall, ci cancelInfo) []*Write {
	var flags []*Write
	seen := map[string]bool{}
	for _, cc := range calls {
		if cc.Remote != "" || cc.RequestID == "" || seen[cc.TaskID] {
			continue
		}
		seen[cc.TaskID] = true
		if _, ok := e.Agents.Get(cc.Agent); !ok {
			continue
		}
		ct, err := e.Store.GetTask(ctx, cc.TaskID)
		if err != nil {
			continue
		}
		if ca := ct.Active; ca != nil && ca.ID == cc.RequestID && !ca.CancelRequested {
			flags = append(flags, e.flagged(ct, ci))
		}
	}
	return flags
}

// runningLegs lets a cancel in this process stop a leg at once.
type runningLegs struct {
	mu   sync.Mutex
	legs map[string]func(cancelInfo)
}

func (l *runningLegs) add(rid string, f func(cancelInfo)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.legs == nil {
		l.legs = map[string]func(cancelInfo){}
	}
	l.legs[rid] = f
}

func (l *runningLegs) remove(rid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.legs, rid)
}

func (l *runningLegs) cancel(rid string, ci cancelInfo) {
	l.mu.Lock()
	f := l.legs[rid]
	l.mu.Unlock()
	if f != nil {
		f(ci)
	}
}

// watchCancel returns the leg's context, canceled (cause errCanceled) when a
// cancel arrives: at once from this process, or within a poll from another.
func (r *Run) watchCancel(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var once sync.Once
	stop := func(ci cancelInfo) {
		once.Do(func() {
			r.cancelMu.Lock()
			r.canceled = &ci
			r.cancelMu.Unlock()
			cancel(errCanceled)
		})
	}
	r.e.legs.add(r.reqID, stop)
	r.stopLeg = cancel
	done := make(chan struct{})
	interval := CancelPollInterval
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			meta, lost := r.keepLease(ctx)
			if lost {
				r.loseLease()
				return
			}
			if meta == nil {
				continue
			}
			if a := meta.Active; a != nil && a.ID == r.reqID && a.CancelRequested {
				stop(a.CancelFlag.info())
			}
		}
	}()
	return ctx, func() {
		close(done)
		r.e.legs.remove(r.reqID)
		cancel(nil)
	}
}

// interrupted tells whether the leg must stop, and records why: a cancel
// or the deadline.
func (r *Run) interrupted(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	if r.status != "" {
		return true
	}
	if errors.Is(context.Cause(ctx), errCanceled) {
		r.status = StatusCanceled
		return true
	}
	if errors.Is(context.Cause(ctx), errLeaseLost) {
		r.fail(CodeRequestLost, "the request's lease was lost")
		return true
	}
	r.fail(CodeDeadlineExceeded, "the request ran out of time")
	return true
}

// cancellation returns the cancel that stopped the leg.
func (r *Run) cancellation() *cancelInfo {
	r.cancelMu.Lock()
	defer r.cancelMu.Unlock()
	return r.canceled
}

// CancelInput is a cancel call.
type CancelInput struct {
	Agent, UserID, TaskID, Reason string
}

// CancelOutcome is the answer to a cancel: the request's result when it
// stopped in time, or Pending when it still runs (202).
type CancelOutcome struct {
	Result    *RequestResult
	RequestID string
	Pending   bool
}

// CancelWait is how long a cancel waits for a running request to stop.
var CancelWait = 5 * time.Second

// Cancel cancels the task's running or paused request (docs/api.md Cancel).
func (e *Engine) Cancel(ctx context.Context, in CancelInput) (_ *CancelOutcome, err error) {
	defer wrap(&err, "cancel task %s", in.TaskID)
	if in.TaskID, err = ParseID("task_id", in.TaskID); err != nil {
		return nil, err
	}
	ag, ok := e.Agents.Get(in.Agent)
	if !ok {
		return nil, Errorf(CodeAgentNotFound, "no agent is named %q", in.Agent)
	}
	return again(false, func() (*CancelOutcome, error) { return e.tryCancel(ctx, ag, in) })
}

func (e *Engine) tryCancel(ctx context.Context, ag *Agent, in CancelInput) (*CancelOutcome, error) {
	t, items, err := e.LoadOwned(ctx, ag.Name, in.UserID, in.TaskID)
	if err != nil {
		return nil, err
	}
	a := t.Active
	if a == nil {
		return nil, Errorf(CodeNotRunning, "task %s has no running or paused request", t.ID)
	}
	now := e.now()
	if a.Status == StatusPaused && !a.CancelRequested && roundExpired(a, now) {
		// The clock ended the round before the cancel came: its expiry
		// is the request's outcome, as for a decision (one round, one
		// outcome; docs/api.md, Cancel) — a chain's as a decision at a
		// caller settles it.
		if len(a.Awaits) == 0 {
			rec, err := e.applyExpiry(ctx, ag, t, items, now)
			if err != nil {
				return nil, err
			}
			return nil, Errorf(CodeNotRunning, "request %s ended Failed %s before the cancel: %s", a.ID, rec.Error.Code, rec.Error.Message)
		}
		if err := e.settleExpiredCaller(ctx, ag, t, items); CodeOf(err) != CodeTaskBusy {
			return nil, err // the chain expired (read again: ended), or a read failed
		}
		// A leaf decided in time: the chain goes on, and the cancel stops it.
	}
	ci := cancelInfo{by: in.UserID, reason: in.Reason, at: now}
	if a.Status == StatusPaused || !now.Before(a.LeaseUntil) {
		// Nothing runs it: the cancel finalises it — after the tree
		// below it, when it waits on sub-agents.
		res, err := e.cancelTree(ctx, ag, t, items, ci, time.Now().Add(CancelWait))
		if err != nil {
			return nil, err
		}
		if res == nil {
			return &CancelOutcome{RequestID: a.ID, Pending: true}, nil
		}
		return &CancelOutcome{Result: res, RequestID: a.ID}, nil
	}
	confirmed, err := e.flagCancel(ctx, t, items, ci)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(CancelWait)
	for time.Now().Before(deadline) {
		if res := e.endedResult(ctx, ag, t.ID, a.ID); res != nil {
			if !confirmed {
				// A remote agent below did not confirm its cancel: 200
				// would promise what is not known.
				break
			}
			return &CancelOutcome{Result: res, RequestID: a.ID}, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &CancelOutcome{RequestID: a.ID, Pending: true}, nil
}

// flagCancel sets the cancel flag of a running request, stops its leg if
// it runs in this process, and flags the requests below it (docs/architecture.md:
// top-down, each then finalised by its own leg, bottom-up).
func (e *Engine) flagCancel(ctx context.Context, t *Task, items []Item, ci cancelInfo) (bool, error) {
	a := t.Active
	if !a.CancelRequested {
		if err := e.commit(ctx, e.flagged(t, ci), "set cancel flag on %s", t.ID); err != nil {
			return false, err
		}
	}
	e.legs.cancel(a.ID, ci)
	return e.cancelBelow(ctx, t, items, ci), nil
}

// cancelTree cancels a request nothing runs (paused, or its leg dead) and
// the tree below it (docs/architecture.md, "The rules that keep a chain honest"): it is flagged first, so that no
// claim of it runs anything (a decision sent to it, its continuation, a
// takeover), then every request below is flagged or canceled, top-down;
// once they all ended (by until), it is finalised Canceled, bottom-up. nil
// result: something below still runs (or a remote did not confirm its
// cancel) — it stays flagged, and whoever claims it next finalises it.
func (e *Engine) cancelTree(ctx context.Context, ag *Agent, t *Task, items []Item, ci cancelInfo, until time.Time) (*RequestResult, error) {
	open := e.openCalls(t, items)
	if len(open) == 0 {
		return e.finaliseCanceled(ctx, ag, t, items, ci)
	}
	a := t.Active
	if !a.CancelRequested {
		w := e.flagged(t, ci)
		if err := e.write(ctx, w); err != nil {
			return nil, err
		}
		t = w.Task
	}
	confirmed := e.cancelCalls(ctx, t.Agent, open, ci, until)
	for {
		ended, err := e.callsEnded(ctx, open)
		if err == nil && ended {
			break
		}
		if !time.Now().Before(until) {
			// Still running below (or not read): flagged, whoever claims
			// it next finalises it.
			return nil, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !confirmed {
		return nil, nil
	}
	t, items, err := e.Store.LoadTask(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	if t.Active == nil || t.Active.ID != a.ID {
		// Finalised meanwhile (its continuation saw the flag).
		return e.endedResult(ctx, ag, t.ID, a.ID), nil
	}
	return e.finaliseCanceled(ctx, ag, t, items, ci)
}

// callsEnded tells whether the child requests of the local calls have all
// ended (a remote one's cancel is confirmed by cancelCalls; a child of an
// agent no longer deployed here can run nothing).
func (e *Engine) callsEnded(ctx context.Context, calls []ChildCall) (bool, error) {
	for _, cc := range calls {
		if cc.Remote != "" || cc.RequestID == "" {
			continue
		}
		if _, ok := e.Agents.Get(cc.Agent); !ok {
			continue
		}
		ct, err := e.Store.GetTask(ctx, cc.TaskID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("read child %s: %w", cc.TaskID, err)
		}
		if ct.Active != nil && ct.Active.ID == cc.RequestID {
			return false, nil
		}
	}
	return true, nil
}

// cancelBelow cancels the child requests of the request's open sub-agent
// calls, as part of its cancel (cascade): a paused or dead one is
// finalised now, a running one flagged; each does the same below it. It
// tells whether every remote agent below confirmed its cancel.
func (e *Engine) cancelBelow(ctx context.Context, t *Task, items []Item, ci cancelInfo) bool {
	return e.cancelCalls(ctx, t.Agent, e.openCalls(t, items), ci, time.Now().Add(CancelWait))
}

// cancelCalls cancels the child requests of the calls of callerAgent (a
// cascade): a running one is flagged, a paused or dead one canceled with
// its own tree (by until); a remote agent's task is canceled there. It
// tells whether every remote cancel was confirmed.
func (e *Engine) cancelCalls(ctx context.Context, callerAgent string, calls []ChildCall, ci cancelInfo, until time.Time) bool {
	ci = ci.cascading()
	confirmed := true
	for _, cc := range calls {
		if cc.Remote != "" {
			if ra := e.remoteOf(callerAgent, cc); ra != nil && cc.RequestID != "" {
				if err := ra.Cancel(ctx, cc.TaskID, cc.RequestID); err != nil {
					confirmed = false
					e.log().Warn("canceling a remote agent's task failed", "agent", cc.Agent, "url", cc.Remote, "remote_task_id", cc.RequestID, "err", err)
				}
			}
			continue
		}
		sub, ok := e.Agents.Get(cc.Agent)
		if !ok {
			continue
		}
		ok, err := again(false, func() (bool, error) { return e.cancelCall(ctx, sub, cc, ci, until) })
		if err != nil {
			e.log().Warn("canceling a sub-agent's request failed", "task_id", cc.TaskID, "request_id", cc.RequestID, "err", err)
		}
		if !ok {
			confirmed = false
		}
	}
	return confirmed
}

// cancelCall cancels a local sub-agent call's request: a running one is
// flagged (ok false when a remote below it did not confirm), a paused or
// dead one canceled with its tree; one that ended, or never started, is
// left alone.
func (e *Engine) cancelCall(ctx context.Context, sub *Agent, cc ChildCall, ci cancelInfo, until time.Time) (ok bool, err error) {
	ct, citems, err := e.loadFor(ctx, sub, cc.TaskID)
	if err != nil {
		return true, nil // never started, or deleted
	}
	ca := ct.Active
	if ca == nil || ca.ID != cc.RequestID {
		return true, nil // ended, or never started
	}
	if ca.Status == StatusPaused || !e.now().Before(ca.LeaseUntil) {
		_, err = e.cancelTree(ctx, sub, ct, citems, ci, until)
		return true, err
	}
	return e.flagCancel(ctx, ct, citems, ci)
}

// endedResult is the request's result once it has ended, else nil.
func (e *Engine) endedResult(ctx context.Context, ag *Agent, taskID, rid string) *RequestResult {
	t, err := e.Store.GetTask(ctx, taskID)
	if err != nil || (t.Active != nil && t.Active.ID == rid) {
		return nil
	}
	recs, err := e.Store.ListRequests(ctx, taskID)
	if err != nil {
		return nil
	}
	for i := range recs {
		if recs[i].RequestID == rid {
			return resultOfRecord(ag, t, &recs[i])
		}
	}
	return nil
}

// finaliseCanceled records a paused (or dead) request Canceled: its calls
// without a result get an error result saying so.
func (e *Engine) finaliseCanceled(ctx context.Context, ag *Agent, t *Task, items []Item, ci cancelInfo) (*RequestResult, error) {
	next := e.nextOf(t)
	a := next.Active
	a.CancelFlag.set(ci)
	if a.Status == StatusRunning {
		// A dead leg may have logged events past what META knows.
		a.cut(e.lastLogged(ctx, t.ID, t.Active))
	}
	// The tree below ends first (bottom-up): a child paused or dead is
	// canceled now, a running one flagged, so that each sub-agent call is
	// closed with what its child did.
	if len(e.openCalls(t, items)) > 0 {
		e.cancelBelow(ctx, t, items, ci)
	}
	var extra []Item
	if closing := deadLegResults(items, a, cancelMessage(ci)); len(closing) > 0 {
		closing = e.closeChildCalls(ctx, ag, a, t.Joins, closing)
		closeElicited(a, closing, ci)
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: ci.at, Content: closing})
		next.NextSeq++
	}
	rec := endOf(a, StatusCanceled, nil, ci.at)
	rec.Cascade = ci.cascade
	next.Active, next.Status = nil, StatusCanceled
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = ci.at
	if err := e.commit(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{rec}}, "cancel %s", t.ID); err != nil {
		return nil, err
	}
	e.retainFinished(ctx, next)
	res := resultOfRecord(ag, next, &rec)
	ev := map[string]string{"by": ci.by}
	if ci.reason != "" {
		ev["reason"] = ci.reason
	}
	e.logEvents(ctx, t.ID, a.ID, a.Epoch, Event{ID: a.LastEventID - 1, Name: EventCancelled, Data: ev},
		Event{ID: a.LastEventID, Name: EventRequestComplete, Data: res})
	return res, nil
}

func cancelMessage(ci cancelInfo) string {
	msg := "not run: the request was canceled by " + ci.by
	if ci.reason != "" {
		msg += ": " + ci.reason
	}
	return msg
}

// closeElicited gives the calls among closing that asked for input while
// they ran (an MCP server's elicitation pending in the round) what is
// known of them: they ran, so never "not run" (docs/architecture.md, "Pauses
// for input"), and what the server did is not known.
func closeElicited(a *ActiveRequest, closing []Block, ci cancelInfo) {
	ran := map[string]bool{}
	for _, p := range a.Pending {
		if p.Kind == InputElicitation && p.Leaf == nil && p.Elicit != nil {
			ran[p.Elicit.callID(p.ToolCallID)] = true
		}
	}
	for i, b := range closing {
		if ran[b.ToolUseID] {
			closing[i] = ErrorResult(b.ToolUseID, CodeOutcomeUnknown+": the call ran and asked for input; the request was canceled by "+ci.by+" before it was answered")
		}
	}
}

// closeChildCalls gives the sub-agent calls among closing — the results of
// the calls a request ends without (a cancel, a dead leg's end) — what is
// known of their children: a sub-agent call ran once its child request
// started, so only a call whose child never started keeps closing's "not
// run" (docs/api.md, "Cancel"; docs/architecture.md, "Orchestration").
func (e *Engine) closeChildCalls(ctx context.Context, ag *Agent, a *ActiveRequest, joins []Join, closing []Block) []Block {
	for i, b := range closing {
		cc := findCall(a, b.ToolUseID)
		if cc == nil {
			continue
		}
		if res, ran := e.childCallResult(ctx, a.ID, joins, *cc); ran {
			closing[i] = truncateResult(ag, res)
		}
	}
	return closing
}

// childCallResult is the result of a sub-agent call closed without its
// child's outcome: a child that ended gives its own result (its JOIN, else
// its record), as if it had been joined; one that has not ended (its leg
// running when the cancel's flag landed, or paused), or cannot be read
// now, gives outcome_unknown — it ran, in part at least. A remote agent's
// call too: its task's state is not known here. ran false: the child
// request never started (no task, or its task has no such request), so
// the call did not run.
func (e *Engine) childCallResult(ctx context.Context, callerRid string, joins []Join, cc ChildCall) (res Block, ran bool) {
	unknown := ErrorResult(cc.ToolCallID, childUnknownMessage(cc.Agent))
	if cc.Remote != "" {
		return unknown, true
	}
	if j := findJoin(joins, callerRid, cc); j != nil {
		return childResult(cc.ToolCallID, cc, j.outcome()), true
	}
	ct, err := e.Store.GetTask(ctx, cc.TaskID)
	if errors.Is(err, ErrNotFound) {
		return Block{}, false
	}
	if err != nil {
		e.log().Warn("a closed sub-agent call's child could not be read; its outcome is unknown", "task_id", cc.TaskID, "request_id", cc.RequestID, "err", err)
		return unknown, true
	}
	if ca := ct.Active; ca != nil && ca.ID == cc.RequestID {
		return unknown, true
	}
	rec, err := e.findRecord(ctx, ct.ID, cc.RequestID)
	if err != nil {
		e.log().Warn("a closed sub-agent call's child could not be read; its outcome is unknown", "task_id", cc.TaskID, "request_id", cc.RequestID, "err", err)
		return unknown, true
	}
	if rec == nil {
		return Block{}, false
	}
	sub, ok := e.Agents.Get(cc.Agent)
	if !ok {
		sub = &Agent{Name: cc.Agent}
	}
	return childResult(cc.ToolCallID, cc, recordOutcome(sub, ct, rec)), true
}

// childUnknownMessage is the result of a sub-agent call closed while its
// child had not ended.
func childUnknownMessage(agent string) string {
	return CodeOutcomeUnknown + ": the agent " + agent + " had not ended when this call was closed; it may have done some or all of its work, and it was not called again"
}
