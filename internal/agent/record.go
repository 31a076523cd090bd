// Recording: a decision that leaves a call of its round short of its
// quorum is recorded on the pending calls — one write of META, version
// checked — and answered Paused; the decision that settles the round's
// last call claims it as any decision does (docs/api.md, "Approvers").

package agent

import (
	"context"
	"slices"
	"time"
)

// recordShare applies the sender's share d to a copy of pending: each
// call it decides gains the sender's approval (an edit: its input becomes
// the edited one), and a call its policy now settles gets its decision
// (Decided). It tells whether every call of the round is settled.
func recordShare(t *Task, pending []PendingCall, d *Decision, dec Decider, now time.Time) ([]PendingCall, bool) {
	out := slices.Clone(pending)
	at := map[string]int{}
	for i, p := range out {
		at[p.ToolCallID] = i
	}
	for _, c := range d.Calls {
		i, ok := at[c.ToolCallID]
		if !ok {
			continue
		}
		p := &out[i]
		principal := PrincipalOwner
		matched := p.matched(dec, t.UserID, t.TenantID)
		if len(matched) > 0 {
			principal = matched[0]
		}
		p.Approvals = append(slices.Clone(p.Approvals), Approval{By: dec.UserID, Principal: principal, Matched: matched, TenantID: dec.TenantID,
			At: now, Action: c.Action, Reason: c.Reason, InputHash: c.InputHash, ResultHash: c.ResultHash, Via: dec.Via})
		if c.Action == ActionEdit {
			p.Edited, p.InputHash = c.Input, c.InputHash
		}
		if !p.settled(t.UserID, t.TenantID) {
			continue
		}
		settling := c
		if rej := p.rejection(); rej != nil && c.Action != ActionReject {
			settling = CallDecision{ToolCallID: p.ToolCallID, Action: ActionReject, Reason: rej.Reason, InputHash: p.InputHash, Rule: p.Rule, Kind: p.Kind, Elicit: p.Elicit}
		}
		if settling.Action == ActionApprove && p.Edited != nil {
			// Approved as an earlier decision of the round edited it.
			settling.Action, settling.Input, settling.OriginalInput = ActionEdit, p.Edited, p.Input
		}
		if len(p.Clauses) > 0 {
			settling.Clauses, settling.Approvals = p.Clauses, p.Approvals
		}
		p.Decided = &settling
	}
	for _, p := range out {
		if p.Decided == nil {
			return out, false
		}
	}
	return out, true
}

// roundDecision is the decision of a round its last share settled: each
// call's settled decision, by the sender of that share.
func roundDecision(share *Decision, pending []PendingCall) *Decision {
	d := *share
	d.Calls = make([]CallDecision, 0, len(pending))
	actions := map[string]bool{}
	for _, p := range pending {
		c := *p.Decided
		if n := len(p.Approvals); len(c.Approvals) == 0 && n > 0 && p.Approvals[n-1].By != share.Approver {
			// A default call settled by an earlier share: its decider
			// is not the round's approver, so the record names them.
			c.Approvals = p.Approvals
		}
		d.Calls = append(d.Calls, c)
		actions[c.Action] = true
	}
	d.Action = "mixed"
	if len(actions) == 1 {
		d.Action = d.Calls[0].Action
	}
	return &d
}

// recordApprovals writes the sender's share of a round it does not settle:
// META's pending calls with their approvals, version checked (a race lost
// is read again and judged again by the caller's loop), and answers the
// request still Paused with an approval_recorded event per call. A share
// of nothing new (the same decision sent again) writes nothing.
func (e *Engine) recordApprovals(ctx context.Context, ag *Agent, t *Task, in ResumeInput, share *Decision, pending []PendingCall, now time.Time) (Leg, error) {
	a := t.Active
	if in.claims != nil {
		// A leaf's part of a decision at its caller: all or nothing, and
		// the caller runs only once its leaves' rounds are settled.
		return nil, Errorf(CodeInvalidDecisions, "request %s's round %d needs more approvals than this decision gives: decide its calls at the leaf's own URL (%s)",
			a.ID, a.Round, ResumeURL(t.Agent, t.ID, a.ID))
	}
	if len(share.Calls) == 0 {
		// The same decision again: the request as it stands, its stream
		// ending as every answer's does (the log's last event is a
		// request_complete of this round: the pause's or a recording's);
		// a waiter it brings is bound as a duplicate's is.
		if in.Waiter != nil {
			if err := e.bindWaiter(ctx, t.ID, a.ID, in.Waiter); err != nil {
				return nil, err
			}
		}
		res := pausedResult(ag, t, now)
		last := Event{ID: a.LastEventID, Name: EventRequestComplete, Data: res}
		return &recordedLeg{result: res, events: []Event{last}, taskID: t.ID, reqID: a.ID, deadline: in.Deadline}, nil
	}
	next := e.nextOf(t)
	na := next.Active
	na.Pending = pending
	first := na.LastEventID + 1
	var evs []Event
	for _, c := range share.Calls {
		p := pendingByID(pending, c.ToolCallID)
		ev := map[string]any{"tool_call_id": c.ToolCallID, "round": a.Round, "by": in.UserID, "action": c.Action,
			"approvals": p.counted(t.UserID, t.TenantID), "needed": p.needed()}
		if n := len(p.Approvals); n > 0 {
			ev["principal"] = p.Approvals[n-1].Principal
		}
		evs = append(evs, Event{ID: first + int64(len(evs)), Name: EventApprovalRecorded, Data: ev})
	}
	na.reserve(int64(len(evs)) + 1) // and the request_complete that ends the answer
	next.UpdatedAt = now
	res := pausedResult(ag, next, now)
	evs = append(evs, Event{ID: na.LastEventID, Name: EventRequestComplete, Data: res})
	logged, err := eventBatch(a.ID, na.Epoch, evs)
	if err != nil {
		return nil, err
	}
	w := &Write{Task: next, PrevVersion: t.Version, Events: logged,
		Idem: e.newIdem(in.UserID, ag.Name, "resume", in.Idem, t.ID, t.SessionID, a.ID, a.Round)}
	// A direct caller's waiter is bound with the recording: the request
	// stays Paused, so a pause it is owed is answered now (as a pause's).
	addPausedWaiter(w, in.Waiter, OutboxItem{TaskID: t.ID, RequestID: a.ID, Agent: t.Agent, UserID: t.UserID, CreatedAt: now})
	if err := e.commit(ctx, w, "record approvals of %s", t.ID); err != nil {
		return nil, err
	}
	return &recordedLeg{result: res, events: evs, taskID: t.ID, reqID: a.ID, deadline: in.Deadline}, nil
}

// pendingByID is the pending call of id (the zero call if none).
func pendingByID(pending []PendingCall, id string) *PendingCall {
	for i := range pending {
		if pending[i].ToolCallID == id {
			return &pending[i]
		}
	}
	return &PendingCall{}
}

// recordedLeg answers a recorded decision: its events, then the request
// still Paused.
type recordedLeg struct {
	result   *RequestResult
	events   []Event
	taskID   string
	reqID    string
	deadline time.Time
}

func (l *recordedLeg) Execute(ctx context.Context, sink Sink) *RequestResult {
	if sink != nil {
		for _, ev := range l.events {
			sink.Emit(ev)
		}
	}
	return l.result
}
func (l *recordedLeg) Task() *Task         { return nil }
func (l *recordedLeg) TaskID() string      { return l.taskID }
func (l *recordedLeg) RequestID() string   { return l.reqID }
func (l *recordedLeg) Deadline() time.Time { return l.deadline }
