// Approvals: a model turn whose calls need a person's approval pauses
// before anything of that turn runs (pause), with the round's pending
// calls; a decided round runs what was approved and closes the rest
// (runDecided; docs/api.md, "Resume").

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// ResumeURL is the path of a paused request's resume route.
func ResumeURL(agentName, taskID, requestID string) string {
	return "/agents/" + agentName + "/tasks/" + taskID + "/requests/" + requestID + "/resume"
}

// InputHash binds an approval to the exact input: the SHA-256 of its
// canonical JSON (keys sorted, numbers kept as written).
func InputHash(input json.RawMessage) string {
	canon := canonicalJSON(input)
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func canonicalJSON(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// needApproval returns the pending calls of a model turn: those whose tool
// needs approval, and its input calls (inputs.go). A call of an unknown
// tool or with invalid input needs neither: it becomes an error result the
// model can correct.
// seq is the history entry that holds the calls: META refers to it.
func (r *Run) needApproval(uses []Block, seq int64) []PendingCall {
	now := r.e.now()
	round := r.task.Active.Round + 1
	var out []PendingCall
	for _, u := range uses {
		if p := r.inputCall(u, seq, now, round); p != nil {
			out = append(out, *p)
			continue
		}
		bt, ok := r.agent.Tool(u.Name)
		if !ok || !bt.Policy.RequiresApproval {
			continue
		}
		if v, ok := bt.Tool.(InputValidator); ok && v.ValidateInput(inputOrEmpty(u.Input)) != nil {
			continue
		}
		need, rule, clauses := approvalOf(r.task, bt, u.Name, inputOrEmpty(u.Input))
		if !need {
			continue
		}
		ttl := bt.Policy.ApprovalTTL
		if ttl <= 0 {
			ttl = DefaultApprovalTTL
		}
		in := inputOrEmpty(u.Input)
		out = append(out, PendingCall{ToolCallID: u.ID, Name: u.Name, Input: in, InputHash: InputHash(in), ItemSeq: seq, ExpiresAt: now.Add(ttl), Round: round, Rule: rule, Clauses: clauses})
	}
	return out
}

func inputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(in)) == 0 {
		return json.RawMessage(`{}`)
	}
	return in
}

// pause persists the round's pending calls before anything of the turn
// runs, and ends the leg Paused. awaits, when a sub-agent paused, are the
// leaf rounds the pending calls are copies of (docs/architecture.md).
func (r *Run) pause(ctx context.Context, pending []PendingCall, round int, awaits []Await) {
	a := r.task.Active
	prevRound := a.Round
	a.Round = round
	a.Pending = pending
	a.Awaits = awaits
	a.Status = StatusPaused
	r.task.Status = StatusPaused
	wctx, cancel := writeContext(ctx)
	defer cancel()
	err := r.write(wctx, func(t *Task) {
		if t.Active.CancelRequested {
			// Rebased on a cancel's flag: no pause (nor its webhook, whose
			// event ids the cancel's end then takes); the leg saves its
			// entries, still holding the request, and ends Canceled.
			t.Active.Round, t.Active.Pending, t.Active.Awaits, t.Active.Status = prevRound, nil, nil, StatusRunning
			t.Status = StatusRunning
			return
		}
		// approval_required and/or input_required, and request_complete,
		// follow this write.
		t.Active.LastEventID = r.eventID + int64(pauseEvents(pending))
		t.Active.ClaimToken = ""
	}, nil, time.Time{})
	if err != nil {
		r.e.log().ErrorContext(ctx, "recording the pause failed", "task_id", r.task.ID, "request_id", r.reqID, "err", err)
		a.Round, a.Status, a.Pending, a.Awaits = prevRound, StatusRunning, nil, nil
		r.task.Status = StatusRunning
		r.failPause(pending, awaits, "the request could not be saved")
		return
	}
	if na := r.task.Active; na.CancelRequested {
		// A cancel landed while the pause was written (the write rebased on
		// its flag): the request ends Canceled now instead of waiting.
		r.cancelMu.Lock()
		ci := na.CancelFlag.info()
		r.canceled = &ci
		r.cancelMu.Unlock()
		na.Status, na.Pending, na.Awaits = StatusRunning, nil, nil
		r.task.Status = StatusRunning
		r.status = StatusCanceled
		return
	}
	r.status = StatusPaused
	resumeURL := ResumeURL(r.task.Agent, r.task.ID, r.reqID)
	if hasInputs(pending) {
		defer r.emit(EventInputRequired, map[string]any{
			"request_id": r.reqID, "round": a.Round, "inputs": PendingInputViews(pending, r.e.now(), false), "resume_url": resumeURL,
		})
	}
	if calls := approvalCalls(pending); len(calls) > 0 {
		r.emit(EventApprovalRequired, map[string]any{
			"request_id": r.reqID, "round": a.Round, "tool_calls": calls, "resume_url": resumeURL,
		})
	}
}

// approvalCalls are the tool_calls of an approval_required event: the
// pending calls that wait for an approval (a leaf's with where to decide
// it at the leaf).
func approvalCalls(pending []PendingCall) []map[string]any {
	calls := make([]map[string]any, 0, len(pending))
	for _, p := range pending {
		if p.Kind != "" {
			continue
		}
		call := map[string]any{"id": p.ToolCallID, "name": p.Name, "input": jsonRaw(p.Input), "expires_at": p.ExpiresAt.UTC().Format(time.RFC3339)}
		if p.Rule != "" {
			call["rule"] = p.Rule
		}
		if l := p.Leaf; l != nil {
			call["agent"], call["task_id"], call["request_id"], call["round"] = l.Agent, l.TaskID, l.RequestID, p.Round
			call["resume_url"] = l.resumeURL()
		}
		calls = append(calls, call)
	}
	return calls
}

// MaxPendingBytes bounds what a round's pending calls keep on META in
// total: a remote agent's pending inputs copied up a chain, an MCP
// server's requests and state; the rest moves to JINP# items (jinp.go;
// docs/architecture.md, "Pauses for input").
const MaxPendingBytes = 64 << 10

// failPause ends a request whose pause could not be kept (too large, or its
// write refused) Failed internal, never saying "not run" of a call that
// ran: a sub-agent call whose child paused and a tool call that asked for
// input ran, and get outcome_unknown (their children are canceled once the
// end is committed); the round's calls awaiting a decision did not run.
func (r *Run) failPause(pending []PendingCall, awaits []Await, msg string) {
	ran := map[string]bool{}
	var order []string
	note := func(id string) {
		if !ran[id] {
			ran[id] = true
			order = append(order, id)
		}
	}
	for _, w := range awaits {
		note(w.Via)
		if cc := findCall(r.task.Active, w.Via); cc != nil {
			r.closedChildren = append(r.closedChildren, *cc)
		}
	}
	for _, p := range pending {
		if p.Kind == InputElicitation && p.Leaf == nil && p.Elicit != nil {
			note(p.Elicit.callID(p.ToolCallID))
		}
	}
	var closing []Block
	for _, id := range order {
		closing = append(closing, ErrorResult(id, CodeOutcomeUnknown+": the call ran, but what it waits on could not be kept ("+msg+")"))
	}
	r.addResults(closing)
	r.fail(CodeInternal, msg)
}

// pauseEvents counts the events a pause emits: approval_required when it
// holds approvals, input_required when it holds inputs, and
// request_complete.
func pauseEvents(pending []PendingCall) int {
	n := 1
	if hasInputs(pending) {
		n++
	}
	if len(PendingViews(pending, time.Time{}, false)) > 0 {
		n++
	}
	return n
}

// runDecided carries out a round's decision: the approved (or edited) calls
// and the turn's calls that needed no approval run; rejected calls get an
// error result with the reason. On a takeover, a call that may have run
// already re-runs only if its tool is idempotent. It returns false if the
// leg must end.
func (r *Run) runDecided(ctx context.Context) bool {
	d := r.decided
	if d.needsResults() {
		// META keeps answers by hash: a takeover reads them from the
		// round's DEC# item. A caller's copy of its leaves' decision
		// holds none (the leaves' DEC# items do, and their legs use
		// them): it goes on without.
		full := *d
		if err := r.e.loadResults(ctx, r.taskID, r.reqID, &full); err == nil {
			d = &full
		} else if decidesOwnCalls(d, r.danglingUses()) {
			r.e.log().ErrorContext(ctx, "reading the round's answers failed", "task_id", r.taskID, "request_id", r.reqID, "err", err)
			r.fail(CodeInternal, "the request's answers could not be read")
			return false
		}
	}
	byID := map[string]CallDecision{}
	for _, c := range d.Calls {
		byID[c.ToolCallID] = c
	}
	replies, elicited := elicitReplies(d)
	uses := r.danglingUses()
	given := map[string]Block{}
	for i, u := range uses {
		c, decided := byID[u.ID]
		if cs, ok := elicited[u.ID]; ok {
			// An MCP call that asked for input: it runs again with the
			// answers, or, any of them rejected, ends with the reasons.
			decided = false
			if b, rejected := r.elicitDecided(u.ID, d, cs); rejected {
				given[u.ID] = b
			} else {
				r.setReply(u.ID, replies[u.ID])
			}
		}
		if decided {
			if b, ok := r.decidedCall(&uses[i], c, d); ok {
				given[u.ID] = b
			}
		}
		if _, ok := given[u.ID]; !ok && r.leg == legTakeover {
			if b, ok := r.notRunAgain(u); ok {
				given[u.ID] = b
			}
		}
	}
	if len(uses) > 0 {
		r.runAndRecord(ctx, uses, given)
	}
	return true
}

// decidedCall says what the round's decision c of the call u is (its
// event, unless a takeover's leg: it was said) and returns the result it
// gives, if any: a rejection's error, an answer. An edit changes u's input.
func (r *Run) decidedCall(u *Block, c CallDecision, d *Decision) (Block, bool) {
	by := c.decidedBy(d)
	ev := map[string]any{"tool_call_id": u.ID, "by": by, "round": d.Round}
	switch c.Action {
	case ActionReject:
		msg := "rejected by " + by
		if c.Reason != "" {
			ev["reason"] = c.Reason
			msg += ": " + c.Reason
		}
		if r.leg != legTakeover {
			r.emit(EventRejected, ev)
		}
		return ErrorResult(u.ID, msg), true
	case ActionAnswer:
		if r.leg != legTakeover {
			r.emit(EventAnswered, ev)
		}
		return r.truncate(answerResult(u.ID, c.Result)), true
	}
	if c.Reason != "" {
		ev["reason"] = c.Reason
	}
	if c.Remember != "" {
		ev["remember"] = c.Remember
	}
	if c.Action == ActionEdit {
		ev["input"] = jsonRaw(c.Input)
		u.Input = c.Input
	}
	if r.leg != legTakeover {
		r.emit(EventApproved, ev)
	}
	return Block{}, false
}

// danglingUses are the request's tool calls without a result, in order.
// decidesOwnCalls tells whether d decides calls of this request's own:
// a caller's copy of its leaves' decision (read by its takeover) names the
// leaves' calls, whose answers the leaves' DEC# items hold and their legs
// use, never the caller.
func decidesOwnCalls(d *Decision, uses []Block) bool {
	for _, c := range d.Calls {
		for _, u := range uses {
			if u.ID == c.ToolCallID {
				return true
			}
		}
	}
	return false
}

func (r *Run) danglingUses() []Block { return unansweredUses(r.history, r.reqID) }

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionEdit    = "edit"
)

// asInput is the decision of call id as a resume body states it: what a
// caller sends its leaves, what a takeover sends again.
func (c CallDecision) asInput(id string) DecisionInput {
	di := DecisionInput{ToolCallID: id, Action: c.Action, Reason: c.Reason, Remember: c.Remember, Result: c.Result, ResultHash: c.ResultHash}
	if c.Action == ActionEdit {
		di.Input = c.Input
	}
	return di
}

// decidedBy is who decided the call: whose approval settled it (the last
// counted toward it), else the round's approver (the default policy).
func (c CallDecision) decidedBy(d *Decision) string {
	if n := len(c.Approvals); n > 0 {
		return c.Approvals[n-1].By
	}
	return d.Approver
}

// elicitDecided emits the decisions on a call's elicitations and, when one
// was rejected, returns the call's error result carrying the reasons.
func (r *Run) elicitDecided(id string, d *Decision, cs []CallDecision) (Block, bool) {
	var reasons []string
	rejected := false
	for _, c := range cs {
		ev := map[string]any{"tool_call_id": c.ToolCallID, "by": d.Approver, "round": d.Round}
		if c.Action == ActionReject {
			rejected = true
			if c.Reason != "" {
				ev["reason"] = c.Reason
				reasons = append(reasons, c.Reason)
			}
			if r.leg != legTakeover {
				r.emit(EventRejected, ev)
			}
			continue
		}
		if r.leg != legTakeover {
			r.emit(EventAnswered, ev)
		}
	}
	if !rejected {
		return Block{}, false
	}
	msg := "rejected by " + d.Approver
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, "; ")
	}
	return ErrorResult(id, msg), true
}
