// Continuations: a caller paused on sub-agents (or handed off, or polling
// a remote) goes on once what it waits for moved (docs/architecture.md,
// "Orchestration"). The outbox item a child's end, a hand-off or a poll
// puts is delivered to ContinueCaller or PollCaller (hitch serve's
// dispatcher, or the resume function on AWS); the claim that consumes the
// item deletes it in its own transaction (Write.Consumed), and the leg
// records what its children answered, then runs the model again.

package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrBusy says a caller is held by a live invocation: a continuation of it
// is tried again later.
var ErrBusy = errors.New("agent: the request is held by a live invocation")

// StartContinue claims a caller whose sub-agent ended or paused again, or
// whose leg died while it waited on one, for the leg that goes on
// (docs/architecture.md); nil when there is nothing to do (the caller moved on, or its
// sub-agents are where it saw them). ErrBusy: a live invocation holds it.
func (e *Engine) StartContinue(ctx context.Context, taskID, rid string) (_ *Run, err error) {
	defer wrap(&err, "continue request %s of task %s", rid, taskID)
	return e.startContinue(ctx, taskID, rid, false, "")
}

// ConsumeContinue is StartContinue for a continuation item (the outbox
// key sk of the caller's task): the claim that continues the caller
// deletes the item in its own transaction — only the commit that consumes
// a continuation deletes it (a leg that dies after the claim is taken over
// by the reaper). When there is nothing to do (nil, nil) the item is stale
// and its deliverer deletes it; ErrBusy keeps it for later.
func (e *Engine) ConsumeContinue(ctx context.Context, taskID, rid, sk string) (_ *Run, err error) {
	defer wrap(&err, "continue request %s of task %s", rid, taskID)
	return e.startContinue(ctx, taskID, rid, false, sk)
}

// StartPoll is StartContinue for a caller's poll of its remote calls
// (docs/architecture.md): ErrWaiting when it still waits on a remote that has not
// moved, so that the poll is delivered again later.
func (e *Engine) StartPoll(ctx context.Context, taskID, rid string) (_ *Run, err error) {
	defer wrap(&err, "poll request %s of task %s", rid, taskID)
	return e.startContinue(ctx, taskID, rid, true, "")
}

func (e *Engine) startContinue(ctx context.Context, taskID, rid string, poll bool, consumed string) (*Run, error) {
	run, err := again(false, func() (*Run, error) { return e.tryContinue(ctx, taskID, rid, poll, consumed) })
	if ce := (*ConflictError)(nil); errors.As(err, &ce) {
		return nil, ErrBusy // others keep moving it: they carry it on
	}
	return run, err
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
		_, err := e.finaliseCanceled(ctx, ag, t, items, a.CancelFlag.info())
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
		// An expiry below ends the whole chain (docs/architecture.md, The rules that keep a chain honest): no
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
	answered := answeredIDs(items)
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
			if j.Status == StatusFailed && j.Error != nil && IsExpiry(j.Error.Code) {
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
			if ca.Status == StatusRunning && !e.now().Before(ca.LeaseUntil) {
				// Its leg died (a decision's claim whose process died):
				// the caller's leg drives it (attachDead), never pauses
				// again on a round that was decided.
				changed = true
				continue
			}
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
		if rec.Status == StatusFailed && rec.Error != nil && IsExpiry(rec.Error.Code) {
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
			// The child's end carried the decision it took or copied: its
			// last one, which is the awaited round's only when the child
			// is the leaf and the rounds agree (a call asked again under
			// its id in a later round is decided again there; the leaf's
			// DEC# items hold each round's, read below).
			if j := findJoin(t.Joins, a.ID, *cc); j != nil && j.Decision != nil && coversCalls(j.Decision, w.ToolCallIDs) &&
				cc.RequestID == w.RequestID && j.Decision.Round == w.Round {
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
	if out != nil {
		for _, p := range a.Pending {
			if !slices.ContainsFunc(out.Calls, func(c CallDecision) bool { return c.ToolCallID == p.ToolCallID }) {
				out.Partial = true
				break
			}
		}
	}
	return out, nil
}

// claimContinue claims a caller for a continuation leg: a paused caller
// whose sub-agent moved (with the leaves' decision copied), or one whose
// leg died while it waited on a sub-agent (a takeover). The reaper's
// takeover of any dead leg claims through it too (claimTakeover).
func (e *Engine) claimContinue(ctx context.Context, ag *Agent, t *Task, items []Item, d *Decision, consumed string) (*Run, error) {
	now := e.now()
	next := e.nextOf(t)
	na := next.Active
	takeover := na.Status == StatusRunning
	if takeover {
		if len(e.openCalls(t, items)) > 0 {
			e.log().Warn("taking over a caller whose lease expired while it waited on a sub-agent", "task_id", t.ID, "request_id", na.ID)
		}
		e.takeOverLeg(ctx, t, na)
	} else {
		na.Epoch++
	}
	deadline := e.claim(na, time.Time{}, now)
	asked := map[string]int{}
	for _, p := range na.Pending {
		if p.Kind == InputElicitation {
			asked[p.ToolCallID] = p.Round
		}
	}
	na.Pending, na.Awaits = nil, nil
	w := &Write{Task: next, PrevVersion: t.Version}
	if consumed != "" {
		w.Consumed = []string{consumed}
	}
	if d != nil {
		copied := d.withoutResults() // the answers are the leaves'
		na.Decisions = []Decision{copied}
		w.Decisions = []RequestDecision{{RequestID: na.ID, Decision: copied}}
	}
	next.Status, next.UpdatedAt = StatusRunning, now
	w.newLeg = true // a new leg: the waiters hear of it
	if err := e.write(ctx, w); err != nil {
		return nil, err
	}
	run := e.newRun(ag, next, items, deadline)
	run.leg, run.kind = legContinue, KindContinue
	if takeover {
		run.leg, run.decided = legTakeover, lastDecision(na)
	}
	run.askedIn = asked
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
		if b, ok := r.notRunAgain(u); ok {
			given[u.ID] = b
		}
	}
	r.runAndRecord(ctx, uses, given)
}

// notRunAgain is the dead-leg rule of a call a taken-over leg finds open
// (docs/architecture.md, "Dead legs"): the dead leg may have run it, so it
// is closed outcome_unknown unless its tool is idempotent. A sub-agent
// call is found again (its child), never made twice: it is left to run.
func (r *Run) notRunAgain(u Block) (Block, bool) {
	if r.agentTool(u.Name) != nil {
		return Block{}, false
	}
	if bt, ok := r.agent.Tool(u.Name); ok && bt.Policy.Idempotent {
		return Block{}, false
	}
	return ErrorResult(u.ID, outcomeUnknownMessage), true
}

// runAndRecord runs a turn's calls and records their results, or pauses
// the request when a sub-agent paused.
func (r *Run) runAndRecord(ctx context.Context, uses []Block, given map[string]Block) {
	results, paused := r.runTools(ctx, uses, given)
	asked := r.takeAsked()
	if len(asked) > 0 && len(paused) > 0 {
		// A round waits on sub-agents or on this leg's own inputs, not
		// both: the calls that asked end with an error the model can act
		// on (it may call them again once the sub-agents are answered).
		for i, u := range uses {
			if _, ok := asked[u.ID]; ok {
				results[i] = ErrorResult(u.ID, "the tool asked for input while a sub-agent call of the same turn paused; call it again once that is answered")
				r.emit(EventToolResult, resultEvent(u.Name, results[i]))
			}
		}
		asked = nil
	}
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
	if len(asked) > 0 {
		r.pauseOnInputs(ctx, uses, results, asked)
		return
	}
	r.addResults(results)
}

// handoffDue tells whether too little of the leg is left to continue the
// chain below it (docs/architecture.md).
func (r *Run) handoffDue() bool {
	if r.leg != legAtCaller {
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
	r.extraOutbox = append(r.extraOutbox, OutboxItem{TaskID: r.taskID, RequestID: r.reqID, Epoch: a.Epoch, EventID: r.eventID, Agent: r.agent.Name, UserID: r.task.UserID,
		Kind: OutboxContinue, Event: EventContinue, Recipient: HandoffRecipient, CreatedAt: r.e.now()})
	// A hand-off of a remote call that got no answer is no progress and
	// counts like a failed takeover (remote.go, handedOffTooOften): it
	// keeps META's takeover count (the next leg's claim adds one), and the
	// next leg comes a lease later, as a takeover's would, so a remote
	// that is away a few seconds (a restart) is sent the message again
	// once it is back rather than three times at once.
	keep, until := 0, r.e.now()
	r.childMu.Lock()
	if r.unanswered {
		keep, until = a.Takeovers, until.Add(LeaseDuration)
	}
	r.childMu.Unlock()
	err := r.write(cctx, func(t *Task) {
		t.Status = StatusRunning
		t.Active.Status = StatusRunning
		t.Active.LeaseUntil = until
		t.Active.Takeovers = keep
	}, nil, time.Time{})
	if err != nil {
		r.e.log().ErrorContext(ctx, "handing the chain to the outbox failed; the request's lease recovers it", "task_id", r.taskID, "request_id", r.reqID, "err", err)
	}
	return &RequestResult{SessionID: r.task.SessionID, TaskID: r.taskID, RequestID: r.reqID, Status: StatusRunning,
		Round: a.Round, Usage: a.Usage, Source: r.agent.Source()}
}

// ContinueCaller runs a caller's continuation to its end or pause: what
// the dispatcher does with a continuation item (docs/architecture.md, The outbox and the notifier).
// ErrBusy: try again later.
func (e *Engine) ContinueCaller(ctx context.Context, taskID, rid string) (err error) {
	defer wrap(&err, "continue caller request %s of task %s", rid, taskID)
	run, err := e.StartContinue(ctx, taskID, rid)
	if err != nil || run == nil {
		return err
	}
	run.Execute(ctx, Discard)
	return nil
}

// PollCaller continues a caller paused on a remote agent once that agent's
// task moved (docs/architecture.md): ErrWaiting while it has not.
func (e *Engine) PollCaller(ctx context.Context, taskID, rid string) (err error) {
	defer wrap(&err, "poll caller request %s of task %s", rid, taskID)
	run, err := e.StartPoll(ctx, taskID, rid)
	if err != nil || run == nil {
		return err
	}
	run.Execute(ctx, Discard)
	return nil
}
