// The engine, and a new message or edit: the claim of a new request
// (createTask, claimFollowOn, claimNew), settling the task's previous
// request first when its leg died (settleActive; docs/architecture.md,
// "Dead legs"), and the write plumbing every path shares.

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Agents finds deployed agents by name.
type Agents interface {
	Get(name string) (*Agent, bool)
}

// Engine runs requests: it validates and claims them (Start…), then runs their
// legs (Run.Execute) and commits what happened.
type Engine struct {
	Store  Store
	Model  Model
	Agents Agents
	// Artifacts keeps artifacts' bytes; nil: tools cannot save artifacts.
	Artifacts ArtifactBytes
	// ArtifactQuota bounds the bytes of a user's artifacts, over all their
	// tasks (--artifact-quota, HITCH_ARTIFACT_QUOTA): 0 is
	// DefaultArtifactQuota, negative is no quota.
	ArtifactQuota int64
	Log           *slog.Logger
	// Metrics, when set, receives the moments operations watch (docs/guide/observability.md, "Observability").
	Metrics Metrics
	// Tracer, when set, makes the spans of a leg, its model and tool calls.
	Tracer trace.Tracer

	// LegTimeout bounds a leg when the caller gives no earlier deadline
	// (locally --request-timeout). The lease is LeaseDuration, renewed.
	LegTimeout time.Duration
	// DeadlineMargin is kept free before the caller's deadline (the
	// Lambda's) to commit.
	DeadlineMargin time.Duration
	// ToolTimeout bounds one tool call.
	ToolTimeout time.Duration
	// RetentionDays, when > 0, sets a ttl on every item of a finished task.
	RetentionDays int
	// ChainMinRemaining (HITCH_CHAIN_MIN_REMAINING; 0: 60 s): a leg that
	// continues the chain of callers below it does so while more than this
	// is left before its deadline, then hands the rest to the outbox
	// (docs/architecture.md).
	ChainMinRemaining time.Duration

	// Wake, when set (a Reaper runs in this process), asks the reaper to
	// take a request over now rather than at its next sweep.
	Wake func(Takeover)

	legs runningLegs

	// Now and NewID are replaceable in tests.
	Now   func() time.Time
	NewID func() string
}

// LeaseDuration is a claim's lease (docs/architecture.md Lease and recovery): every
// write of the leg sets it anew, and the leg renews it when it has written
// nothing for RenewAfter, so a process that died is taken over 10–15 s later,
// whatever the leg's deadline.
var LeaseDuration = 15 * time.Second

// RenewAfter is how long a leg goes without a write before it renews its
// lease (in place of that second's cancel poll).
var RenewAfter = 5 * time.Second

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

func (e *Engine) newID() string {
	if e.NewID != nil {
		return e.NewID()
	}
	return NewID()
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// InvokeInput is a validated-by-shape UserMessage with its caller.
type InvokeInput struct {
	Agent  string
	UserID string
	// TenantID is the sender's tenant: a new task's owner's (approvers.go).
	TenantID  string
	SessionID string
	TaskID    string
	Items     []InputItem
	Metadata  map[string]string
	// Deadline is the caller's deadline (the Lambda's), if any.
	Deadline time.Time
	// Idem, when set, makes the call idempotent (docs/api.md Idempotency-Key).
	Idem *Idempotency
	// Waiter, when set, is told of the request's end (docs/architecture.md).
	Waiter *Waiter
}

// claim makes a the request a leg of this invocation holds: Running, a
// new claim token, its lease from now. It returns the leg's deadline (the
// caller's, less the margin, at most LegTimeout; legDeadline).
func (e *Engine) claim(a *ActiveRequest, callerDeadline, now time.Time) time.Time {
	deadline, lease := e.legDeadline(callerDeadline)
	a.Status, a.ClaimToken, a.LeaseUntil, a.ClaimedAt = StatusRunning, e.newID(), lease, now
	return deadline
}

// legDeadline is when a leg started now must stop (wall clock), and its
// lease's end (the engine's clock).
func (e *Engine) legDeadline(caller time.Time) (time.Time, time.Time) {
	d := e.LegTimeout
	if d <= 0 {
		d = 15 * time.Minute
	}
	if !caller.IsZero() {
		if c := time.Until(caller) - e.DeadlineMargin; c < d {
			d = max(c, 0)
		}
	}
	return time.Now().Add(d), e.now().Add(LeaseDuration)
}

// StartInvoke validates a new message, creates the task or claims the
// existing one, and returns the run. Refusals are *Error (4xx); nothing is
// written for them.
func (e *Engine) StartInvoke(ctx context.Context, in InvokeInput) (_ Leg, err error) {
	defer wrap(&err, "invoke %s (task %q)", in.Agent, in.TaskID)
	content, err := UserContent(in.Items)
	if err != nil {
		return nil, err
	}
	if err := CheckMetadata(in.Metadata); err != nil {
		return nil, err
	}
	if in.SessionID != "" {
		if in.SessionID, err = ParseID("session_id", in.SessionID); err != nil {
			return nil, err
		}
	}
	if in.TaskID != "" {
		if in.TaskID, err = ParseID("task_id", in.TaskID); err != nil {
			return nil, err
		}
	}
	run, err := e.startLoop(ctx, in.UserID, in.Agent, "invoke", in.Idem, func(ag *Agent, bound *IdemRecord) (Leg, error) {
		switch {
		case bound != nil:
			return e.boundFollower(ctx, ag, bound, in.Deadline)
		case in.TaskID == "":
			return legOf(e.createTask(ctx, ag, in, content))
		}
		return legOf(e.claimFollowOn(ctx, ag, in, content))
	})
	return e.bindFollower(ctx, run, err, in.Waiter)
}

func (e *Engine) createTask(ctx context.Context, ag *Agent, in InvokeInput, content []Block) (*Run, error) {
	now := e.now()
	sid := in.SessionID
	if sid == "" {
		sid = e.newID()
	}
	rid := e.newID()
	t := &Task{
		ID: e.newID(), SessionID: sid, Agent: ag.Name, UserID: in.UserID, TenantID: in.TenantID,
		Status: StatusRunning, CreatedAt: now, UpdatedAt: now,
		Metadata: maps.Clone(in.Metadata), Version: 1, NextSeq: 2, WriteID: e.newID(),
		Active: &ActiveRequest{
			ID: rid, Kind: KindInvoke, EventCursor: EventCursor{Epoch: 1}, CreatedAt: now, FirstSeq: 1,
		},
	}
	deadline := e.claim(t.Active, in.Deadline, now)
	user := Item{Seq: 1, RequestID: rid, Role: RoleUser, CreatedAt: now, Content: content}
	w := &Write{Task: t, Items: []Item{user}, Session: &SessionLink{
		SessionID: sid, UserID: in.UserID, TaskID: t.ID, Agent: ag.Name, CreatedAt: now,
	}, Idem: e.newIdem(in.UserID, ag.Name, "invoke", in.Idem, t.ID, sid, rid, 0),
		Lookup: &RequestLookup{RequestID: rid, TaskID: t.ID, Agent: ag.Name, UserID: in.UserID}}
	addWaiter(w, in.Waiter)
	if err := e.write(ctx, w); err != nil {
		if errors.Is(err, ErrSessionOwner) {
			return nil, Errorf(CodeNotOwner, "session %s belongs to another user", sid)
		}
		return nil, fmt.Errorf("create task: %w", err)
	}
	return e.newRun(ag, t, []Item{user}, deadline), nil
}

// LoadOwned reads a task and checks that it belongs to the agent and the
// user: 404 task_not_found, 401 not_owner.
func (e *Engine) LoadOwned(ctx context.Context, agentName, userID, taskID string) (_ *Task, _ []Item, err error) {
	defer wrap(&err, "load task %s", taskID)
	load := e.Store.LoadTask
	if ag, ok := e.Agents.Get(agentName); ok && ag.Context.MaxInputTokens > 0 {
		// A compacting agent's turns read only the model's context.
		load = e.Store.LoadContext
	}
	t, items, err := load(ctx, taskID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, Errorf(CodeTaskNotFound, "no task %s", taskID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load task %s: %w", taskID, err)
	}
	// Another agent's task (404) or another user's (401) comes back with
	// the error, so that a call naming a request checks the request first
	// (docs/api.md "Errors"; see access.go).
	if err := owned(t, agentName, userID); err != nil {
		return t, items, err
	}
	return t, items, nil
}

func (e *Engine) claimFollowOn(ctx context.Context, ag *Agent, in InvokeInput, content []Block) (*Run, error) {
	t, items, err := e.LoadOwned(ctx, ag.Name, in.UserID, in.TaskID)
	if err != nil {
		return nil, err
	}
	if in.SessionID != "" && in.SessionID != t.SessionID {
		return nil, Errorf(CodeSessionMismatch, "task %s belongs to session %s, not %s", t.ID, t.SessionID, in.SessionID)
	}
	md := maps.Clone(t.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	maps.Copy(md, in.Metadata)
	if err := CheckMetadata(md); err != nil {
		return nil, Errorf(CodeInvalidMetadata, "merged with the task's metadata: %s", err.(*Error).Message)
	}
	return e.claimNew(ctx, ag, t, items, newRequest{kind: KindInvoke, route: "invoke", user: in.UserID, content: content,
		deadline: in.Deadline, idem: in.Idem, waiter: in.Waiter}, func(next *Task, _ string) { next.Metadata = md })
}

// newRequest is a new request (a follow-on message or an edit) on a task.
type newRequest struct {
	kind, route, user string
	content           []Block
	deadline          time.Time
	idem              *Idempotency
	waiter            *Waiter
	// rid, parent, ancestors: a sub-agent call's child request, made
	// with the call (docs/architecture.md).
	rid       string
	parent    *ParentRef
	ancestors []TaskRequest
}

// claimNew settles the task's active request (409 if it is live), then
// claims the task for a new request with its user message, in one write.
// shape changes next (the new request's id given) before it is written.
func (e *Engine) claimNew(ctx context.Context, ag *Agent, t *Task, items []Item, nr newRequest, shape func(next *Task, rid string)) (*Run, error) {
	now := e.now()
	next := e.nextOf(t)
	var extra []Item
	var records []RequestRecord
	var decided []RequestDecision
	if a := t.Active; a != nil && a.Status == StatusPaused && len(a.Awaits) > 0 && !a.CancelRequested && roundExpired(a, now) {
		return nil, e.settleExpiredCaller(ctx, ag, t, items)
	}
	if t.Active != nil {
		var err error
		if extra, records, decided, err = e.settleActive(ctx, ag, next, items, now); err != nil {
			return nil, err
		}
	}
	rid := nr.rid
	if rid == "" {
		rid = e.newID()
	}
	shape(next, rid)
	user := Item{Seq: next.NextSeq, RequestID: rid, Role: RoleUser, CreatedAt: now, Content: nr.content}
	next.Status, next.UpdatedAt = StatusRunning, now
	next.NextSeq++
	next.Active = &ActiveRequest{
		ID: rid, Kind: nr.kind, EventCursor: EventCursor{Epoch: 1}, CreatedAt: now, FirstSeq: user.Seq,
		Parent: nr.parent, Ancestors: nr.ancestors,
	}
	deadline := e.claim(next.Active, nr.deadline, now)
	w := &Write{Task: next, PrevVersion: t.Version, Items: append(extra, user), Requests: records, Decisions: decided,
		Idem:   e.newIdem(nr.user, ag.Name, nr.route, nr.idem, t.ID, t.SessionID, rid, 0),
		Lookup: &RequestLookup{RequestID: rid, TaskID: t.ID, Agent: ag.Name, UserID: t.UserID}}
	addWaiter(w, nr.waiter)
	if err := e.clearRetention(ctx, t, next); err != nil {
		return nil, err
	}
	if err := e.commit(ctx, w, "claim task %s for a new %s", t.ID, nr.kind); err != nil {
		return nil, err
	}
	e.logSettled(ctx, t.ID, records)
	e.observeSettled(ag.Name, records)
	return e.newRun(ag, next, append(items, w.Items...), deadline), nil
}

// awaiting says what a paused request waits for, as a 409 task_paused
// names it: an approval, an answer (a question, a client tool's result, a
// server's input), or both.
func awaiting(a *ActiveRequest) string {
	approvals, inputs := false, false
	for _, p := range a.Pending {
		if p.Kind != "" {
			inputs = true
		} else {
			approvals = true
		}
	}
	switch {
	case inputs && approvals:
		return "approvals and answers"
	case inputs:
		return "an answer"
	}
	return "approval"
}

// settleExpiredCaller settles, before a new request claims its task, a
// paused caller past its copy of a leaf round's expiry as a decision at it
// would (resumeActive): a leaf decided at its own URL in time means the
// chain goes on, 409 task_busy; else the whole chain expires, the caller
// and its leaves together (expireCaller), and the claim reads the task
// again (a *ConflictError). Expiring the caller's round alone would
// record the call expired while its leaf ran, and leave the leaf paused.
func (e *Engine) settleExpiredCaller(ctx context.Context, ag *Agent, t *Task, items []Item) error {
	a := t.Active
	decided, err := e.leafDecided(ctx, t)
	if err != nil {
		return err // a read failed: an error answer, never an expiry
	}
	if decided {
		return Errorf(CodeTaskBusy, "task %s is running request %s (a sub-agent's round it waits on was decided; it goes on)", t.ID, a.ID)
	}
	code, msg := expiryOf(a, roundExpiry(a))
	rec := &RequestRecord{RequestView: RequestView{Status: StatusFailed, Error: &ErrorInfo{Code: code, Message: msg}}}
	if err := e.expireCaller(ctx, ag, t, items, rec); err != nil {
		return err
	}
	return &ConflictError{} // the task is free now: read it again
}

// settleActive deals with the task's active request before a new one is
// claimed: a live one refuses (409); a dead one (lease expired) is recorded
// Failed lease_expired with its dangling calls closed; an expired pause is
// applied. It changes next and returns the items and records to write.
func (e *Engine) settleActive(ctx context.Context, ag *Agent, next *Task, items []Item, now time.Time) ([]Item, []RequestRecord, []RequestDecision, error) {
	a := next.Active
	switch {
	case a.Status == StatusPaused && !roundExpired(a, now):
		return nil, nil, nil, Errorf(CodeTaskPaused, "task %s is paused awaiting %s (request %s, round %d)", next.ID, awaiting(a), a.ID, a.Round)
	case a.Status == StatusPaused:
		return e.expireRound(next, items, now, roundExpiry(a))
	case now.Before(a.LeaseUntil):
		return nil, nil, nil, Errorf(CodeTaskBusy, "task %s is running request %s", next.ID, a.ID)
	case len(e.openCalls(next, items)) > 0:
		// A caller with an open sub-agent call is never failed: it is
		// taken over (its children re-attached), and the message waits.
		e.wakeReaper(next.ID, a.ID)
		return nil, nil, nil, Errorf(CodeTaskBusy, "task %s is running request %s (it waits on a sub-agent and is being taken over)", next.ID, a.ID)
	}
	e.log().Warn("recovering a request whose lease expired", "task_id", next.ID, "request_id", a.ID, "lease_until", a.LeaseUntil)
	extra, rec := e.recordLost(ctx, next, items, now, "the request stopped without finishing (its lease expired); it was recorded as failed")
	return extra, []RequestRecord{rec}, nil, nil
}

// recordLost ends next's active request, whose leg died, Failed
// lease_expired with msg: its calls closed as a dead leg's are (the items
// to write), its dead leg's late events cut. It returns the items and the
// record to write with next.
func (e *Engine) recordLost(ctx context.Context, next *Task, items []Item, now time.Time, msg string) ([]Item, RequestRecord) {
	a := next.Active
	var extra []Item
	if closing := deadLegResults(items, a, "not run: the request was lost (its lease expired)"); len(closing) > 0 {
		ag, ok := e.Agents.Get(next.Agent)
		if !ok {
			ag = &Agent{Name: next.Agent}
		}
		closing = e.closeChildCalls(ctx, ag, a, next.Joins, closing)
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: now, Content: closing})
		next.NextSeq++
	}
	// Its leg may have logged events past what META knows: the error event
	// logSettled writes comes after them, in an epoch of its own.
	a.cut(e.lastLogged(ctx, next.ID, a))
	rec := endOf(a, StatusFailed, &ErrorInfo{Code: CodeLeaseExpired, Message: msg}, now)
	next.Active, next.Status = nil, StatusFailed
	return extra, rec
}

// takeOverLeg is what every takeover of a dead leg does to the request
// it claims (na, of t's next version): the dead leg's late events cut, and
// the takeover counted — reset by the first write of a leg that holds
// (Run.write), so MaxTakeovers takeovers in a row that die end the
// request (takeoversDied).
func (e *Engine) takeOverLeg(ctx context.Context, t *Task, na *ActiveRequest) {
	na.cut(e.lastLogged(ctx, t.ID, t.Active))
	na.Takeovers++
}

// takeoversDied tells whether the request's last MaxTakeovers takeovers
// all died before a write of theirs.
func (a *ActiveRequest) takeoversDied() bool { return a.Takeovers >= MaxTakeovers }

// danglingResults returns error results for the request's tool calls that
// have no result in items.
func danglingResults(items []Item, requestID, msg string) []Block {
	var out []Block
	for _, u := range unansweredUses(items, requestID) {
		out = append(out, ErrorResult(u.ID, msg))
	}
	return out
}

// answeredIDs are the ids of the calls the history holds a result of.
func answeredIDs(items []Item) map[string]bool {
	answered := map[string]bool{}
	for _, it := range items {
		if it.Role == RoleTool {
			for _, b := range it.Content {
				answered[b.ToolUseID] = true
			}
		}
	}
	return answered
}

// unansweredUses are the request's tool calls the history holds no result
// of, in order: the one rule of "a call still open" (a dead leg's, a
// leg's own, a caller's sub-agent calls).
func unansweredUses(items []Item, requestID string) []Block {
	answered := answeredIDs(items)
	var out []Block
	for _, it := range items {
		if it.RequestID != requestID || it.Role != RoleAssistant {
			continue
		}
		for _, u := range it.ToolUses() {
			if !answered[u.ID] {
				out = append(out, u)
			}
		}
	}
	return out
}

// deadLegResults closes the calls a dead leg of the request a left without a
// result (docs/architecture.md, "Dead legs"). The store knows a call started
// once its iteration write landed (calls are recorded before they run), so
// every such call gets outcome_unknown — it may have run — unless the leg's
// own writes prove it did not: a call of a paused round (nothing of the
// round runs before its decision), a call its round's decision rejected,
// and a sub-agent call, whose result its child tells (closeChildCalls).
// notRun is those calls' message.
func deadLegResults(items []Item, a *ActiveRequest, notRun string) []Block {
	rejected := map[string]bool{}
	if d := lastDecision(a); d != nil {
		for _, c := range d.Calls {
			if c.Action == ActionReject {
				rejected[c.ToolCallID] = true
			}
		}
	}
	var out []Block
	for _, b := range danglingResults(items, a.ID, notRun) {
		if a.Status == StatusRunning && !rejected[b.ToolUseID] && findCall(a, b.ToolUseID) == nil {
			b = ErrorResult(b.ToolUseID, outcomeUnknownMessage)
		}
		out = append(out, b)
	}
	return out
}

// outcomeUnknownMessage is the result of a call a dead leg may have run.
var outcomeUnknownMessage = CodeOutcomeUnknown + ": the request was interrupted while this call ran; it may or may not have run, and it was not run again"

// conflictRetries is how many times a path reads the task again and
// decides anew after its write lost to another (a conflict: the task
// moved under it), the one retry policy of the engine's paths.
const conflictRetries = 5

// again runs try until it ends in something other than a conflict, or
// (an ErrIdemExists too when idem) after conflictRetries retries, with
// the last conflict then.
func again[T any](idem bool, try func() (T, error)) (T, error) {
	var v T
	var err error
	for range conflictRetries + 1 {
		v, err = try()
		var ce *ConflictError
		if !errors.As(err, &ce) && !(idem && errors.Is(err, ErrIdemExists)) {
			return v, err
		}
	}
	return v, err
}

// commit writes w. A conflict comes back as it is (the caller reads the
// task again and decides anew); any other failure says what was written.
func (e *Engine) commit(ctx context.Context, w *Write, format string, args ...any) error {
	err := e.write(ctx, w)
	var ce *ConflictError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// nextOf is the version of t a write puts: a copy whose write follows t's
// (Version+1, a WriteID of its own), conditioned on t.Version.
func (e *Engine) nextOf(t *Task) *Task {
	next := t.Clone()
	next.Version, next.WriteID = t.Version+1, e.newID()
	return next
}

// endOf ends a, a request no leg holds, with status and failure: the ids
// of the events its end is logged with once written are reserved on it
// (a failure's error event; a cancel's cancelled and request_complete),
// and its record is returned.
func endOf(a *ActiveRequest, status Status, failure *ErrorInfo, at time.Time) RequestRecord {
	if status == StatusCanceled {
		a.reserve(2)
	} else {
		a.reserve(1)
	}
	rec := recordOf(a, status, at)
	rec.Error = failure
	return rec
}

// recordOf makes the record of the active request ending with status.
func recordOf(a *ActiveRequest, status Status, now time.Time) RequestRecord {
	decisions := a.Decisions
	if decisions == nil {
		decisions = []Decision{}
	}
	rec := RequestRecord{
		RequestView: RequestView{RequestID: a.ID, Kind: a.Kind, Status: status, CreatedAt: a.CreatedAt, UpdatedAt: now,
			Usage: a.Usage, Decisions: decisions},
		Round: a.Round, FirstSeq: a.FirstSeq, EventCursor: a.EventCursor, Compactions: a.Compactions,
		Waiters: a.Waiters, Calls: a.Calls,
	}
	rec.Parent = a.Parent
	if a.CanceledBy != "" {
		by, at, reason := a.CanceledBy, a.CanceledAt, a.CancelReason
		rec.CanceledBy, rec.CanceledAt = &by, &at
		if reason != "" {
			rec.CancelReason = &reason
		}
	}
	return rec
}
