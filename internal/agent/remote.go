// Remote leaves: an `a2a:` tool's call goes to another system's agent
// through RemoteAgent (internal/a2a owns the protocol). Its pause pauses
// the caller like a local child's, with a poll item per open call in every
// round; decisions for it are sent there (decideRemotes, awaitRemoteLeaf);
// a poll notices what was decided on the remote system itself
// (docs/architecture.md, "Orchestration"; docs/api.md, "Remote agents").

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Remote agents as tools (docs/architecture.md and docs/api.md): an `a2a:` entry calls an agent
// of another system over A2A. Its task is the call's child; its
// input-required pauses the caller like a local child's pause (the pending
// calls it shows carry the remote leaf and its resume URL there); a
// decision sent to the caller is sent on to the remote task once, before
// the caller is claimed (a refusal there changes nothing here); a decision
// taken on the remote system is noticed by polling the remote task (an
// outbox item put with the call, delivered again while the call is open;
// it also takes over a caller whose leg died).

// RemoteAgent is a remote A2A agent. Its errors that the remote answered
// with a Hitch code are *Error with that code.
type RemoteAgent interface {
	// URL is the agent's A2A endpoint.
	URL() string
	// Send sends text as a message: a new remote task in contextID's
	// conversation, or in a new one when contextID is empty. messageID is
	// the message's id, the same when it is sent again (a takeover), so
	// that the remote takes it once (Hitch does). It answers when the
	// remote task ended or asks for input, passing what the remote
	// streams meanwhile to events.
	// A send whose answer did not come is sent again, with the same id,
	// a few times: the transport's policy, not the engine's.
	Send(ctx context.Context, contextID, messageID, text string, events RemoteEvents) (*RemoteTask, error)
	// Decide sends a decision to a remote task that awaits one and returns
	// once the remote took it (an error: it refused it, or could not be
	// reached). key names the decision: the message carrying it has an id
	// of its own derived from it, the same when it is sent again. follow
	// then passes what the remote streams about it to events (nil: none)
	// until the task ends or asks for input again, or ctx ends; it must be
	// called once.
	Decide(ctx context.Context, contextID, taskID string, key DecisionKey, body ResumeRequest) (follow RemoteFollow, err error)
	// Get reads a remote task.
	Get(ctx context.Context, contextID, taskID string) (*RemoteTask, error)
	// Await reads a working remote task until it ends or asks for input,
	// or until (it answers the task working then). A read that fails
	// without the remote's answer (the network, the remote restarting) is
	// tried again: the task was sent, and the remote owns its outcome.
	// ErrRemoteUnknown: none could be read in the time there was.
	Await(ctx context.Context, contextID, taskID string, until time.Time) (*RemoteTask, error)
	// Cancel cancels a remote task.
	Cancel(ctx context.Context, contextID, taskID string) error
	// CancelMessage cancels the task a message made, when its id is not
	// known (the remote never answered): the message is sent again with
	// its id, without waiting (a remote that had it answers the task it
	// made, once), and the task it names is canceled. An answer without a
	// task, or one that ended, leaves nothing to cancel.
	CancelMessage(ctx context.Context, contextID, messageID, text string) error
}

// DecisionKey names a caller's decision sent to a remote leaf: the
// caller's request, its round, and the awaited call (the tool call of the
// caller's `a2a:` tool).
type DecisionKey struct {
	RequestID  string
	Round      int
	ToolCallID string
}

// RemoteFollow follows what a remote task does with a decision (Decide).
type RemoteFollow func(ctx context.Context, events RemoteEvents) error

// RemoteEvents receives what a remote task streams: its tool calls,
// results and decisions as the Hitch events they are (a Hitch agent's
// status updates say), its answer as answer deltas.
type RemoteEvents func(contextID, taskID, name string, data any)

// RemoteTask is a remote A2A task as Hitch reads it.
type RemoteTask struct {
	ContextID, ID string
	// Status: Running (working, submitted), Paused (input-required), or
	// an end.
	Status Status
	Output string
	Error  *ErrorInfo
	// Round is the remote request's round, when the remote says it (a
	// Hitch agent does); 0 otherwise.
	Round int
	// Pending are the calls an input-required task awaits decisions on,
	// with Input set and, for a remote caller's, Leaf (its leaf).
	Pending []PendingCall
	// ResumeURL is where the task is decided on its own system.
	ResumeURL string
	// Question is what an input-required task without pending calls asks;
	// QuestionID names that ask (its status message), so that the same
	// question read again is the same pending input.
	Question, QuestionID string
	// Artifacts are its file and data artifacts (its answer's text is
	// Output): copied into the caller's task when the call ends.
	Artifacts []RemoteArtifact
}

// RemoteArtifact is a file or data artifact of a remote task.
type RemoteArtifact struct {
	Name, MediaType string
	// Open reads its bytes: raw or data in the task, or fetched from its
	// URL (the remote agent's own origin only, with the entry's headers).
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// copyArtifacts copies a finished remote task's artifacts into the
// caller's task, as artifacts of the call running in ctx (the result then
// names them); one that cannot be read or kept is named in a note.
func (r *Run) copyArtifacts(ctx context.Context, b Block, call ChildCall, rt *RemoteTask) Block {
	var notes []Block
	for _, ra := range rt.Artifacts {
		name := artifactName(ra.Name)
		rc, err := ra.Open(ctx)
		if err == nil {
			_, err = SaveArtifact(ctx, NewArtifact{Name: name, MediaType: ra.MediaType, Body: rc})
			rc.Close()
		}
		if err != nil {
			r.e.log().WarnContext(ctx, "a remote agent's artifact was not copied", "agent", call.Agent, "remote_task_id", rt.ID, "name", name, "err", err)
			notes = append(notes, TextBlock(fmt.Sprintf("The agent %s's artifact %q was not copied: %v", call.Agent, name, err)))
		}
	}
	if len(notes) > 0 {
		b.Content = append(slices.Clone(b.Content), notes...)
	}
	return b
}

// artifactName is a remote artifact's name as an artifact here: the
// characters a name may not hold ("/", "\\", controls) become "_", at most
// 255 characters; "artifact" when it has none.
func artifactName(name string) string {
	name = strings.Map(func(c rune) rune {
		if c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
			return '_'
		}
		return c
	}, name)
	if rs := []rune(name); len(rs) > 255 {
		name = string(rs[:255])
	}
	if strings.TrimSpace(name) == "" {
		return "artifact"
	}
	return name
}

// resumeURL is where a pending call's leaf is decided.
func (l *LeafRef) resumeURL() string {
	if l.URL != "" {
		return l.URL
	}
	return ResumeURL(l.Agent, l.TaskID, l.RequestID)
}

// remoteVia is the remote agent's call through which a caller awaits w,
// or nil (a local child's).
func remoteVia(a *ActiveRequest, w Await) *ChildCall {
	if cc := findCall(a, w.Via); cc != nil && cc.Remote != "" {
		return cc
	}
	return nil
}

// ErrWaiting says a paused caller still waits on a remote agent that has
// not moved: its poll is delivered again later.
var ErrWaiting = errors.New("agent: the caller still waits on a remote agent")

// remoteOf is the remote agent a call of the caller agent's tools reaches,
// or nil.
func (e *Engine) remoteOf(callerAgent string, cc ChildCall) RemoteAgent {
	if cc.Remote == "" {
		return nil
	}
	ag, ok := e.Agents.Get(callerAgent)
	if !ok {
		return nil
	}
	bt, ok := ag.Tool(cc.Agent)
	if !ok {
		return nil
	}
	if at, ok := bt.Tool.(*AgentTool); ok {
		return at.Remote
	}
	return nil
}

// learn keeps a remote call's ids as the remote answered them (or its
// first send's time), for the caller's META (applied once the turn's
// calls are done: calls of several sub-agents run side by side).
func (r *Run) learn(cc ChildCall) {
	r.childMu.Lock()
	r.learned = append(r.learned, cc)
	r.childMu.Unlock()
}

// markPart records that a call's decision part was taken or refused by
// its remote: this leg does not send it again, and the leg's next write
// drops it from the call.
func (r *Run) markPart(toolCallID string) {
	r.childMu.Lock()
	if r.partsDone == nil {
		r.partsDone = map[string]bool{}
	}
	r.partsDone[toolCallID] = true
	r.childMu.Unlock()
}

// partDone tells whether this leg had a call's decision part taken or
// refused by its remote.
func (r *Run) partDone(id string) bool {
	r.childMu.Lock()
	defer r.childMu.Unlock()
	return r.partsDone[id]
}

// applyLearned records the remote ids learned in the caller's calls and
// its child map (the remote context continued by later calls).
func (r *Run) applyLearned() {
	r.childMu.Lock()
	learned := r.learned
	r.learned = nil
	done := maps.Clone(r.partsDone)
	// Written with the calls' results, by the leg's next write.
	r.extraOutbox = append(r.extraOutbox, r.silentCancels...)
	r.silentCancels = nil
	r.childMu.Unlock()
	a := r.task.Active
	for i := range a.Calls {
		if a.Calls[i].Part != nil && done[a.Calls[i].ToolCallID] {
			a.Calls[i].Part = nil // taken or refused by its remote
		}
	}
	for _, l := range learned {
		for i := range a.Calls {
			if a.Calls[i].ToolCallID != l.ToolCallID {
				continue
			}
			if a.Calls[i].SentAt.IsZero() {
				a.Calls[i].SentAt = l.SentAt
			}
			if l.RequestID != "" {
				a.Calls[i].TaskID, a.Calls[i].RequestID = l.TaskID, l.RequestID
				a.Calls[i].QuietSince = l.QuietSince
			}
		}
		if l.RequestID == "" {
			continue // only its first send's time learned
		}
		if r.task.Children[l.Agent] != l.TaskID {
			children := maps.Clone(r.task.Children)
			if children == nil {
				children = map[string]string{}
			}
			children[l.Agent] = l.TaskID
			r.task.Children = children
		}
	}
}

// runRemote runs a call of a remote agent: the message is sent (again
// with the same id after a takeover), or the remote task it made is read;
// its end is the call's result, its input-required pauses the caller.
func (r *Run) runRemote(ctx context.Context, u Block, at *AgentTool, in agentInput, call ChildCall) (Block, *childPause) {
	// The call's span; its context goes to the remote (W3C traceparent).
	ctx, span := r.e.tracer().Start(ctx, SpanTool, trace.WithAttributes(attribute.String("gen_ai.tool.name", u.Name),
		attribute.String("gen_ai.tool.call.id", u.ID), attribute.String("hitch.a2a.url", call.Remote)))
	defer span.End()
	if j := r.joinOf(call); j != nil {
		return r.truncate(childResult(u.ID, call, j.outcome())), nil
	}
	if r.e.silent(call) || r.handedOffTooOften(call) {
		return r.closeSilent(u, call, in.Message), nil
	}
	if call.Part != nil && call.RequestID != "" && !r.partDone(call.ToolCallID) {
		if b, p, done := r.sendPart(ctx, u, at.Remote, call, in.Message); done {
			return b, p
		}
	}
	rt, heard, err := r.reachRemote(ctx, at.Remote, &call, in.Message)
	if err != nil {
		return r.remoteFailed(ctx, u, call, heard, in.Message, err)
	}
	return r.remoteAnswered(ctx, u, call, rt)
}

// reachRemote sends a remote call's message (its first send, or again with
// the same id), or reads the task it made until it moves: the remote's
// task as read, when the remote last answered as far as this leg knows,
// and the error that kept it from being read. What it learns of the call
// (its first send's time, its task, its quiet) is kept in call.
func (r *Run) reachRemote(ctx context.Context, ra RemoteAgent, call *ChildCall, message string) (*RemoteTask, time.Time, error) {
	var rt *RemoteTask
	var err error
	if call.RequestID == "" {
		if call.SentAt.IsZero() {
			// Its first send: the time request_timeout counts from.
			call.SentAt = r.e.now()
			r.learn(*call)
		}
		rt, err = r.sendRemote(ctx, ra, *call, message)
		if err == nil {
			call.TaskID, call.RequestID = rt.ContextID, rt.ID
			r.learn(*call)
		}
		if errors.Is(err, ErrNotSent) && !r.fresh[call.ToolCallID] {
			// This leg's sends found no connection, but the call was
			// planned by an earlier leg, whose send may have landed: not
			// surely unsent (the next branch hands it to a new leg).
			err = fmt.Errorf("an earlier leg's send may have landed; this leg's: %s", err.Error())
		}
	}
	// heard: when the remote last answered, as far as this leg knows (its
	// send's answer, or this leg's start: the leg before handed it on
	// with an answer, or the call was decided).
	heard := r.e.now()
	if call.RequestID != "" && (rt == nil || rt.Status == StatusRunning) {
		deadline := r.deadline
		if !call.QuietSince.IsZero() {
			// Nothing read since QuietSince: this leg reads until
			// request_timeout since then (at least once).
			deadline = minTime(deadline, call.QuietSince.Add(r.e.requestTimeout()+r.e.DeadlineMargin))
		}
		rt, err = r.e.awaitRemote(ctx, ra, *call, deadline)
		if err == nil && !call.QuietSince.IsZero() {
			call.QuietSince = time.Time{} // it answered again
			r.learn(*call)
		}
	}
	return rt, heard, err
}

// remoteFailed is what a remote call whose task could not be read comes
// to: closed for good (silent since its send, or gone quiet), handed to a
// new leg (it may have landed, or this leg's time ran out), or an error
// result.
func (r *Run) remoteFailed(ctx context.Context, u Block, call ChildCall, heard time.Time, message string, err error) (Block, *childPause) {
	if call.RequestID == "" && r.e.silent(call) && ctx.Err() == nil {
		// No answer since its first send, request_timeout ago: not sent
		// again for ever (docs/api.md, "Remote agents"). (A leg out of
		// time hands off instead: the next leg closes it at once, and its
		// model goes on.)
		return r.closeSilent(u, call, message), nil
	}
	if errors.Is(err, ErrRemoteUnknown) && r.e.quiet(call) && ctx.Err() == nil {
		// Its task learned, then nothing read of it for request_timeout:
		// gone, not read again for ever (docs/api.md, "Remote agents").
		return r.closeSilent(u, call, message), nil
	}
	handOff := func() (Block, *childPause) {
		if call.RequestID == "" || errors.Is(err, ErrRemoteUnknown) {
			// No answer in this leg: no progress (continue.go, handOff).
			r.childMu.Lock()
			r.unanswered = true
			r.childMu.Unlock()
		}
		return Block{}, &childPause{call: call, handoff: true}
	}
	if errors.Is(err, ErrRemoteUnknown) && !errors.Is(context.Cause(ctx), errCanceled) {
		// Sent, and not readable as this leg's time ran out: a new leg
		// reads it again (the remote owns its outcome; a cancel ends it),
		// from when the remote last answered.
		if call.QuietSince.IsZero() {
			call.QuietSince = heard
			r.learn(call)
		}
		return handOff()
	}
	if sent := (*Error)(nil); call.RequestID == "" && !errors.Is(err, ErrNotSent) && !errors.As(err, &sent) &&
		!errors.Is(context.Cause(ctx), errCanceled) {
		// The message may have landed (the connection broke after it
		// left): a new leg sends it again with its id, which the remote
		// takes once — never an error result that would leave the remote's
		// task running, or paused, below a caller that moved on.
		r.e.log().WarnContext(ctx, "a remote agent's answer did not come; a new leg sends the message again", "agent", call.Agent, "url", call.Remote, "err", err)
		return handOff()
	}
	if timeUp(ctx) {
		// The leg's time ran out on the way: a new leg goes on (the
		// message is sent again with its id, or the task read again).
		return handOff()
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ErrorResult(u.ID, fmt.Sprintf("the agent %s could not take the call: %s: %s", call.Agent, ae.Code, ae.Message)), nil
	}
	r.e.log().ErrorContext(ctx, "a remote agent call failed", "task_id", r.taskID, "request_id", r.reqID, "agent", call.Agent, "url", call.Remote, "err", err)
	return ErrorResult(u.ID, fmt.Sprintf("the agent %s at %s could not be reached: %v", call.Agent, call.Remote, err)), nil
}

// remoteAnswered is what a remote call whose task was read comes to: its
// pause pauses the caller, its run hands the caller to a new leg, its end
// is the call's result.
func (r *Run) remoteAnswered(ctx context.Context, u Block, call ChildCall, rt *RemoteTask) (Block, *childPause) {
	r.emitRemote(call, rt, 1)
	switch rt.Status {
	case StatusPaused:
		if len(rt.Pending) == 0 {
			if rt.Question == "" {
				return ErrorResult(u.ID, fmt.Sprintf("the agent %s asks for input without saying what (its task %s waits in context %s)", call.Agent, rt.ID, rt.ContextID)), nil
			}
			// Another system's question: a pending input of this caller
			// (docs/api.md, "Pauses for input"), its answer sent there.
			rt.Pending = []PendingCall{r.remoteQuestion(u.Name, rt)}
		}
		return Block{}, &childPause{call: call, child: remoteChild(call, rt), remote: true}
	case StatusRunning:
		if ctx.Err() == nil || timeUp(ctx) {
			// Still working as this leg's time runs out: the caller hands
			// itself to the outbox and a new leg reads the remote task.
			return Block{}, &childPause{call: call, handoff: true}
		}
		return ErrorResult(u.ID, fmt.Sprintf("not waited for: the agent %s's task %s goes on there", call.Agent, rt.ID)), nil
	}
	res := r.truncate(childResult(u.ID, call, childOutcome{res: rt.result()}))
	if len(rt.Artifacts) > 0 {
		res = r.copyArtifacts(ctx, res, call, rt)
	}
	return res, nil
}

// sendPart sends a caller's decision's part to its remote leaf again
// (ChildCall.Part): its send after the caller's claim did not reach the
// remote. Taken (or taken before: the same message id), the remote task
// is followed as after any decision; refused by the remote itself (a
// decision taken there meanwhile), the remote task is read as it is, and
// the caller may pause on it again. Not delivered: a new leg sends it
// again, until request_timeout passed since the caller's claim; then the
// call is closed outcome_unknown and the remote task canceled (docs/api.md,
// Agents as tools). done: the call's outcome is b or p.
func (r *Run) sendPart(ctx context.Context, u Block, ra RemoteAgent, call ChildCall, text string) (b Block, p *childPause, done bool) {
	part := call.Part
	key := DecisionKey{RequestID: r.reqID, Round: part.Round, ToolCallID: call.ToolCallID}
	follow, err := ra.Decide(ctx, call.TaskID, call.RequestID, key, part.Body)
	var ae *Error
	switch {
	case err == nil:
		events := func(contextID, taskID, name string, data any) {
			r.emit(EventChild, childEvent(call.Agent, contextID, taskID, 1, call.Remote, name, data))
		}
		fctx, cancel := context.WithDeadline(ctx, r.deadline.Add(-r.e.DeadlineMargin))
		if err := follow(fctx, events); err != nil {
			r.e.log().DebugContext(ctx, "a remote task's stream ended early; it is read until it moves", "agent", call.Agent, "err", err)
		}
		cancel()
	case errors.As(err, &ae):
		r.e.log().WarnContext(ctx, "a remote agent refused its part of a caller's decision; the caller pauses on it again", "task_id", r.taskID, "agent", call.Agent, "url", call.Remote, "err", err)
	case ctx.Err() != nil && !timeUp(ctx):
		return Block{}, nil, false // canceled, or the lease lost: read as it is
	case !r.e.now().Before(part.DecidedAt.Add(r.e.requestTimeout())):
		return r.closeSilent(u, call, text), nil, true
	default:
		r.e.log().WarnContext(ctx, "a decision's part could not reach a remote agent; a new leg sends it again", "task_id", r.taskID, "agent", call.Agent, "url", call.Remote, "err", err)
		return Block{}, &childPause{call: call, handoff: true}, true
	}
	r.markPart(call.ToolCallID)
	return Block{}, nil, false
}

// requestTimeout is the leg deadline (request_timeout): how long a
// remote call may go without an answer since its first send.
func (e *Engine) requestTimeout() time.Duration {
	if e.LegTimeout > 0 {
		return e.LegTimeout
	}
	return 15 * time.Minute
}

// silent tells whether a remote call has had no answer from its remote
// (no task learned) for request_timeout since its first send.
func (e *Engine) silent(cc ChildCall) bool {
	return cc.Remote != "" && cc.RequestID == "" && !cc.SentAt.IsZero() && !e.now().Before(cc.SentAt.Add(e.requestTimeout()))
}

// quiet tells whether a remote call whose task was learned has had
// nothing read of it for request_timeout since the remote last answered.
func (e *Engine) quiet(cc ChildCall) bool {
	return cc.Remote != "" && cc.RequestID != "" && !cc.QuietSince.IsZero() && !e.now().Before(cc.QuietSince.Add(e.requestTimeout()))
}

// minTime is the earlier of a and b, a zero a being no bound.
func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// handedOffTooOften tells whether a remote call with no answer from its
// remote was handed from leg to leg MaxTakeovers times: each hand-off of
// it keeps META's takeover count and each leg's claim adds one, as a
// takeover of a dead leg does, so a remote that takes each message and
// closes the connection is not sent it for ever (docs/api.md, "Remote
// agents"). The claim of this leg is counted.
func (r *Run) handedOffTooOften(cc ChildCall) bool {
	unanswered := cc.RequestID == "" && !cc.SentAt.IsZero() || cc.RequestID != "" && !cc.QuietSince.IsZero()
	return cc.Remote != "" && unanswered && r.task.Active.takeoversDied()
}

// remoteSilentMessage is the result of a remote call closed for want of an
// answer.
const remoteSilentMessage = CodeOutcomeUnknown + ": the remote agent did not answer; it may have received the message"

// remoteGoneMessage is the result of a remote call whose task was learned
// and then could not be read for request_timeout.
const remoteGoneMessage = CodeOutcomeUnknown + ": the remote agent stopped answering; its task may go on there"

// closeSilent closes a remote call that never answered: outcome_unknown,
// and a remote-cancel item for its message id put by the same write as
// the result (the message may have made a task there). The caller's
// model decides what next.
func (r *Run) closeSilent(u Block, call ChildCall, text string) Block {
	r.e.log().Warn("a remote agent did not answer (request_timeout since its first send or its last answer, or handed from leg to leg MaxTakeovers times); its call is closed outcome_unknown", "task_id", r.taskID,
		"request_id", r.reqID, "agent", call.Agent, "url", call.Remote, "message_id", call.MessageID, "first_sent", call.SentAt, "remote_task_id", call.RequestID, "quiet_since", call.QuietSince, "takeovers", r.task.Active.Takeovers)
	cc := call
	item := OutboxItem{TaskID: r.taskID, RequestID: r.reqID, Epoch: r.task.Active.Epoch, EventID: r.eventID, Agent: r.agent.Name,
		UserID: r.task.UserID, Kind: OutboxRemoteCancel, Event: EventCancel, Recipient: RemoteCancelRecipient(call.MessageID), Call: &cc,
		Message: text, CreatedAt: r.e.now()}
	r.childMu.Lock()
	r.silentCancels = append(r.silentCancels, item)
	r.childMu.Unlock()
	if call.RequestID != "" {
		return ErrorResult(u.ID, fmt.Sprintf("%s (the agent %s at %s, its task %s, last answered %s)", remoteGoneMessage, call.Agent, call.Remote,
			call.RequestID, call.QuietSince.UTC().Format(time.RFC3339)))
	}
	return ErrorResult(u.ID, fmt.Sprintf("%s (the agent %s at %s, first sent %s)", remoteSilentMessage, call.Agent, call.Remote,
		call.SentAt.UTC().Format(time.RFC3339)))
}

// RemoteQuestionPrefix starts the tool-call id of another system's
// question: its answer goes there as a message, not as a decision.
const RemoteQuestionPrefix = "a2a-question-"

// remoteQuestion is a remote task's question as a pending input of kind
// question, expiring after the remote tool's input_ttl (24 h unless set).
func (r *Run) remoteQuestion(tool string, rt *RemoteTask) PendingCall {
	ttl := DefaultInputTTL
	if bt, ok := r.agent.Tool(tool); ok && bt.Policy.InputTTL > 0 {
		ttl = bt.Policy.InputTTL
	}
	in, _ := json.Marshal(map[string]string{"question": rt.Question})
	round := max(rt.Round, 1)
	return PendingCall{ToolCallID: RemoteQuestionPrefix + rt.QuestionID, Name: tool, Kind: InputQuestion, Input: in,
		Asked: &InputAsk{Question: rt.Question}, ExpiresAt: r.e.now().Add(ttl), Round: round}
}

// result is the remote task's end as a child's outcome.
func (rt *RemoteTask) result() *RequestResult {
	return &RequestResult{TaskID: rt.ContextID, RequestID: rt.ID, Status: rt.Status, Output: rt.Output, Error: rt.Error}
}

// remoteChild is a paused remote task as the caller's pause reads a
// child's: its pending calls, each with its leaf (the remote task itself,
// or a remote caller's own leaf) and input.
func remoteChild(cc ChildCall, rt *RemoteTask) *Task {
	pending := make([]PendingCall, len(rt.Pending))
	url := rt.ResumeURL
	if url == "" {
		url = cc.Remote // another vendor's: its A2A endpoint is where it is answered
	}
	for i, p := range rt.Pending {
		if p.Leaf == nil {
			p.Leaf = &LeafRef{Agent: cc.Agent, TaskID: rt.ContextID, RequestID: rt.ID, URL: url}
		}
		p.RemoteInput = inputOrEmpty(p.Input)
		p.Input = p.RemoteInput
		p.InputHash = InputHash(p.Input)
		pending[i] = p
	}
	return &Task{ID: rt.ContextID, Agent: cc.Agent, Status: StatusPaused,
		Active: &ActiveRequest{ID: rt.ID, Status: StatusPaused, Round: rt.Round, Pending: pending}}
}

// emitRemote tells the caller's stream where a remote task stands, as a
// child event: approval_required for input-required, request_complete
// for an end.
func (r *Run) emitRemote(cc ChildCall, rt *RemoteTask, depth int) {
	var name string
	data := map[string]any{"request_id": rt.ID, "status": rt.Status}
	switch rt.Status {
	case StatusPaused:
		name = EventApprovalRequired
		calls := make([]map[string]any, 0, len(rt.Pending))
		for _, p := range rt.Pending {
			if p.Kind != "" {
				continue
			}
			calls = append(calls, map[string]any{"id": p.ToolCallID, "name": p.Name, "input": jsonRaw(inputOrEmpty(p.Input)),
				"expires_at": p.ExpiresAt.UTC().Format(time.RFC3339)})
		}
		data["round"], data["tool_calls"] = rt.Round, calls
		if rt.ResumeURL != "" {
			data["resume_url"] = rt.ResumeURL
		}
		if hasInputs(rt.Pending) {
			// The remote's questions and client tools (docs/api.md,
			// "Pauses for input").
			in := map[string]any{"request_id": rt.ID, "status": rt.Status, "round": rt.Round, "inputs": PendingInputViews(rt.Pending, time.Time{}, false)}
			if rt.ResumeURL != "" {
				in["resume_url"] = rt.ResumeURL
			}
			if len(calls) == 0 {
				name, data = EventInputRequired, in
			} else {
				r.emit(EventChild, childEvent(cc.Agent, rt.ContextID, rt.ID, depth, cc.Remote, EventInputRequired, in))
			}
		}
	case StatusRunning:
		return
	default:
		name = EventRequestComplete
		if rt.Error != nil {
			data["error"] = rt.Error
		}
	}
	r.emit(EventChild, childEvent(cc.Agent, rt.ContextID, rt.ID, depth, cc.Remote, name, data))
}

// timeUp tells a leg stopped by its deadline (not a cancel, nor a lost
// lease).
func timeUp(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// awaitRemote reads a working remote task until it ends or asks for
// input, or until the leg's deadline is near (it answers it working then).
func (e *Engine) awaitRemote(ctx context.Context, ra RemoteAgent, cc ChildCall, deadline time.Time) (*RemoteTask, error) {
	var until time.Time
	if !deadline.IsZero() {
		until = deadline.Add(-e.DeadlineMargin)
	}
	return ra.Await(ctx, cc.TaskID, cc.RequestID, until)
}

// ErrNotSent says a message surely did not reach a remote agent (there was
// no connection to send it on): a RemoteAgent wraps it. Any other failure
// of a send may hide a message that landed.
var ErrNotSent = errors.New("not sent: no connection to the remote agent")

// ErrRemoteUnknown: a remote task could not be read in the time there
// was (RemoteAgent.Await).
var ErrRemoteUnknown = errors.New("the remote task could not be read")

// sendRemote sends a call's message, its streamed events passed to the
// caller's stream as child events.
func (r *Run) sendRemote(ctx context.Context, ra RemoteAgent, call ChildCall, text string) (*RemoteTask, error) {
	events := func(contextID, taskID, name string, data any) {
		r.emit(EventChild, childEvent(call.Agent, contextID, taskID, 1, call.Remote, name, data))
	}
	return ra.Send(ctx, call.TaskID, call.MessageID, text, events)
}

// remoteMoved tells whether a paused caller's remote call is no longer
// where its pause saw it (ended, or input-required in another round), and
// whether a call it awaits expired there.
func (e *Engine) remoteMoved(ctx context.Context, t *Task, cc ChildCall) (bool, *RequestRecord, error) {
	ra := e.remoteOf(t.Agent, cc)
	if ra == nil || cc.RequestID == "" {
		return true, nil, nil // gone from the definition: the continuation gives the call its error
	}
	rt, err := ra.Get(ctx, cc.TaskID, cc.RequestID)
	var ae *Error
	if errors.As(err, &ae) && ae.Code == CodeTaskNotFound {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("read the remote task %s at %s: %w", cc.RequestID, cc.Remote, err)
	}
	switch rt.Status {
	case StatusRunning:
		return false, nil, nil // decided there: its end or pause is read by the next poll
	case StatusPaused:
		round := -1
		for _, w := range t.Active.Awaits {
			if w.Via == cc.ToolCallID {
				round = w.Round
			}
		}
		if rt.Round != round {
			return true, nil, nil
		}
		now := e.now()
		for _, p := range rt.Pending {
			if !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) {
				return true, &RequestRecord{RequestView: RequestView{RequestID: rt.ID, Status: StatusFailed,
					Error: &ErrorInfo{Code: CodeApprovalExpired, Message: fmt.Sprintf("the approval of %s asked by the agent %s expired", p.Name, cc.Agent)}}}, nil
			}
		}
		if len(rt.Pending) == 0 {
			// Another system's question: a new one is a move; this
			// caller's own copy says when it expires.
			asked := false
			for _, p := range t.Active.Pending {
				if p.Leaf == nil || p.Leaf.RequestID != rt.ID || !strings.HasPrefix(p.ToolCallID, RemoteQuestionPrefix) {
					continue
				}
				if p.ToolCallID != RemoteQuestionPrefix+rt.QuestionID {
					return true, nil, nil
				}
				asked = true
				if !now.Before(p.ExpiresAt) {
					return true, &RequestRecord{RequestView: RequestView{RequestID: rt.ID, Status: StatusFailed,
						Error: &ErrorInfo{Code: CodeInputExpired, Message: fmt.Sprintf("the question of the agent %s expired at %s", cc.Agent, p.ExpiresAt.UTC().Format(time.RFC3339))}}}, nil
				}
			}
			return !asked, nil, nil
		}
		return false, nil, nil
	case StatusFailed:
		if rt.Error != nil && IsExpiry(rt.Error.Code) {
			return true, &RequestRecord{RequestView: RequestView{RequestID: rt.ID, Status: rt.Status, Error: rt.Error}}, nil
		}
	}
	return true, nil, nil
}

// remoteDecision is a decision at a caller sent on to a remote task.
type remoteDecision struct {
	call ChildCall
	ra   RemoteAgent
	body ResumeRequest
}

// remoteDecided is a remote call a decision went to, and how to follow
// what its remote does with it.
type remoteDecided struct {
	call   ChildCall
	follow RemoteFollow
	// answer: follow sends an answer to another system's question first,
	// once the caller's claim took the decision (that system cannot tell
	// a duplicate: the claim is what makes it once).
	answer bool
	// part: what the caller's claim keeps on the call (ChildCall.Part).
	part *RemotePart
	// send, on a part kept for after the claim, sends it now: a decision
	// whose leaves are all remote sends every part before any claim
	// (sendPartsFirst). nil: an answer to another system's question.
	send func(context.Context) error
}

// errPartNotSent: a caller's decision's part did not reach the remote
// agent (no answer of the remote's: a transport failure), so the leg's
// continuation sends it again (runRemote).
var errPartNotSent = errors.New("the decision's part did not reach the remote agent")

// decideRemotes sends a caller's decision on to the remote tasks its
// awaits reach through remote calls, one message per remote task, before
// the caller is claimed: the remote's answer table applies (the first
// refusal is the caller's; a later one is logged and the caller pauses
// again on that remote). It returns the remote calls that took it. After:
// the caller's claim lands with its local leaves' first, and each message
// is sent by the caller's leg (follow); a refusal then pauses the caller
// again on that remote.
func (e *Engine) decideRemotes(ctx context.Context, t *Task, byCall map[string]CallDecision, reason string, after, sentBefore bool) ([]remoteDecided, error) {
	a := t.Active
	groups, err := e.remoteGroups(t, byCall, reason)
	if err != nil {
		return nil, err
	}
	var took []remoteDecided
	for _, g := range groups {
		via := g.call.ToolCallID
		if after || questionOnly(g.body) {
			key := DecisionKey{RequestID: a.ID, Round: a.Round, ToolCallID: via}
			leafRound := 0
			if g.body.Round != nil {
				leafRound = *g.body.Round
			}
			part := &RemotePart{Round: a.Round, LeafRound: leafRound, Body: g.body, DecidedAt: e.now()}
			var send func(context.Context) error
			if !questionOnly(g.body) {
				send = func(ctx context.Context) error {
					follow, err := g.ra.Decide(ctx, g.call.TaskID, g.call.RequestID, key, g.body)
					if err != nil {
						return e.partRefused(t, g.call, err)
					}
					// Taken: the leg sends it again after the claim (the
					// same message id: the remote's duplicate) and follows
					// that; this stream is let go of.
					done, cancel := context.WithCancel(ctx)
					cancel()
					_ = follow(done, nil)
					return nil
				}
			}
			took = append(took, remoteDecided{call: g.call, answer: true, part: part, send: send, follow: func(ctx context.Context, events RemoteEvents) error {
				follow, err := g.ra.Decide(ctx, g.call.TaskID, g.call.RequestID, key, g.body)
				if ae := (*Error)(nil); err != nil && !errors.As(err, &ae) {
					// Not delivered (no answer of the remote's): not a
					// refusal; the leg's continuation sends it again.
					e.log().Warn("a decision's part could not reach a remote agent; it is sent again", "task_id", t.ID, "agent", g.call.Agent, "url", g.call.Remote, "err", err)
					return fmt.Errorf("%w: %w", errPartNotSent, err)
				}
				if err != nil {
					// Refused there (decided on that system meanwhile):
					// the caller pauses on it again.
					e.log().Warn("a remote agent refused its part of a caller's decision; the caller pauses on it again", "task_id", t.ID, "agent", g.call.Agent, "url", g.call.Remote, "err", err)
					return err
				}
				return follow(ctx, events)
			}})
			continue
		}
		follow, err := g.ra.Decide(ctx, g.call.TaskID, g.call.RequestID, DecisionKey{RequestID: a.ID, Round: a.Round, ToolCallID: via}, g.body)
		if err != nil {
			err = e.partRefused(t, g.call, err)
			if len(took) == 0 && !sentBefore {
				return nil, err
			}
			e.log().Warn("a remote agent refused its part of a caller's decision", "task_id", t.ID, "agent", g.call.Agent, "url", g.call.Remote, "err", err)
			continue
		}
		took = append(took, remoteDecided{call: g.call, follow: follow})
	}
	return took, nil
}

// remoteGroups gathers a decision's parts by the remote call they go
// through (byCall: the decision by pending call), each with the round the
// caller awaits of that remote, in the order of the caller's awaits.
func (e *Engine) remoteGroups(t *Task, byCall map[string]CallDecision, reason string) ([]*remoteDecision, error) {
	a := t.Active
	var order []*remoteDecision
	groups := map[string]*remoteDecision{}
	for _, w := range a.Awaits {
		cc := remoteVia(a, w)
		if cc == nil {
			continue
		}
		g := groups[w.Via]
		if g == nil {
			ra := e.remoteOf(t.Agent, *cc)
			if ra == nil {
				return nil, Errorf(CodeAgentNotFound, "task %s waits on the remote agent %s, which its definition no longer names: the decision cannot reach it; cancel the task", t.ID, cc.Agent)
			}
			g = &remoteDecision{call: *cc, ra: ra, body: ResumeRequest{Reason: reason}}
			if w.Round > 0 {
				round := w.Round
				g.body.Round = &round
			}
			groups[w.Via] = g
			order = append(order, g)
		}
		for _, id := range w.ToolCallIDs {
			g.body.Decisions = append(g.body.Decisions, byCall[id].asInput(id))
		}
	}
	return order, nil
}

// partRefused is the answer a remote's refusal of a decision's part sent
// before any claim gives: the remote's own error, or remote_unavailable
// when it could not be reached (nothing changed).
func (e *Engine) partRefused(t *Task, cc ChildCall, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	e.log().Warn("a decision could not reach a remote agent", "task_id", t.ID, "agent", cc.Agent, "url", cc.Remote, "err", err)
	return Errorf(CodeRemoteUnavailable, "the agent %s at %s could not be reached; nothing changed: try again", cc.Agent, cc.Remote)
}

// questionOnly tells whether a remote decision answers another system's
// question (and nothing else).
func questionOnly(b ResumeRequest) bool {
	for _, d := range b.Decisions {
		if !strings.HasPrefix(d.ToolCallID, RemoteQuestionPrefix) {
			return false
		}
	}
	return len(b.Decisions) > 0
}

// awaitRemoteLeaf waits for a remote task this caller's decision went to:
// its end is the call's outcome (a join); its next pause is read when the
// call is continued.
func (r *Run) awaitRemoteLeaf(ctx context.Context, l leafRun) {
	// What the remote does with the decision, in this caller's stream.
	events := func(contextID, taskID, name string, data any) {
		r.emit(EventChild, childEvent(l.call.Agent, contextID, taskID, 1, l.call.Remote, name, data))
	}
	fctx, cancel := context.WithDeadline(ctx, r.deadline.Add(-r.e.DeadlineMargin))
	err := l.follow(fctx, events)
	cancel()
	if errors.Is(err, errPartNotSent) {
		return // the continuation (runRemote) sends it again
	}
	if l.answer {
		r.markPart(l.call.ToolCallID) // taken or refused: not sent again
	}
	if err != nil {
		r.e.log().DebugContext(ctx, "a remote task's stream ended early; it is read until it moves", "agent", l.call.Agent, "err", err)
	}
	rt, err := r.e.awaitRemote(ctx, l.remote, l.call, r.deadline)
	if err != nil {
		r.e.log().WarnContext(ctx, "reading a remote task after a decision failed; it is read again", "task_id", r.taskID, "agent", l.call.Agent, "url", l.call.Remote, "err", err)
		return
	}
	switch rt.Status {
	case StatusCompleted, StatusFailed, StatusCanceled:
	default:
		return
	}
	r.emitRemote(l.call, rt, 1)
	cc := l.call
	r.childMu.Lock()
	r.joins = append(r.joins, Join{RequestID: r.reqID, ToolCallID: cc.ToolCallID, Agent: cc.Agent, TaskID: cc.TaskID,
		ChildRequestID: cc.RequestID, Status: rt.Status, Output: rt.Output, Error: rt.Error})
	r.childMu.Unlock()
}

// pollIdle is a poll's first look, at META alone: done when there is
// nothing to do (the caller moved on), ErrBusy while a live leg holds it,
// ErrWaiting while it waits on remote tasks that have not moved. Else the
// poll reads the task and continues the caller.
func (e *Engine) pollIdle(ctx context.Context, taskID, rid string) (bool, error) {
	t, err := e.Store.GetTask(ctx, taskID)
	if errors.Is(err, ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	a := t.Active
	switch {
	case a == nil || a.ID != rid:
		return true, nil
	case a.CancelRequested:
		return false, nil
	case a.Status == StatusRunning && e.now().Before(a.LeaseUntil):
		return false, ErrBusy
	case a.Status != StatusPaused || len(a.Awaits) == 0:
		return false, nil
	}
	for _, w := range a.Awaits {
		cc := remoteVia(a, w)
		if cc == nil {
			return false, nil // a local child too: the full look
		}
		moved, expired, err := e.remoteMoved(ctx, t, *cc)
		if err != nil {
			return false, err
		}
		if moved || expired != nil {
			return false, nil
		}
	}
	return false, ErrWaiting
}
