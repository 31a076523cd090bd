// Resume: a decision on a paused request, read against the answer table
// (docs/api.md, "Resume"): the round decided and claimed (claimResume), a
// dead leg's decision taken over (takeOver), and which follower answers a
// duplicate — of the leg in flight, of a past round, of an ended request
// (the followers themselves are leg.go's). A caller waiting on sub-agents
// is decided from its leaves (caller.go); an expired round is expiry.go's.

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-agents/hitch/internal/schema"
)

// ResumeRequest is the resume body (docs/api.md ResumeRequest).
type ResumeRequest struct {
	Action    string          `json:"action"`
	Round     *int            `json:"round"`
	Reason    string          `json:"reason"`
	Decisions []DecisionInput `json:"decisions"`
	// Remember "task" with action approve trusts every decided call's tool
	// (and rule) for the rest of the task.
	Remember string `json:"remember,omitempty"`
}

// DecisionInput decides one call.
type DecisionInput struct {
	ToolCallID string          `json:"tool_call_id"`
	Action     string          `json:"action"`
	Input      json.RawMessage `json:"input"`
	Reason     string          `json:"reason"`
	// Remember "task" (approve or edit only) trusts the call's tool (and
	// rule) for the rest of the task.
	Remember string `json:"remember,omitempty"`
	// Result answers an input call (action answer).
	Result json.RawMessage `json:"result,omitempty"`
	// ResultHash names a stored answer instead of Result: a decision the
	// engine carries on itself (a takeover, a caller's re-send); never
	// read from a client.
	ResultHash string `json:"-"`
	// InputHash, on an approve, names the input approved: required once
	// a call's input was edited by an earlier decision of its round (a
	// quorum's, approvers.go), so nobody approves an input not shown.
	InputHash string `json:"input_hash,omitempty"`
}

// Check validates the body's shape (400s that need no state).
func (b *ResumeRequest) Check() error {
	if len(b.Decisions) > 0 && b.Action != "" {
		// Exclusive: a body saying "reject" must never approve through its
		// decisions (docs/api.md ResumeRequest).
		return Errorf(CodeInvalidDecisions, "give either action (every pending call) or decisions (each call its own action), not both")
	}
	if len(b.Decisions) == 0 {
		if b.Action != ActionApprove && b.Action != ActionReject {
			return Errorf(CodeInvalidAction, "action must be approve or reject (or give decisions)")
		}
	}
	switch {
	case b.Remember != "" && b.Remember != RememberTask:
		return Errorf(CodeInvalidAction, "remember must be %q, got %q", RememberTask, b.Remember)
	case b.Remember != "" && len(b.Decisions) > 0:
		return Errorf(CodeInvalidDecisions, "with decisions, remember goes in each decision")
	case b.Remember != "" && b.Action != ActionApprove:
		return Errorf(CodeInvalidAction, "only an approve can be remembered")
	}
	if b.Round != nil && *b.Round < 1 {
		return Errorf(CodeInvalidDecisions, "round must be 1 or more")
	}
	seen := map[string]bool{}
	for i, d := range b.Decisions {
		if d.Action != ActionAnswer && len(bytes.TrimSpace(d.Result)) > 0 {
			return Errorf(CodeInvalidDecisions, "decisions[%d]: result is only for answer", i)
		}
		switch d.Action {
		case ActionApprove, ActionReject:
			if len(d.Input) > 0 && string(d.Input) != "null" {
				return Errorf(CodeInvalidDecisions, "decisions[%d]: input is only for edit", i)
			}
		case ActionEdit:
			if len(d.Input) == 0 || d.Input[0] != '{' {
				return Errorf(CodeInvalidDecisions, "decisions[%d]: edit needs input, a JSON object", i)
			}
		case ActionAnswer:
			if len(d.Input) > 0 && string(d.Input) != "null" {
				return Errorf(CodeInvalidDecisions, "decisions[%d]: input is only for edit; an answer goes in result", i)
			}
			if r := bytes.TrimSpace(d.Result); (len(r) == 0 || string(r) == "null") && d.ResultHash == "" {
				return Errorf(CodeInvalidDecisions, "decisions[%d]: answer needs result, a JSON value (a string for a question)", i)
			}
		default:
			return Errorf(CodeInvalidAction, "decisions[%d].action must be approve, reject, edit or answer", i)
		}
		if d.ToolCallID == "" {
			return Errorf(CodeInvalidDecisions, "decisions[%d]: tool_call_id is required", i)
		}
		switch {
		case d.Remember != "" && d.Remember != RememberTask:
			return Errorf(CodeInvalidDecisions, "decisions[%d]: remember must be %q, got %q", i, RememberTask, d.Remember)
		case d.Remember != "" && d.Action == ActionReject:
			return Errorf(CodeInvalidDecisions, "decisions[%d]: only an approve or an edit can be remembered", i)
		}
		if seen[d.ToolCallID] {
			return Errorf(CodeInvalidDecisions, "decisions[%d]: tool call %s is decided twice", i, d.ToolCallID)
		}
		seen[d.ToolCallID] = true
	}
	return nil
}

// ResumeInput is a resume call.
type ResumeInput struct {
	Agent, UserID, TaskID, RequestID string
	// TenantID and Groups are the sender's tenant and groups claim's
	// values, Via how the decision arrived: who may decide which call
	// (approvers.go).
	TenantID string
	Groups   []string
	Via      string
	Body     ResumeRequest
	Deadline time.Time
	Idem     *Idempotency
	// Waiter, when set, is told of the request's end (docs/architecture.md).
	Waiter *Waiter
	// claims, for a leaf's part of a decision at its caller, gathers the
	// leaf's claim instead of writing it (caller.go).
	claims *claimSet
}

// decider is who sends the decision.
func (in ResumeInput) decider() Decider {
	return Decider{UserID: in.UserID, TenantID: in.TenantID, Groups: in.Groups, Via: in.Via}
}

// StartResume decides a paused request's round and claims it (docs/api.md the
// resume answer table). A duplicate of a decision in flight or done returns
// a follower (followLeg) that answers the same outcome.
func (e *Engine) StartResume(ctx context.Context, in ResumeInput) (_ Leg, err error) {
	defer wrap(&err, "resume request %s of task %s", in.RequestID, in.TaskID)
	if err := in.Body.Check(); err != nil {
		return nil, err
	}
	if in.TaskID, err = ParseID("task_id", in.TaskID); err != nil {
		return nil, err
	}
	if in.RequestID, err = ParseID("request_id", in.RequestID); err != nil {
		return nil, err
	}
	run, err := e.startLoop(ctx, in.UserID, in.Agent, "resume", in.Idem, func(ag *Agent, bound *IdemRecord) (Leg, error) {
		if bound != nil && in.Body.Round == nil {
			// The retry decides the round its first send decided.
			round := bound.Round
			in.Body.Round = &round
		}
		return e.tryResume(ctx, ag, in)
	})
	return e.bindFollower(ctx, run, err, in.Waiter)
}

func (e *Engine) tryResume(ctx context.Context, ag *Agent, in ResumeInput) (Leg, error) {
	t, items, denied := e.LoadOwned(ctx, ag.Name, in.UserID, in.TaskID)
	if t == nil {
		return nil, denied
	}
	if CodeOf(denied) == CodeNotOwner && t.Active != nil && t.Active.ID == in.RequestID && activeParty(t, in.decider()) {
		denied = nil // one who may decide a call of the request (approvers.go)
	}
	if denied == nil && (t.Active == nil || len(t.Active.Awaits) == 0) {
		// (A caller's pending calls are its leaves': the leaves' own
		// resumes read their inputs, docs/guide/budgets.md, "Budgets".)
		if err := e.pendingInputs(ctx, t, items); err != nil {
			return nil, err
		}
	}
	a := t.Active
	var ended *RequestRecord
	if a == nil || a.ID != in.RequestID {
		var err error
		if ended, err = e.findRecord(ctx, t.ID, in.RequestID); err != nil {
			return nil, err
		}
		if ended == nil {
			return nil, Errorf(CodeRequestNotFound, "no request %s in task %s", in.RequestID, t.ID)
		}
	}
	if ended != nil && (denied == nil || CodeOf(denied) == CodeNotOwner) {
		// Read once: the record's decisions answer the resume, and tell
		// whether one who is not the owner could decide a call of it.
		if err := e.loadDecisions(ctx, t.ID, ended.RequestID, &ended.Decisions); err != nil {
			return nil, err
		}
		if denied != nil && decidedParty(t, ended.Decisions, in.decider()) {
			denied = nil
		}
	}
	if denied != nil {
		// Another agent's or user's task: after the request's 404.
		return nil, denied
	}
	now := e.now()
	if ended != nil {
		return e.resumeEnded(ag, t, ended, in)
	}
	return e.resumeActive(ctx, ag, t, items, in, now)
}

// resumeActive answers a resume of the task's active request.
func (e *Engine) resumeActive(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (Leg, error) {
	a := t.Active
	if pastRound(a, in.Body) {
		// Earlier rounds' decisions are DEC# items.
		if err := e.loadDecisions(ctx, t.ID, a.ID, &a.Decisions); err != nil {
			return nil, err
		}
	}
	if err := checkRound(a.Round, a.Decisions, a.Pending, in.Body); err != nil {
		return nil, err
	}
	if in.Body.Round == nil && len(in.Body.Decisions) > 0 && !decidesPending(a, in.Body.Decisions) {
		// Decisions bind by their calls: they name the round they decide.
		if r := roundOfCalls(a.Decisions, in.Body.Decisions); r > 0 {
			in.Body.Round = &r
		}
	}
	if in.Body.Round != nil && *in.Body.Round < a.Round && (a.Status == StatusRunning || a.Status == StatusPaused) {
		return e.resumePastRound(ag, t, in, now)
	}
	chainExpired := false
	if a.Status == StatusPaused && len(a.Awaits) > 0 && !a.CancelRequested && (roundExpired(a, now) || remotePartTooLate(a, now)) {
		decided, err := e.leafDecided(ctx, t)
		if err != nil {
			return nil, err // a read failed: an error answer, never an expiry
		}
		chainExpired = !decided
	}
	switch {
	case chainExpired:
		// A leaf of the chain expired: the whole chain ends, nothing runs
		// and no model is called anywhere (docs/architecture.md).
		at := roundExpiry(a)
		if at.After(now) {
			at = now // a remote part's round taken as expired (remotePartTooLate)
		}
		code, msg := expiryOf(a, at)
		rec := &RequestRecord{RequestView: RequestView{Status: StatusFailed, Error: &ErrorInfo{Code: code, Message: msg}}}
		if err := e.expireCaller(ctx, ag, t, items, rec); err != nil {
			return nil, err
		}
		return nil, expiredError(a, at)
	case a.Status == StatusPaused && len(a.Awaits) > 0 && !a.CancelRequested:
		// A caller waiting on a sub-agent: the leaves decide (caller.go).
		return e.resumeAtCaller(ctx, ag, t, items, in, now)
	case a.Status == StatusPaused && roundExpired(a, now) && len(a.Awaits) == 0:
		// (A caller's round is a chain's, ended above — or, flagged by a
		// cancel under way, the cancel's: never applyExpiry, whose
		// did-not-run text would close its sub-agent calls.)
		if _, err := e.applyExpiry(ctx, ag, t, items, now); err != nil {
			return nil, err
		}
		return nil, expiredError(a, roundExpiry(a))
	case a.Status == StatusPaused && a.CancelRequested:
		return nil, Errorf(CodeNotPaused, "request %s is being canceled", a.ID)
	case a.Status == StatusPaused:
		return e.claimResume(ctx, ag, t, items, in, now)
	}
	return e.resumeRunning(ctx, ag, t, items, in, now)
}

// leafDecided tells whether every leaf the caller's round awaits has moved
// past that round by a decision taken at its own URL (it runs that round,
// or went on from it, and did not end by expiry): the round was decided
// before the copy of its expiry the caller holds was reached, so the chain
// did not expire; the leaves' answer tables decide (caller.go). One leaf
// still waiting in the round (or a remote one, whose state is not read
// here) leaves the expiry to end the whole chain. A remote leaf is read on
// its system (remoteRoundDecided): the caller's copy of its expiry decides
// nothing there. A failed read is an error: it decides nothing — unless
// another leaf still waits in the round, which decides it, whichever of
// them comes first (docs/architecture.md, "Orchestration").
func (e *Engine) leafDecided(ctx context.Context, t *Task) (bool, error) {
	a := t.Active
	var unread error
	for _, w := range a.Awaits {
		ok, err := e.roundDecidedAt(ctx, t, w)
		if err != nil {
			unread = err // decides nothing, unless another leaf still waits
			continue
		}
		if !ok {
			// One leaf still waiting in the round: the chain expired,
			// whatever a leaf that could not be read did.
			return false, nil
		}
	}
	if unread != nil {
		return false, unread
	}
	return len(a.Awaits) > 0, nil
}

// roundDecidedAt tells whether the leaf round w that the caller t awaits
// was decided at the leaf's own URL. A leaf reached through a local
// caller below t is read through that caller, which knows where it is (a
// remote leaf is no task of this system): the caller moved past the
// request t shows, or its own await of the leaf was decided.
func (e *Engine) roundDecidedAt(ctx context.Context, t *Task, w Await) (bool, error) {
	a := t.Active
	if cc := remoteVia(a, w); cc != nil {
		return e.remoteRoundDecided(ctx, t, *cc, w)
	}
	cc := findCall(a, w.Via)
	if cc == nil || cc.TaskID == w.TaskID {
		return e.awaitDecided(ctx, w)
	}
	ct, err := e.Store.GetTask(ctx, cc.TaskID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read caller %s: %w", cc.TaskID, err)
	}
	ca := ct.Active
	if ca == nil || ca.ID != cc.RequestID || ca.Status != StatusPaused {
		// It ran on or ended: the leaf's round moved it. An expiry
		// ending it ends this chain as its continuation does.
		if ca != nil {
			return true, nil
		}
		expired, err := e.endedByExpiry(ctx, ct.ID, cc.RequestID)
		return !expired, err
	}
	for _, cw := range ca.Awaits {
		if cw.RequestID == w.RequestID {
			return e.roundDecidedAt(ctx, ct, cw)
		}
	}
	return true, nil // it waits on that leaf no more: a later round
}

// endedByExpiry tells whether a request ended Failed by an expiry.
func (e *Engine) endedByExpiry(ctx context.Context, taskID, rid string) (bool, error) {
	rec, err := e.findRecord(ctx, taskID, rid)
	if err != nil {
		return false, err
	}
	return rec != nil && rec.Status == StatusFailed && rec.Error != nil && IsExpiry(rec.Error.Code), nil
}

// remoteRoundDecided tells whether the remote leaf round w was decided on its
// own system: its task runs, paused in a later round, or ended otherwise
// than by an expiry. Its outcome then reaches the caller as the call's
// result (the poll), never the caller's copy of the expiry.
func (e *Engine) remoteRoundDecided(ctx context.Context, t *Task, cc ChildCall, w Await) (bool, error) {
	ra := e.remoteOf(t.Agent, cc)
	if ra == nil || cc.RequestID == "" {
		return false, nil
	}
	rt, err := ra.Get(ctx, cc.TaskID, cc.RequestID)
	if ae := (*Error)(nil); errors.As(err, &ae) && ae.Code == CodeTaskNotFound {
		return false, nil
	}
	if err != nil {
		// Not read (its system down): an answer that says so, to retry —
		// never an expiry, nor a 500.
		e.log().Warn("reading a remote leaf's round failed", "task_id", t.ID, "agent", cc.Agent, "url", cc.Remote, "remote_task_id", cc.RequestID, "err", err)
		return false, Errorf(CodeRemoteUnavailable, "the agent %s at %s could not be reached to read the round its task %s is in; nothing changed: try again", cc.Agent, cc.Remote, cc.RequestID)
	}
	switch rt.Status {
	case StatusPaused:
		return rt.Round > w.Round, nil
	case StatusFailed:
		return rt.Error == nil || !IsExpiry(rt.Error.Code), nil
	}
	return true, nil
}

// awaitDecided tells whether the leaf round w was decided by a person; a
// leaf deleted since was not.
func (e *Engine) awaitDecided(ctx context.Context, w Await) (bool, error) {
	lt, err := e.Store.GetTask(ctx, w.TaskID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read leaf %s: %w", w.TaskID, err)
	}
	if la := lt.Active; la != nil && la.ID == w.RequestID {
		return la.Round > w.Round || (la.Round == w.Round && la.Status == StatusRunning && decisionOf(la.Decisions, w.Round) != nil), nil
	}
	rec, err := e.findRecord(ctx, w.TaskID, w.RequestID)
	if err != nil {
		return false, err
	}
	if rec == nil || (rec.Status == StatusFailed && rec.Error != nil && IsExpiry(rec.Error.Code)) {
		return false, nil
	}
	if err := e.loadDecisions(ctx, w.TaskID, w.RequestID, &rec.Decisions); err != nil {
		return false, err
	}
	d := decisionOf(rec.Decisions, w.Round)
	return d != nil && d.Approver != ApproverExpiry, nil
}

// resumePastRound: a decision of a round the request moved past (paused
// again, or running a later round). The same decision follows that
// round's leg; another is not_paused.
func (e *Engine) resumePastRound(ag *Agent, t *Task, in ResumeInput, now time.Time) (Leg, error) {
	a := t.Active
	if past := decisionOf(a.Decisions, *in.Body.Round); past != nil && !wholeRoundOfPart(past, in.Body) {
		if e.agrees(ag, t, in, past, now) {
			return e.pastLeg(e.follower(ag, t.ID, a.ID, past.Round, in.Deadline)), nil
		}
	}
	state := fmt.Sprintf("it is running round %d", a.Round)
	if a.Status == StatusPaused {
		state = fmt.Sprintf("it is paused in round %d", a.Round)
	}
	return nil, Errorf(CodeNotPaused, "round %d of request %s was decided otherwise; %s", *in.Body.Round, a.ID, state)
}

// resumeRunning: a decision sent again while its leg runs waits for the
// leg (and takes the request over if the leg dies); once its lease ended,
// it takes the request over at once. Another decision is a conflict.
func (e *Engine) resumeRunning(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (Leg, error) {
	a := t.Active
	last := lastDecision(a)
	if last == nil || (in.Body.Round != nil && *in.Body.Round != last.Round) {
		return nil, Errorf(CodeNotPaused, "request %s is running and not awaiting a decision", a.ID)
	}
	d, err := e.decide(ag, t, in, pendingOf(last), last.Round, now)
	if ae := (*Error)(nil); errors.As(err, &ae) && ae.Code == CodeRoundRequired {
		return nil, err // a stale approve-all is refused as such, whatever the state
	}
	if err != nil || !sameShare(last, d) || wholeRoundOfPart(last, in.Body) {
		return nil, Errorf(CodeDecisionConflict, "round %d of request %s was already decided otherwise", last.Round, a.ID)
	}
	if now.Before(a.LeaseUntil) {
		// A duplicate of a decision in flight waits; if the invocation
		// running it dies (its lease ends), it takes the request over.
		f := e.follower(ag, t.ID, a.ID, last.Round, in.Deadline)
		f.retake = func(ctx context.Context) (Leg, error) { return e.StartResume(ctx, in) }
		return f, nil
	}
	// The resume that claimed it died: take it over.
	return legOf(e.takeOver(ctx, ag, t, items, in, now))
}

// resumeEnded answers a resume of a request that is not the active one:
// rec, its record.
func (e *Engine) resumeEnded(ag *Agent, t *Task, rec *RequestRecord, in ResumeInput) (Leg, error) {
	// The round the request ended in: its record's, or its last
	// decision's. A chain's expiry closes the caller's round without a
	// decision of its own, so the decisions alone can lag a round behind.
	final := rec.Round
	if l := lastOf(rec.Decisions); l != nil && l.Round > final {
		final = l.Round
	}
	if err := checkRound(final, rec.Decisions, nil, in.Body); err != nil {
		return nil, err
	}
	if in.Body.Round == nil && len(in.Body.Decisions) > 0 {
		// Decisions bind by their calls: they name the round they decide.
		if r := roundOfCalls(rec.Decisions, in.Body.Decisions); r > 0 {
			in.Body.Round = &r
		}
	}
	round := final
	if in.Body.Round != nil {
		round = *in.Body.Round
	}
	last := decisionOf(rec.Decisions, round)
	if err := closedByExpiry(rec, last, round, final); err != nil {
		// One round, one outcome: 410 to every decision of it, whoever
		// applied the expiry and whatever came after (docs/api.md's
		// answer table).
		return nil, err
	}
	if last == nil || rec.Status == StatusCanceled {
		return nil, Errorf(CodeNotPaused, "request %s is not paused", in.RequestID)
	}
	if !e.agrees(ag, t, in, last, e.now()) || wholeRoundOfPart(last, in.Body) {
		if last.Round < final {
			return nil, Errorf(CodeNotPaused, "round %d of request %s was decided otherwise, and the request has ended", last.Round, in.RequestID)
		}
		return nil, Errorf(CodeDecisionConflict, "round %d of request %s was already decided otherwise", last.Round, in.RequestID)
	}
	f := e.follower(ag, t.ID, rec.RequestID, last.Round, in.Deadline)
	if last.Round < final {
		// Moved past this round: that round's leg answers.
		return e.pastLeg(f), nil
	}
	return f, nil
}

// checkRound checks what a body with decisions says of its round against a
// request whose latest round is current (docs/api.md ResumeRequest): a
// round above it is 400 invalid_decisions; a decision naming a call that
// asked in more than one round (an MCP server's next request in the same
// call keeps its id) must name its round, 400 round_required, so a retried
// or stale answer to one round never answers the next. decided are the
// request's decided rounds as known here, pending its paused round's calls.
func checkRound(current int, decided []Decision, pending []PendingCall, b ResumeRequest) error {
	if len(b.Decisions) == 0 {
		return nil
	}
	if b.Round != nil {
		if *b.Round > current {
			return Errorf(CodeInvalidDecisions, "round %d is past the request's current round %d", *b.Round, current)
		}
		return nil
	}
	rounds := map[string]map[int]bool{}
	note := func(id string, round int) {
		if rounds[id] == nil {
			rounds[id] = map[int]bool{}
		}
		rounds[id][round] = true
	}
	again := map[string]bool{}
	for _, p := range pending {
		note(p.ToolCallID, current)
		again[p.ToolCallID] = p.Again
	}
	for _, d := range decided {
		for _, c := range d.Calls {
			note(c.ToolCallID, d.Round)
		}
	}
	for i, d := range b.Decisions {
		if again[d.ToolCallID] || len(rounds[d.ToolCallID]) > 1 {
			return Errorf(CodeRoundRequired, "decisions[%d]: %s asked again in a later round (the same call): name the round this decision answers", i, d.ToolCallID)
		}
	}
	return nil
}

// closedByExpiry is the 410 of a decision of round, when the expiry closed
// it: its decision is the expiry's, or (a chain's expiry, which closes a
// caller's round without a decision of its own) it is the round the
// request ended in, Failed by an expiry. last is round's decision.
func closedByExpiry(rec *RequestRecord, last *Decision, round, final int) error {
	expired := rec.Status == StatusFailed && rec.Error != nil && IsExpiry(rec.Error.Code)
	switch {
	case last != nil && last.Approver == ApproverExpiry:
	case last == nil && round == final && expired:
	default:
		return nil
	}
	code, msg := CodeApprovalExpired, "approval expired"
	if expired {
		code, msg = rec.Error.Code, rec.Error.Message
	}
	return Errorf(code, "round %d of request %s was closed by its expiry (%s)", round, rec.RequestID, msg)
}

// decide turns the body into the sender's decision of the round, checked
// against the pending calls: 400 round_required, invalid_decisions,
// invalid_input; 403 not_approver; 409 decision_conflict. Its calls are
// the sender's share (approvers.go): the unsettled calls they may decide
// and have not (an owner may add rejections of any); a call they decided
// already the same way is left out (nothing new), so under the default
// policy the share is every pending call, as it always was.
func (e *Engine) decide(ag *Agent, t *Task, in ResumeInput, pending []PendingCall, round int, now time.Time) (*Decision, error) {
	b := in.Body
	d := &Decision{Round: round, Approver: in.UserID, DecidedAt: now}
	if b.Reason != "" {
		reason := b.Reason
		d.Reason = &reason
	}
	sh := shareOf(t, in.decider(), pending)
	if len(b.Decisions) == 0 {
		if hasInputs(pending) {
			return nil, Errorf(CodeInvalidAction, "round %d holds inputs: settle it with decisions covering every pending call (answer or reject each input)", round)
		}
		if round >= 2 && b.Round == nil {
			return nil, Errorf(CodeRoundRequired, "this request is in round %d: an approve or reject of every call must name the round", round)
		}
		if b.Round != nil && *b.Round != round {
			return nil, Errorf(CodeNotPaused, "request %s is not paused in round %d", in.RequestID, *b.Round)
		}
		targets, err := sh.ofAction(b.Action, b.Remember)
		if err != nil {
			return nil, err
		}
		d.Action = b.Action
		for _, p := range targets {
			d.Calls = append(d.Calls, CallDecision{ToolCallID: p.ToolCallID, Action: b.Action, Reason: b.Reason, InputHash: p.InputHash,
				Rule: p.Rule, Remember: b.Remember})
		}
		return d, nil
	}
	byID := map[string]PendingCall{}
	for _, p := range pending {
		byID[p.ToolCallID] = p
	}
	if err := sh.covered(b.Decisions, len(pending)); err != nil {
		return nil, err
	}
	actions := map[string]bool{}
	var refused error // a 403 or 409, answered after every 400
	for i, di := range b.Decisions {
		p, ok := byID[di.ToolCallID]
		if !ok {
			return nil, Errorf(CodeInvalidDecisions, "decisions[%d]: %s is not a pending call of this round", i, di.ToolCallID)
		}
		if err := checkDecisionKind(i, p, di); err != nil {
			return nil, err
		}
		if di.Remember != "" && (p.needed() > 1 || p.fourEyes()) {
			return nil, Errorf(CodeInvalidDecisions, "decisions[%d]: %s needs %d approvals (four eyes: %v): its decisions cannot be remembered", i, p.ToolCallID, p.needed(), p.fourEyes())
		}
		dup, err := sh.judge(i, p, di)
		if err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		if dup {
			continue // decided so already: nothing new
		}
		c := CallDecision{ToolCallID: di.ToolCallID, Action: di.Action, Reason: di.Reason, InputHash: p.InputHash,
			Rule: p.Rule, Remember: di.Remember}
		if p.Kind != "" {
			if err := answerOf(ag, i, p, di, &c); err != nil {
				return nil, err
			}
		}
		if di.Action == ActionEdit {
			if err := checkEdit(ag, p, di.Input); err != nil {
				return nil, Errorf(CodeInvalidInput, "decisions[%d]: the edited input does not fit %s's schema: %s", i, p.Name, err.Error())
			}
			c.Input = json.RawMessage(canonicalJSON(di.Input))
			c.OriginalInput = p.Input
			c.InputHash = InputHash(di.Input)
		}
		actions[di.Action] = true
		d.Calls = append(d.Calls, c)
	}
	if refused != nil {
		return nil, refused
	}
	d.Action = "mixed"
	if len(actions) <= 1 {
		d.Action = b.Decisions[0].Action
		for a := range actions {
			d.Action = a
		}
	}
	return d, nil
}

// checkEdit checks an edited input against the call's tool: a remote
// agent's call against the input schema its remote showed (none shown:
// the remote alone checks it), any other against ag's tool.
func checkEdit(ag *Agent, p PendingCall, input json.RawMessage) error {
	if p.RemoteInput != nil {
		if p.InputSchema == nil {
			return nil
		}
		s, err := schema.Compile(p.InputSchema)
		if err != nil {
			return nil // a schema this side cannot read: the remote checks
		}
		return s.Validate(input, "input")
	}
	if bt, ok := ag.Tool(p.Name); ok {
		if v, ok := bt.Tool.(InputValidator); ok {
			return v.ValidateInput(input)
		}
	}
	return nil
}

func pendingOf(d *Decision) []PendingCall {
	out := make([]PendingCall, 0, len(d.Calls))
	for _, c := range d.Calls {
		in := c.OriginalInput
		hash := c.InputHash
		if c.Action == ActionEdit {
			hash = InputHash(c.OriginalInput)
		}
		out = append(out, PendingCall{ToolCallID: c.ToolCallID, Input: in, InputHash: hash, Round: d.Round, Rule: c.Rule, Kind: c.Kind, Elicit: c.Elicit,
			Clauses: c.Clauses, Approvals: c.Approvals})
	}
	return out
}

// wholeRoundOfPart tells whether b decides a whole round (an action and
// no decisions) that past decided only in part (a caller's copy of one
// leaf's decision while another waited): never the same decision.
func wholeRoundOfPart(past *Decision, b ResumeRequest) bool {
	return past.Partial && len(b.Decisions) == 0
}

// agrees tells whether in decides past's round as it was decided.
func (e *Engine) agrees(ag *Agent, t *Task, in ResumeInput, past *Decision, now time.Time) bool {
	d, err := e.decide(ag, t, in, pendingOf(past), past.Round, now)
	return err == nil && sameShare(past, d)
}

// sameShare tells whether each call d decides was decided so in past: a
// sender's share of a round (under the default policy, its every call,
// so the whole decision) agreeing with what settled it. A share with no
// calls repeats what the sender recorded before.
func sameShare(past, d *Decision) bool {
	key := func(c CallDecision) string {
		return c.Action + "|" + c.InputHash + "|" + c.Remember + "|" + c.ResultHash
	}
	was := map[string]string{}
	for _, c := range past.Calls {
		was[c.ToolCallID] = key(c)
	}
	for _, c := range d.Calls {
		if k, ok := was[c.ToolCallID]; !ok || k != key(c) {
			return false
		}
	}
	return true
}

func decisionOf(ds []Decision, round int) *Decision {
	for i := range ds {
		if ds[i].Round == round {
			return &ds[i]
		}
	}
	return nil
}

// pastRound tells whether a resume of a may name a round before its
// current one: by its round, or by decisions of calls not pending.
func pastRound(a *ActiveRequest, b ResumeRequest) bool {
	if b.Round != nil {
		return *b.Round < a.Round
	}
	return len(b.Decisions) > 0 && !decidesPending(a, b.Decisions)
}

// loadDecisions reads the request's decided rounds (DEC# items) into ds,
// keeping what ds holds when there are none (a task written before them).
// Answers come by their hashes only, as META keeps them: what is read here
// may be written back with META (a takeover), and the answers themselves
// stay in their DEC# items (loadResults).
func (e *Engine) loadDecisions(ctx context.Context, taskID, rid string, ds *[]Decision) error {
	decs, err := e.Store.ListDecisions(ctx, taskID, rid)
	if err != nil {
		return fmt.Errorf("list decisions of %s: %w", rid, err)
	}
	if len(decs) == 0 {
		return nil
	}
	out := make([]Decision, 0, len(decs))
	for _, d := range decs {
		out = append(out, d.Decision.withoutResults())
	}
	*ds = out
	return nil
}

func lastOf(ds []Decision) *Decision {
	if len(ds) == 0 {
		return nil
	}
	return &ds[len(ds)-1]
}

func lastDecision(a *ActiveRequest) *Decision {
	if d := lastOf(a.Decisions); d != nil && d.Round == a.Round {
		return d
	}
	return nil
}

// ApproverExpiry decides an expired round.
const ApproverExpiry = "system:expiry"

// claimResume records the decision and claims the request.
func (e *Engine) claimResume(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (Leg, error) {
	a := t.Active
	d, err := e.decide(ag, t, in, a.Pending, a.Round, now)
	if err != nil {
		return nil, err
	}
	pending, settled := recordShare(t, a.Pending, d, in.decider(), now)
	if !settled || len(d.Calls) == 0 {
		// Short of a quorum (or nothing new): recorded, still Paused.
		return e.recordApprovals(ctx, ag, t, in, d, pending, now)
	}
	d = roundDecision(d, pending)
	next := e.nextOf(t)
	na := next.Active
	deadline := e.claim(na, in.Deadline, now)
	na.Epoch++
	na.Decisions = []Decision{d.withoutResults()} // earlier rounds' are DEC# items; answers only there
	remember(next, a, d)
	na.Pending = nil
	next.Status, next.UpdatedAt = StatusRunning, now
	edited := editItems(items, a.ID, d)
	w := &Write{Task: next, PrevVersion: t.Version, Items: edited, Decisions: []RequestDecision{{RequestID: a.ID, Decision: *d}},
		Idem: e.newIdem(in.UserID, ag.Name, "resume", in.Idem, t.ID, t.SessionID, a.ID, a.Round)}
	addWaiter(w, in.Waiter)
	w.newLeg = true // a new leg: the waiters hear of it
	observe := func() { e.observeDecision(ag.Name, d, now.Sub(t.UpdatedAt)) }
	if in.claims != nil {
		in.claims.add(w, observe) // it lands with its caller's claim
		in.claims.leafClaims++
	} else if err := e.commit(ctx, w, "claim resume of %s", t.ID); err != nil {
		return nil, err
	} else {
		observe()
	}
	history := replaceItems(items, edited)
	run := e.newRun(ag, next, history, deadline)
	run.leg, run.kind = legResume, KindResume
	run.decided = d // with its answers, which META holds by hash
	return run, nil
}

// takeOver claims a running resume whose lease expired.
func (e *Engine) takeOver(ctx context.Context, ag *Agent, t *Task, items []Item, in ResumeInput, now time.Time) (*Run, error) {
	e.log().Warn("taking over a resume whose lease expired", "task_id", t.ID, "request_id", t.Active.ID)
	next := e.nextOf(t)
	deadline := e.claim(next.Active, in.Deadline, now)
	e.takeOverLeg(ctx, t, next.Active)
	next.UpdatedAt = now
	w := &Write{Task: next, PrevVersion: t.Version}
	addWaiter(w, in.Waiter)
	w.newLeg = true // a new leg: the waiters hear of it
	if err := e.commit(ctx, w, "take over %s", t.ID); err != nil {
		return nil, err
	}
	run := e.newRun(ag, next, items, deadline)
	run.decided = lastDecision(next.Active)
	run.leg = legTakeover
	run.kind = KindResume
	return run, nil
}

// editItems rewrites the request's assistant entries whose calls were
// edited: the stored tool_use input becomes the edited one.
func editItems(items []Item, rid string, d *Decision) []Item {
	edits := map[string]json.RawMessage{}
	for _, c := range d.Calls {
		if c.Action == ActionEdit {
			edits[c.ToolCallID] = c.Input
		}
	}
	if len(edits) == 0 {
		return nil
	}
	var out []Item
	for _, it := range items {
		if it.RequestID != rid || it.Role != RoleAssistant {
			continue
		}
		changed := false
		content := make([]Block, len(it.Content))
		copy(content, it.Content)
		for i, b := range content {
			if in, ok := edits[b.ID]; ok && b.Type == BlockToolUse {
				content[i].Input = in
				changed = true
			}
		}
		if changed {
			it.Content = content
			out = append(out, it)
		}
	}
	return out
}

func replaceItems(items, repl []Item) []Item {
	if len(repl) == 0 {
		return items
	}
	bySeq := map[int64]Item{}
	for _, it := range repl {
		bySeq[it.Seq] = it
	}
	out := make([]Item, len(items))
	for i, it := range items {
		if r, ok := bySeq[it.Seq]; ok {
			it = r
		}
		out[i] = it
	}
	return out
}

func pausedResult(ag *Agent, t *Task, now time.Time) *RequestResult {
	a := t.Active
	return &RequestResult{
		SessionID: t.SessionID, TaskID: t.ID, RequestID: a.ID, Status: StatusPaused, Round: a.Round,
		PendingApprovals: PendingViews(a.Pending, now, false), PendingInputs: PendingInputViews(a.Pending, now, false),
		ResumeURL: ResumeURL(t.Agent, t.ID, a.ID),
		Usage:     a.Usage, Source: ag.Source(),
	}
}

// resultOfRecord is a finished request's RequestResult, as its run answered it.
func resultOfRecord(ag *Agent, t *Task, rec *RequestRecord) *RequestResult {
	res := &RequestResult{
		SessionID: t.SessionID, TaskID: t.ID, RequestID: rec.RequestID, Status: rec.Status,
		Output: rec.Output, Round: rec.Round, Error: rec.Error, Usage: rec.Usage, Source: ag.Source(),
	}
	if rec.StopReason != nil {
		res.StopReason = *rec.StopReason
	}
	return res
}

// decidesPending tells whether the decisions name a call pending now.
func decidesPending(a *ActiveRequest, ds []DecisionInput) bool {
	for _, d := range ds {
		for _, p := range a.Pending {
			if p.ToolCallID == d.ToolCallID {
				return true
			}
		}
	}
	return false
}

// roundOfCalls finds the round whose decision decided the calls the
// decisions name; 0 if none.
func roundOfCalls(decided []Decision, ds []DecisionInput) int {
	for _, past := range decided {
		for _, c := range past.Calls {
			if c.ToolCallID == ds[0].ToolCallID {
				return past.Round
			}
		}
	}
	return 0
}

// pendingInputs fills in the inputs of a paused round's calls, which META
// holds by reference (the ITEM#<seq> of their tool_use; docs/architecture.md, The table):
// from items when they hold the tool_use, else with one read per entry.
func (e *Engine) pendingInputs(ctx context.Context, t *Task, items []Item) error {
	a := t.Active
	if a == nil || len(a.Pending) == 0 {
		return nil
	}
	inputs := map[string]json.RawMessage{}
	collect := func(its []Item) {
		for _, it := range its {
			for _, u := range it.ToolUses() {
				inputs[u.ID] = inputOrEmpty(u.Input)
			}
		}
	}
	collect(items)
	leaves := map[string]*Task{}
	for i := range a.Pending {
		p := &a.Pending[i]
		if p.Input != nil {
			continue
		}
		if p.RemoteInput != nil {
			p.Input = p.RemoteInput
			continue
		}
		callID := p.ToolCallID
		if p.Elicit != nil {
			callID = p.Elicit.callID(callID)
		}
		if _, ok := inputs[callID]; !ok && p.ItemSeq > 0 {
			owner := t
			if p.Leaf != nil {
				// A sub-agent's call: its entry is in the leaf's task.
				if owner = leaves[p.Leaf.TaskID]; owner == nil {
					lt, err := e.Store.GetTask(ctx, p.Leaf.TaskID)
					if err != nil {
						return fmt.Errorf("read the pending calls of %s: %w", p.Leaf.TaskID, err)
					}
					owner, leaves[p.Leaf.TaskID] = lt, lt
				}
			}
			its, err := e.Store.ListItems(ctx, owner, p.ItemSeq-1, 1)
			if err != nil {
				return fmt.Errorf("read the pending calls of %s: %w", t.ID, err)
			}
			collect(its)
		}
		p.Input = inputs[callID]
	}
	e.fillAsked(t)
	return nil
}
