// A leg: one invocation's run of a request — the turn loop (model call,
// tools, again) until the model ends its turn, a pause, a cancel, the
// deadline or an error — and its commits: every write of a leg holds the
// request's claim (docs/architecture.md, "Claims, leases, takeovers").

package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Run is a claimed request's leg, ready to execute.
type Run struct {
	e        *Engine
	agent    *Agent
	task     *Task  // META as last written by this run
	history  []Item // every entry below task.NextSeq, in order
	unsaved  []Item // entries made by this leg, not yet written
	deadline time.Time
	sink     Sink
	reqID    string
	taskID   string
	userID   string // the task's owner: whose artifact quota saves count against
	legStart
	// fresh are the sub-agent calls this leg planned: their children are
	// started without being looked up first.
	fresh map[string]bool
	// committed: the request's end landed.
	committed bool
	// handedOff: the leg hands the chain below it to the outbox
	// (docs/architecture.md, "Orchestration").
	handedOff bool
	// extraOutbox are items the next write puts besides what it owes.
	extraOutbox []OutboxItem
	// artMu guards the artifacts saved by this leg's calls: artifacts,
	// kept and not yet written (the next write puts them), and
	// artReserved, places taken by saves under way (MaxArtifacts).
	artMu       sync.Mutex
	artifacts   []Artifact
	artReserved int
	artWritten  int // the task's count as last written
	// emitMu orders the events of sub-agents that run side by side.
	emitMu sync.Mutex
	// childMu guards what calls of several sub-agents learn side by side:
	// joins, the outcomes of the request's children known without a read
	// (put for it by their ends, JOIN#, or run by this leg), and learned,
	// the ids remote agents gave this leg's calls (remote.go), and
	// silentCancels, the remote-cancel items of remote calls closed for
	// want of an answer (closeSilent).
	childMu       sync.Mutex
	joins         []Join
	learned       []ChildCall
	silentCancels []OutboxItem
	// unanswered: a remote call of this leg is handed to a later leg with
	// no answer from its remote (its send may have landed): the hand-off
	// counts on META like a failed takeover (remote.go, handedOffTooOften).
	unanswered bool
	// partsDone: calls whose decision part (ChildCall.Part) their remote
	// took or refused in this leg.
	partsDone map[string]bool
	// closedChildren are sub-agent calls closed with a result while their
	// child still waits (a pause that could not be kept): canceled once the
	// end is committed, as open calls are.
	closedChildren []ChildCall
	// endFlags flag, in the end's own transaction, the local children its
	// orphans name that are still in the call's request (flagOrphans): a
	// process that dies after the end lands and before it cancels them
	// leaves them to the reaper.
	endFlags []*Write
	// cancelMu guards canceled, the cancel that stopped the leg.
	cancelMu sync.Mutex
	canceled *cancelInfo
	elicitState
	eventID  int64          // the last event id of the request
	started  time.Time      // when the leg started (metrics)
	firstOut bool           // the leg's first model output was seen
	final    *ActiveRequest // the active request as it was when committed
	elog     *eventlog.Writer

	// The lease: leaseMu serialises the leg's writes and its renewals;
	// leaseSent is when the lease in force was sent (engine clock), renewed
	// the version a renewal left META at; lost is set once the lease could
	// not be kept: the leg then writes nothing more.
	leaseMu   sync.Mutex
	leaseSent time.Time
	renewed   int64
	// boundWaiters are the waiters a renewal read on META (bindWaiter).
	boundWaiters []WaiterRef
	lost         atomic.Bool
	stopLeg      func(cause error) // cancels the leg's context

	// outcome
	status     Status
	retryAfter int // seconds, for throttled
	stopReason string
	output     string
	failure    *ErrorInfo
}

func (e *Engine) newRun(ag *Agent, t *Task, history []Item, deadline time.Time) *Run {
	return &Run{e: e, agent: ag, task: t, taskID: t.ID, userID: t.UserID, history: history, deadline: deadline, joins: t.Joins,
		reqID: t.Active.ID, eventID: t.Active.LastEventID, artWritten: t.ArtifactCount, leaseSent: t.Active.LeaseUntil.Add(-LeaseDuration)}
}

// legKind is how a leg starts: what it does before the model's turn.
type legKind int

const (
	// legNew: a new message's or an edit's leg — the model's turn.
	legNew legKind = iota
	// legResume: a decided round's leg — the round's calls first
	// (runDecided, with decided).
	legResume
	// legContinue: a caller's leg once its sub-agents moved — each open
	// sub-agent call gets its outcome first (runContinued).
	legContinue
	// legAtCaller: a decision sent to a caller (caller.go) — the leaves'
	// legs first (runLeaves, leafRuns), then as legContinue.
	legAtCaller
	// legTakeover: a dead leg taken over (the reaper's, a resume's or a
	// caller's): a final answer it saved ends the request; else the round
	// it carried out (decided) or the calls it left open go on, never
	// saying again what it said, and a call it may have run is not run
	// again unless its tool is idempotent.
	legTakeover
)

// legStart is what a leg does first: its kind, and what that kind
// carries.
type legStart struct {
	leg legKind
	// kind is what its request_started event says: invoke, edit, resume
	// or continue (the request's own kind when empty).
	kind string
	// decided, on a resume (or a takeover of one), is the round's
	// decision to carry out first.
	decided *Decision
	// askedIn, on a continued caller, is the leaf round each elicitation of
	// its last pause was pending in: one pending again in a later round
	// asked again (pauseOnChildren), as its leaf's own pending call says
	// — which a remote leaf's does not carry across.
	askedIn map[string]int
	// leafRuns, on a decision at a caller, are the leaves' legs it runs
	// first.
	leafRuns []leafRun
	// pollFirst: a leaf's leg claimed by a decision at a caller that
	// moved on meanwhile (a cancel flagged it) reads its own cancel flag
	// before it runs anything (one read).
	pollFirst bool
}

// Task returns the task as the run was claimed; read it before Execute.
func (r *Run) Task() *Task { return r.task }

// TaskID is the run's task id.
func (r *Run) TaskID() string { return r.taskID }

// RequestID is the id of the run's request.
func (r *Run) RequestID() string { return r.reqID }

// Deadline is when the leg stops.
func (r *Run) Deadline() time.Time { return r.deadline }

// Execute runs the leg to its end or its pause and commits it. ctx should not
// be canceled by the client going away (context.WithoutCancel); the leg's own
// deadline applies. The result is never nil.
func (r *Run) Execute(ctx context.Context, sink Sink) *RequestResult {
	if sink == nil {
		sink = Discard
	}
	ctx, span := r.startLeg(ctx)
	start := time.Now()
	res := r.execute(ctx, sink)
	r.e.metrics().RequestEnded(r.agent.Name, res.Status, time.Since(start))
	span.SetAttributes(attribute.String("hitch.status", string(res.Status)))
	if res.Error != nil {
		span.SetStatus(codes.Error, res.Error.Code)
	}
	span.End()
	return res
}

func (r *Run) execute(ctx context.Context, sink Sink) *RequestResult {
	r.started = time.Now()
	holds := func() bool { return !r.lost.Load() && r.e.now().Before(r.leaseEnds()) }
	elog := eventlog.New(r.e.Store, r.taskID, r.reqID, r.task.Active.Epoch, eventlog.TTL+r.agent.longestApprovalTTL(), r.e.log().Error, holds)
	defer elog.Close(context.WithoutCancel(ctx))
	r.elog = elog
	r.sink = teeSink{client: sink, log: elog}
	if !r.ensureLease(ctx) {
		// The claim went stale before the leg began (the process stalled).
		return r.abandon()
	}
	a := r.task.Active
	r.emit(EventRequestStarted, map[string]any{
		"session_id": r.task.SessionID, "task_id": r.task.ID, "request_id": a.ID,
		"kind": r.legKind(), "round": a.Round,
	})
	legCtx, cancel := context.WithDeadline(ctx, r.deadline)
	defer cancel()
	legCtx, stopWatch := r.watchCancel(legCtx)
	defer stopWatch()
	if r.pollFirst {
		// Claimed by a decision sent to its caller, which a cancel may
		// have flagged since: a claim of a flagged request runs nothing.
		if meta, err := r.e.Store.GetTask(legCtx, r.taskID); err == nil && meta.Active != nil && meta.Active.ID == r.reqID && meta.Active.CancelRequested {
			ma := meta.Active
			r.e.legs.cancel(r.reqID, ma.CancelFlag.info().cascading())
		}
		if r.interrupted(legCtx) {
			return r.finish(ctx)
		}
	}
	if r.leg == legTakeover && r.answered() {
		return r.finish(ctx)
	}
	switch {
	case r.decided != nil: // legResume, or a takeover of one
		r.runDecided(legCtx)
	case r.leg == legAtCaller:
		r.runLeaves(legCtx)
		r.runContinued(legCtx)
	case r.leg == legContinue, r.leg == legTakeover:
		r.runContinued(legCtx)
	}
	if r.leg != legNew && (r.interrupted(legCtx) || r.status != "") {
		return r.finish(ctx)
	}
	r.loop(legCtx)
	return r.finish(ctx)
}

func (r *Run) emit(name string, data any) {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.eventID++
	r.sink.Emit(Event{ID: r.eventID, Name: name, Data: data})
}

func (r *Run) fail(code, msg string) {
	r.status = StatusFailed
	r.failure = &ErrorInfo{Code: code, Message: msg}
}

// loop is the turn engine of docs/architecture.md.
func (r *Run) loop(ctx context.Context) {
	maxIter := r.agent.MaxIterations
	if maxIter <= 0 {
		maxIter = DefaultMaxIterations
	}
	for iter := 1; ; iter++ {
		if iter > maxIter {
			r.status, r.stopReason = StatusCompleted, StopMaxIterations
			return
		}
		if r.interrupted(ctx) {
			return
		}
		if err := r.compact(ctx); err != nil {
			r.modelFailure(ctx, err)
			return
		}
		resp, err := r.callModel(ctx)
		if err != nil {
			r.modelFailure(ctx, err)
			return
		}
		r.task.Active.Usage = r.task.Active.Usage.Add(resp.Usage)
		asst := r.add(RoleAssistant, resp.Content)
		uses := asst.ToolUses()
		for _, u := range uses {
			r.emit(EventToolCall, map[string]any{"id": u.ID, "name": u.Name, "input": rawOrEmpty(u.Input)})
		}
		if resp.StopReason == StopToolUse && len(uses) > 0 {
			if r.interrupted(ctx) {
				return
			}
			if pending := r.needApproval(uses, asst.Seq); len(pending) > 0 {
				r.pause(ctx, pending, pending[0].Round, nil)
				return
			}
			// Record the calls before they run (and the child request of
			// each sub-agent call), so a crash never hides a call that ran.
			r.planChildren(uses)
			if err := r.save(ctx); err != nil {
				r.e.log().ErrorContext(ctx, "recording tool calls failed", "task_id", r.task.ID, "request_id", r.RequestID(), "err", err)
				r.fail(CodeInternal, "the request could not be saved")
				return
			}
			r.runAndRecord(ctx, uses, nil)
			if r.status != "" {
				return // paused on a sub-agent, or the leg failed
			}
			continue
		}
		r.output = asst.Text()
		r.status = StatusCompleted
		switch resp.StopReason {
		case StopEndTurn, StopSequence, StopToolUse, "":
			r.stopReason = StopEndTurn
		case StopContextWindow:
			r.fail(CodeContextWindowExceeded, "the conversation no longer fits the model's context window")
		default:
			r.stopReason = resp.StopReason
		}
		return
	}
}

func (r *Run) modelFailure(ctx context.Context, err error) {
	var me *Error
	switch {
	case r.interrupted(ctx):
	case errors.As(err, &me):
		r.fail(me.Code, me.Message)
		r.retryAfter = me.RetryAfter
	default:
		r.e.log().ErrorContext(ctx, "model call failed", "task_id", r.task.ID, "request_id", r.RequestID(), "err", err)
		r.fail(CodeModelError, "the model call failed")
	}
}

func (r *Run) callModel(ctx context.Context) (*ModelResponse, error) {
	if !r.ensureLease(ctx) {
		return nil, errLeaseLost
	}
	ag := r.agent
	req := &ModelRequest{
		ModelID: ag.ModelID, System: ag.SystemPrompt, Messages: BuildMessages(r.task, r.history),
		Tools: ag.ToolSpecs(), Temperature: ag.Temperature, MaxTokens: ag.MaxTokens,
		ReasoningBudget: ag.ReasoningBudget, CacheTTL: ag.CacheTTL,
	}
	ctx, span := r.e.tracer().Start(ctx, SpanModel, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.request.model", ag.ModelID)))
	start := time.Now()
	resp, err := r.e.Model.Converse(ctx, req, func(d Delta) {
		switch d.Kind {
		case DeltaThinking:
			r.firstOutput()
			r.emit(EventThinking, map[string]string{"delta": d.Text})
		case DeltaAnswer:
			r.firstOutput()
			r.emit(EventAnswer, map[string]string{"delta": d.Text})
		}
	})
	var u Usage
	if resp != nil {
		u = resp.Usage
		r.firstOutput() // a turn of tool calls alone
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens),
			attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheWriteInputTokens),
			attribute.String("gen_ai.response.finish_reason", resp.StopReason))
	}
	r.e.metrics().ModelCalled(ag.Name, u, err != nil, time.Since(start))
	endSpan(span, err)
	return resp, err
}

// firstOutput reports the leg's time to its first model output, once.
func (r *Run) firstOutput() {
	if !r.firstOut {
		r.firstOut = true
		r.e.metrics().FirstEvent(r.agent.Name, time.Since(r.started))
	}
}

// add appends a new entry of this request to the history.
func (r *Run) add(role string, content []Block) Item {
	it := Item{Seq: r.task.NextSeq, RequestID: r.RequestID(), Role: role, CreatedAt: r.e.now(), Content: content}
	r.task.NextSeq++
	r.history = append(r.history, it)
	r.unsaved = append(r.unsaved, it)
	return it
}

// save writes the unsaved entries with the META (an iteration write).
func (r *Run) save(ctx context.Context) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	return r.write(wctx, func(t *Task) {}, nil, time.Time{})
}

// writeContext detaches a write from the leg's cancellation and deadline:
// a write that has started must be able to land (30 s at most).
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// write persists the unsaved entries and the META changed by mutate, guarded
// by the version. When the META changed under us but our claim still holds
// (a cancel flag was set), it rebases on the current META and tries again.
func (r *Run) write(ctx context.Context, mutate func(*Task), records []RequestRecord, expires time.Time) error {
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	if err := r.holdsLocked(ctx); err != nil {
		return err
	}
	base := r.task
	if r.renewed > base.Version {
		base = base.Clone()
		base.Version = r.renewed
	}
	sent := r.e.now()
	for attempt := 0; ; attempt++ {
		next, bound, arts := r.nextVersion(base, sent, mutate)
		// A leg holds its claim: a write of its that leaves the request
		// paused, its claim given up, is the pause.
		pausing := next.Active != nil && next.Active.Status == StatusPaused && next.Active.ClaimToken == ""
		recs := records
		if len(bound) > 0 {
			// The end answers the waiters bound meanwhile too.
			recs = slices.Clone(records)
			for i := range recs {
				if recs[i].RequestID == r.reqID {
					recs[i].Waiters = unionWaiters(recs[i].Waiters, bound)
				}
			}
		}
		var with []*Write
		if next.Active == nil {
			with = r.endFlags
		}
		err := r.e.write(ctx, &Write{Task: next, PrevVersion: base.Version, Items: r.unsaved, Requests: recs, Expires: expires,
			Outbox: slices.Clone(r.extraOutbox), Artifacts: arts, pausing: pausing, With: with})
		var ce *ConflictError
		if errors.As(err, &ce) && len(with) > 0 && ce.Current != nil && ce.Current.ID != r.taskID {
			// A child moved since it was read: the end lands without the
			// flags, and the cancel after it reaches the child.
			r.endFlags = nil
			continue
		}
		if errors.As(err, &ce) && attempt < 3 && ce.Current != nil && ce.Current.Active != nil &&
			ce.Current.Active.ClaimToken == r.task.Active.ClaimToken {
			base = ce.Current
			r.e.metrics().StoreRetry(r.agent.Name)
			continue
		}
		if err != nil {
			return err
		}
		r.task = next
		r.unsaved = nil
		r.extraOutbox = nil
		r.artMu.Lock()
		r.artifacts = r.artifacts[len(arts):]
		r.artWritten = next.ArtifactCount
		r.artMu.Unlock()
		r.leaseSent = sent
		return nil
	}
}

// holdsLocked tells whether the leg still holds its request (r.leaseMu
// held): past the lease by its own count (the process stalled), only if a
// renewal lands, that is, if nobody took the request over.
func (r *Run) holdsLocked(ctx context.Context) error {
	if r.lost.Load() {
		return errLeaseLost
	}
	if r.e.now().Before(r.leaseSent.Add(LeaseDuration - leaseGrace)) {
		return nil
	}
	if _, err := r.renewLocked(ctx); err != nil {
		r.e.log().Warn("the request's lease ended before the leg could write; it stops", "task_id", r.taskID, "request_id", r.reqID, "err", err)
		r.lost.Store(true)
		if r.elog != nil {
			r.elog.Abandon()
		}
		return errLeaseLost
	}
	return nil
}

// nextVersion is the leg's next version of its task over base (what the store
// holds): the leg's own state of the request (its events, its lease from
// sent, a cancel flag and waiters another writer set kept), the artifacts
// not yet written, then mutate. bound are the waiters the end answers.
func (r *Run) nextVersion(base *Task, sent time.Time, mutate func(*Task)) (*Task, []WaiterRef, []Artifact) {
	next := base.Clone()
	next.NextSeq = r.task.NextSeq
	var bound []WaiterRef
	if next.Active != nil && r.task.Active != nil {
		cur := next.Active
		mine := *r.task.Active
		mine.LastEventID = r.eventID
		mine.LeaseUntil = sent.Add(LeaseDuration)
		mine.Takeovers = 0 // a leg that holds and writes: its takeover did not die (takeoversDied)
		if cur.CancelRequested && !mine.CancelRequested {
			mine.CancelFlag = cur.CancelFlag // a cancel's flag set meanwhile stays
		}
		// Waiters bound meanwhile (a duplicate that waits,
		// bindWaiter), read here or by a renewal, stay bound.
		mine.Waiters = unionWaiters(mine.Waiters, cur.Waiters, r.boundWaiters)
		bound = mine.Waiters
		next.Active = &mine
	}
	next.Status = r.task.Status
	next.Metadata = r.task.Metadata
	next.Context = r.task.Context
	next.Children = r.task.Children
	r.artMu.Lock()
	arts := slices.Clone(r.artifacts)
	r.artMu.Unlock()
	next.ArtifactCount = r.task.ArtifactCount + len(arts)
	next.ArtifactBytes = r.task.ArtifactBytes
	for _, a := range arts {
		next.ArtifactBytes += a.Size
	}
	mutate(next)
	next.UpdatedAt = r.e.now()
	next.Version = base.Version + 1
	next.WriteID = r.e.newID()
	return next, bound, arts
}

// finish closes dangling calls, commits the request and builds its result.
func (r *Run) finish(ctx context.Context) *RequestResult {
	if r.lost.Load() {
		return r.abandon()
	}
	if r.status == "" {
		r.fail(CodeInternal, "the request ended without an outcome")
	}
	if r.status == StatusPaused {
		res := r.result()
		r.emit(EventRequestComplete, res)
		return res
	}
	if r.handedOff {
		return r.handOff(ctx)
	}
	// Sub-agent calls it closes without their child's result cancel the
	// child (docs/architecture.md), once the end is committed.
	orphans := append(r.e.openCalls(r.task, r.history), r.closedChildren...)
	// The commit must land even if the leg's deadline passed.
	cctx, cancel := writeContext(ctx)
	defer cancel()
	ci := r.closeOut(cctx)
	if len(orphans) > 0 {
		by := cancelInfo{by: "system", reason: "its caller ended (" + r.endReason() + ")", at: r.e.now()}
		if ci != nil {
			by = *ci
		}
		r.endFlags = r.e.flagOrphans(cctx, orphans, by)
		defer func() {
			if r.committed {
				r.e.cancelCalls(cctx, r.agent.Name, orphans, by, time.Now().Add(CancelWait))
			}
		}()
	}
	if err := r.commit(cctx); err != nil {
		if res := r.commitFailed(ctx, cctx, err); res != nil {
			return res
		}
	}
	res := r.result()
	r.emit(terminalEvent(res))
	return res
}

// closeOut closes the calls the request ends without a result and, for a
// cancel, says so in the stream; it returns the cancel, if any.
func (r *Run) closeOut(ctx context.Context) *cancelInfo {
	reason := "not run: the request ended (" + r.endReason() + ")"
	ci := r.cancellation()
	if r.status == StatusCanceled {
		if ci == nil {
			ci = &cancelInfo{by: "unknown", at: r.e.now()}
		}
		reason = cancelMessage(*ci)
	}
	if closing := danglingResults(r.history, r.RequestID(), reason); len(closing) > 0 {
		r.childMu.Lock()
		joins := slices.Clone(r.joins)
		r.childMu.Unlock()
		r.addResults(r.e.closeChildCalls(ctx, r.agent, r.task.Active, joins, closing))
	}
	if r.status == StatusCanceled {
		a := r.task.Active
		a.CancelFlag.set(*ci)
		ev := map[string]string{"by": ci.by}
		if ci.reason != "" {
			ev["reason"] = ci.reason
		}
		r.emit(EventCancelled, ev)
	}
	return ci
}

// commitFailed: the commit of the request's end failed. A leg that lost
// its lease abandons; a request another call ended meanwhile (a cancel of
// what it saw paused) answers that record; else the request is Failed
// internal, and what the leg did is saved and its claim released, so that
// a retry takes it over at once (a resume continues it; a new message
// records it Failed) — if that fails too, the lease's expiry recovers the
// task. nil: the leg's own result answers.
func (r *Run) commitFailed(ctx, cctx context.Context, err error) *RequestResult {
	if r.lost.Load() {
		return r.abandon()
	}
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Current != nil && (ce.Current.Active == nil || ce.Current.Active.ID != r.reqID) {
		if res := r.e.endedResult(cctx, r.agent, r.taskID, r.reqID); res != nil {
			r.e.log().WarnContext(ctx, "the request was ended by another call", "task_id", r.taskID, "request_id", r.reqID, "status", res.Status)
			r.emit(terminalEvent(res))
			return res
		}
	}
	r.e.log().ErrorContext(ctx, "commit failed", "task_id", r.task.ID, "request_id", r.RequestID(), "err", err)
	r.fail(CodeInternal, "the request's outcome could not be saved")
	if err := r.release(cctx); err != nil {
		r.e.log().ErrorContext(ctx, "release after a failed commit failed", "task_id", r.task.ID, "request_id", r.RequestID(), "err", err)
	}
	return nil
}

// terminalEvent is the event that ends a leg: error for a Failed request,
// else request_complete with the RequestResult.
func terminalEvent(res *RequestResult) (string, any) {
	if res.Status == StatusFailed && res.Error != nil {
		return EventError, map[string]string{"code": res.Error.Code, "message": res.Error.Message, "request_id": res.RequestID}
	}
	return EventRequestComplete, res
}

func (r *Run) endReason() string {
	if r.failure != nil {
		return r.failure.Code
	}
	return r.stopReason
}

// release saves the leg's entries (every call with its result) and ends the
// claim's lease now, leaving the request Running for a takeover.
func (r *Run) release(ctx context.Context) error {
	return r.write(ctx, func(t *Task) {
		t.Status = StatusRunning
		t.Active.Status = StatusRunning
		t.Active.LeaseUntil = r.e.now()
		t.Active.LastEventID = r.eventID + 1 // the error event that follows
	}, nil, time.Time{})
}

// commit writes the request's end: remaining entries, its record, the idle
// META; then, with retention configured, the task's ttl.
func (r *Run) commit(ctx context.Context) error {
	now := r.e.now()
	active := *r.task.Active
	// The record counts the final event (request_complete or error) too.
	active.LastEventID = r.eventID + 1
	r.final = &active
	rec := recordOf(&active, r.status, now)
	rec.Output = r.output
	if r.stopReason != "" {
		sr := r.stopReason
		rec.StopReason = &sr
	}
	rec.Error = r.failure
	err := r.write(ctx, func(t *Task) {
		t.Active = nil
		t.Status = r.status
		t.RetainUntil = r.e.retainUntil()
	}, []RequestRecord{rec}, time.Time{})
	if err == nil {
		r.committed = true
		r.e.retainFinished(ctx, r.task)
	}
	return err
}

func (r *Run) result() *RequestResult {
	a := r.final
	if a == nil {
		a = r.task.Active
	}
	res := &RequestResult{
		SessionID: r.task.SessionID, TaskID: r.task.ID, Status: r.status,
		Output: r.output, StopReason: r.stopReason, Error: r.failure, Source: r.agent.Source(),
		RetryAfter: r.retryAfter,
	}
	if a != nil {
		res.RequestID, res.Usage, res.Round = a.ID, a.Usage, a.Round
	}
	if r.status == StatusPaused {
		res.PendingApprovals = PendingViews(a.Pending, r.e.now(), false)
		res.PendingInputs = PendingInputViews(a.Pending, r.e.now(), false)
		res.ResumeURL = ResumeURL(r.task.Agent, r.task.ID, a.ID)
	}
	return res
}

func rawOrEmpty(b []byte) any {
	if len(b) == 0 {
		return map[string]any{}
	}
	return jsonRaw(b)
}

// jsonRaw is raw JSON that marshals as itself.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return j, nil }

func (r *Run) legKind() string {
	if r.kind != "" {
		return r.kind
	}
	return r.task.Active.Kind
}

// answered tells whether the request's last saved entry is the model's final
// answer (a leg that died after it, before its commit): the request is then
// done, and the model is not asked again.
func (r *Run) answered() bool {
	if len(r.history) == 0 {
		return false
	}
	last := r.history[len(r.history)-1]
	if last.RequestID != r.reqID || last.Role != RoleAssistant || len(last.ToolUses()) > 0 {
		return false
	}
	r.output, r.status, r.stopReason = last.Text(), StatusCompleted, StopEndTurn
	return true
}
