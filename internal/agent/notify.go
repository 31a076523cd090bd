package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Notification events (docs/architecture.md, The outbox and the notifier): what a webhook subscribes to.
const (
	EventRequestPaused    = "request.paused"
	EventRequestCompleted = "request.completed"
	EventRequestFailed    = "request.failed"
	EventRequestCanceled  = "request.canceled"
)

// NotificationEvents are the event types a webhook may subscribe to.
var NotificationEvents = []string{EventRequestPaused, EventRequestCompleted, EventRequestFailed, EventRequestCanceled}

// Notification is a webhook an agent's definition configures (docs/architecture.md):
// the operator's URL, never a caller's.
type Notification struct {
	URL string
	// Events it is sent for (a subset of NotificationEvents).
	Events []string
	// Secret is the HMAC-SHA256 key: the base64-decoded bytes after
	// "whsec_" of the configured secret.
	Secret []byte
}

// Wants tells whether the webhook subscribes to event.
func (n Notification) Wants(event string) bool {
	for _, e := range n.Events {
		if e == event {
			return true
		}
	}
	return false
}

// Waiter kinds: how a direct caller waits on a request (docs/architecture.md).
const (
	// WaiterTaskToken is a Step Functions task token ($$.Task.Token).
	WaiterTaskToken = "task_token"
	// WaiterCallback is a Lambda durable execution's callback id.
	WaiterCallback = "callback_id"
)

// on_pause values.
const (
	OnPauseWait   = "wait"
	OnPauseReturn = "return"
)

// Waiter is a direct caller that waits for a request's end through the
// outbox: a Step Functions task token or a durable execution's callback.
type Waiter struct {
	Kind string // WaiterTaskToken or WaiterCallback
	ID   string // the token or the callback id
	// OnPause is OnPauseWait (the default: a pause only heartbeats) or
	// OnPauseReturn (a pause answers with the Paused RequestResult).
	OnPause string
}

// Outbox kinds: who an outbox item is for.
const (
	OutboxWebhook   = "webhook"
	OutboxTaskToken = WaiterTaskToken
	OutboxCallback  = WaiterCallback
	// OutboxContinue continues a caller after its sub-agent's pause or end
	// (docs/architecture.md, The outbox and the notifier): the item is the caller's (its task and
	// request), written by the child's commit.
	OutboxContinue = "continue"
	// OutboxRemoteCancel cancels, on its own system, the task of a remote
	// agent call that its caller closed without the task's result (the
	// caller failed or was canceled): written by the commit that ends the
	// caller, delivered until the remote answers, so that a remote task
	// never waits below a chain that ended (docs/api.md,
	// "Remote agents").
	OutboxRemoteCancel = "remote-cancel"
)

// EventContinue is a continuation item's event.
const EventContinue = "continue"

// EventPoll is the event of a continuation item that polls a caller's
// remote agents (a paused caller waiting on a remote task).
const EventPoll = "poll"

// EventCancel is a remote-cancel item's event.
const EventCancel = "cancel"

// EventHeartbeat is an outbox item's event for a waiter told that its
// request's state changed (a pause it waits through, a new leg).
const EventHeartbeat = "heartbeat"

// OutboxItem is what a commit owes the outside world (docs/architecture.md): put in
// the commit's own transaction (OUT#<rid>#<epoch>#<event id>#<recipient>),
// delivered at least once by the notifier, then deleted. It holds
// references, resolved when it is delivered: the webhook by its index in
// the agent's definition, a waiter by its token item, the result by the
// request's record or META.
type OutboxItem struct {
	TaskID    string    `json:"task_id"`
	RequestID string    `json:"request_id"`
	Epoch     int       `json:"epoch"`
	EventID   int64     `json:"event_id"`
	Recipient string    `json:"recipient"`
	Kind      string    `json:"kind"`
	Event     string    `json:"event"`
	Agent     string    `json:"agent"`
	UserID    string    `json:"user_id"`
	Round     int       `json:"round,omitempty"`
	Webhook   int       `json:"webhook,omitempty"`
	Hash      string    `json:"hash,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Pending are a pause's calls, by reference (as META holds them), and
	// Usage the request's so far: the Paused result, however late it is
	// delivered.
	Pending []PendingCall `json:"pending,omitempty"`
	Usage   *Usage        `json:"usage,omitempty"`
	// Call is a remote-cancel item's call: the remote agent and its task.
	Call *ChildCall `json:"call,omitempty"`
	// Message, on a remote-cancel item of a call whose remote never
	// answered (no task known), is the call's message: sent again with its
	// id to find the task it made (RemoteAgent.CancelMessage).
	Message string `json:"message,omitempty"`
	// KeepUntil, when set, is the item's ttl instead of OutboxTTL from its
	// write: a poll lives as long as the round it polls.
	KeepUntil time.Time `json:"keep_until,omitzero"`
}

// The recipients of outbox items. Items of one (request, recipient) are
// delivered one at a time, in commit order; the names are stored in keys,
// so they never change.

// WebhookRecipient is the agent's i-th webhook.
func WebhookRecipient(i int) string { return fmt.Sprintf("wh%d", i) }

// WaiterRecipient is a waiter (a task token, a durable callback) by the
// hash of its token.
func WaiterRecipient(kind, hash string) string { return kind[:2] + "-" + hash }

// ContinueRecipient is a caller's continuation once its child request
// childRid ended.
func ContinueRecipient(childRid string) string { return "ct-" + childRid }

// HandoffRecipient is a caller's own continuation, handed off at the end
// of a leg that ran out of time.
const HandoffRecipient = "ct-handoff"

// PollRecipient is a caller's poll of the remote agent it sent messageID.
func PollRecipient(messageID string) string { return "po-" + messageID }

// RemoteCancelRecipient is the remote task of the call that sent
// messageID, canceled on its system.
func RemoteCancelRecipient(messageID string) string { return "rc-" + messageID }

// SK is the item's sort key under its task.
func (o OutboxItem) SK() string {
	return fmt.Sprintf("OUT#%s#%06d#%010d#%s", o.RequestID, o.Epoch, o.EventID, o.Recipient)
}

// DeliveryID identifies the item across its delivery attempts (a webhook's
// webhook-id): receivers deduplicate on it.
func (o OutboxItem) DeliveryID() string {
	sum := sha256.Sum256([]byte(o.TaskID + "/" + o.SK()))
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// OutboxTTL is how long an undelivered outbox item is kept.
const OutboxTTL = 7 * 24 * time.Hour

// WaiterRef is a waiter of the active request, on META: its kind, on_pause
// and the hash naming its TOK# item, which holds the token itself.
type WaiterRef struct {
	Kind    string `json:"kind"`
	Hash    string `json:"hash"`
	OnPause string `json:"on_pause,omitempty"`
}

// TokenItem is a waiter's token (TOK#<rid>#<hash>), deleted once answered.
type TokenItem struct {
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
	Waiter
	Hash string `json:"hash"`
}

// Ref is the waiter as META refers to it.
func (w Waiter) Ref() WaiterRef {
	sum := sha256.Sum256([]byte(w.Kind + "\x00" + w.ID))
	return WaiterRef{Kind: w.Kind, Hash: hex.EncodeToString(sum[:8]), OnPause: w.OnPause}
}

// addWaiter binds a direct caller's waiter to the request w claims: a
// reference on META and its token in a TOK# item, in w's transaction. The
// same token again (a retried call) is bound once.
func addWaiter(w *Write, wt *Waiter) {
	a := w.Task.Active
	if wt == nil || a == nil {
		return
	}
	ref := wt.Ref()
	for _, r := range a.Waiters {
		if r.Hash == ref.Hash {
			return
		}
	}
	a.Waiters = append(a.Waiters, ref)
	w.Tokens = append(w.Tokens, TokenItem{TaskID: w.Task.ID, RequestID: a.ID, Waiter: *wt, Hash: ref.Hash})
}

// waiterItem is the outbox item of base's event for the waiter ref: its
// answer, or a heartbeat.
func waiterItem(base OutboxItem, ref WaiterRef, answer bool) OutboxItem {
	it := base
	it.Kind, it.Hash, it.Recipient = ref.Kind, ref.Hash, WaiterRecipient(ref.Kind, ref.Hash)
	if !answer {
		it.Event = EventHeartbeat
	}
	return it
}

// addPausedWaiter binds wt to the request w writes (addWaiter) and, when
// it stays Paused and its pause answers the waiter (pauseAnswers), puts
// that answer in w's outbox: base with the pause's event.
func addPausedWaiter(w *Write, wt *Waiter, base OutboxItem) {
	a := w.Task.Active
	addWaiter(w, wt)
	if a == nil || wt == nil || a.Status != StatusPaused || a.ClaimToken != "" || !pauseAnswers(a, wt.Ref()) {
		return
	}
	base.Epoch, base.EventID, base.Round, base.Event = a.Epoch, a.LastEventID, a.Round, EventRequestPaused
	usage := a.Usage
	base.Pending, base.Usage = a.Pending, &usage
	w.Outbox = append(w.Outbox, waiterItem(base, wt.Ref(), true))
}

// pauseAnswers tells whether the pause a (paused) answers the waiter ref,
// rather than a heartbeat: on_pause "return" asks for it, and a waiter
// cannot carry out a client tool while it waits, so a round holding one
// answers it as on_pause "return" does (docs/api.md, "Pauses for input").
func pauseAnswers(a *ActiveRequest, ref WaiterRef) bool {
	return ref.OnPause == OnPauseReturn || slices.ContainsFunc(a.Pending, func(p PendingCall) bool { return p.Kind == InputClient })
}

// bindWaiter binds the waiter of a duplicate that waits (a follower: a
// retried invoke, a decision sent again) to the request rid it follows,
// as a claim binds its own (docs/guide/notifications.md, "Direct
// operations, task tokens and callbacks": every direct call bound to the
// request puts its token). While
// the request has not ended, a reference on META and its token; a pause
// it is owed (pauseAnswers) is answered through the outbox at once. Once
// the request has ended, its token and its answer go out through the
// outbox at once. A waiter already bound is bound once; a task deleted
// meanwhile binds nothing (the follower answers task_not_found).
func (e *Engine) bindWaiter(ctx context.Context, taskID, rid string, wt *Waiter) error {
	ref := wt.Ref()
	for attempt := 0; ; attempt++ {
		t, err := e.Store.GetTask(ctx, taskID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bind a waiter to %s: %w", rid, err)
		}
		next := e.nextOf(t)
		w := &Write{Task: next, PrevVersion: t.Version}
		base := OutboxItem{TaskID: t.ID, RequestID: rid, Agent: t.Agent, UserID: t.UserID, CreatedAt: e.now()}
		if a := next.Active; a != nil && a.ID == rid {
			if slices.ContainsFunc(a.Waiters, func(r WaiterRef) bool { return r.Hash == ref.Hash }) {
				return nil
			}
			addPausedWaiter(w, wt, base)
		} else {
			rec, err := e.findRecord(ctx, taskID, rid)
			if err != nil || rec == nil {
				return err
			}
			if slices.ContainsFunc(rec.Waiters, func(r WaiterRef) bool { return r.Hash == ref.Hash }) {
				return nil // answered by the end already
			}
			if next.Active == nil && next.RetainUntil != 0 {
				w.Expires = time.Unix(next.RetainUntil, 0) // an idle task keeps its retention
			}
			base.Epoch, base.EventID, base.Round, base.Event = rec.Epoch, rec.LastEventID, rec.Round, requestEvent(rec.Status)
			w.Tokens = append(w.Tokens, TokenItem{TaskID: t.ID, RequestID: rid, Waiter: *wt, Hash: ref.Hash})
			w.Outbox = append(w.Outbox, waiterItem(base, ref, true))
		}
		err = e.commit(ctx, w, "bind a waiter to %s", rid)
		if errors.Is(err, ErrConflict) && attempt < 8 {
			continue // the task moved on: bind to it as it is now
		}
		return err
	}
}

// unionWaiters is the waiters of every list, each once, in order.
func unionWaiters(lists ...[]WaiterRef) []WaiterRef {
	var out []WaiterRef
	for _, l := range lists {
		for _, ref := range l {
			if !slices.ContainsFunc(out, func(m WaiterRef) bool { return m.Hash == ref.Hash }) {
				out = append(out, ref)
			}
		}
	}
	return out
}

// requestEvent is the notification event of a request ending with status.
func requestEvent(st Status) string {
	switch st {
	case StatusCompleted:
		return EventRequestCompleted
	case StatusCanceled:
		return EventRequestCanceled
	case StatusPaused:
		return EventRequestPaused
	}
	return EventRequestFailed
}

// outbox adds to w the items its commit owes (docs/architecture.md): for each request
// it ends, the agent's webhooks subscribed and every waiter's answer; for a
// pause (the write that pauses, w.pausing), the webhooks and the waiters'
// (an answer with on_pause "return", else a heartbeat); for a new leg of a
// request with waiters, heartbeats.
func (e *Engine) outbox(w *Write, newLeg bool) {
	t := w.Task
	ag, _ := e.Agents.Get(t.Agent)
	now := e.now()
	item := func(rid string, epoch int, eventID int64, round int) OutboxItem {
		return OutboxItem{TaskID: t.ID, RequestID: rid, Epoch: epoch, EventID: eventID, Agent: t.Agent, UserID: t.UserID, Round: round, CreatedAt: now}
	}
	hooks := func(base OutboxItem) {
		if ag == nil {
			return
		}
		for i, n := range ag.Notifications {
			if n.Wants(base.Event) {
				it := base
				it.Kind, it.Webhook, it.Recipient = OutboxWebhook, i, WebhookRecipient(i)
				w.Outbox = append(w.Outbox, it)
			}
		}
	}
	waiters := func(base OutboxItem, refs []WaiterRef, answer func(WaiterRef) bool) {
		for _, ref := range refs {
			w.Outbox = append(w.Outbox, waiterItem(base, ref, answer(ref)))
		}
	}
	// A child's pause or end continues its caller.
	cont := func(p *ParentRef, childRid string, epoch int, eventID int64) {
		if p == nil {
			return
		}
		w.Outbox = append(w.Outbox, OutboxItem{TaskID: p.TaskID, RequestID: p.RequestID, Epoch: epoch, EventID: eventID,
			Agent: p.Agent, UserID: t.UserID, Kind: OutboxContinue, Event: EventContinue, Recipient: ContinueRecipient(childRid), CreatedAt: now})
	}
	for _, r := range w.Requests {
		base := item(r.RequestID, r.Epoch, r.LastEventID, r.Round)
		base.Event = requestEvent(r.Status)
		hooks(base)
		waiters(base, r.Waiters, func(WaiterRef) bool { return true })
		cont(r.Parent, r.RequestID, r.Epoch, r.LastEventID)
		w.Outbox = append(w.Outbox, remoteCancels(base, r)...)
	}
	a := t.Active
	switch {
	case a == nil:
	case a.Status == StatusPaused && a.ClaimToken == "" && w.pausing:
		// Only the write that pauses owes the pause's items: written again
		// by a later write of the paused META (a cancel's flag), an item
		// delivered and deleted meanwhile would be delivered again.
		base := item(a.ID, a.Epoch, a.LastEventID, a.Round)
		base.Event = EventRequestPaused
		usage := a.Usage
		base.Pending, base.Usage = a.Pending, &usage
		hooks(base)
		waiters(base, a.Waiters, func(ref WaiterRef) bool { return pauseAnswers(a, ref) })
		cont(a.Parent, a.ID, a.Epoch, a.LastEventID)
		// A pause on a remote agent is polled by the item its call was
		// recorded with (planChildren): it stays while the call is open.
	case newLeg && len(a.Waiters) > 0:
		base := item(a.ID, a.Epoch, a.LastEventID, a.Round)
		waiters(base, a.Waiters, func(WaiterRef) bool { return false })
	}
}

// remoteCancels are the remote-cancel items of a request that ended
// Failed or Canceled: one for each remote agent call whose task is known,
// or whose message was sent and may have made one (its task is learned
// by sending the message again, CancelRemote). A Completed request has
// every call's result. A call whose result came costs a cancel the remote
// refuses (its task ended), never a wrong one.
func remoteCancels(base OutboxItem, r RequestRecord) []OutboxItem {
	if r.Status != StatusFailed && r.Status != StatusCanceled {
		return nil
	}
	var out []OutboxItem
	for _, c := range r.Calls {
		if c.Remote == "" || c.RequestID == "" && (c.SentAt.IsZero() || c.MessageID == "") {
			continue
		}
		it := base
		cc := c
		it.Kind, it.Event, it.Recipient, it.Call = OutboxRemoteCancel, EventCancel, RemoteCancelRecipient(c.MessageID), &cc
		out = append(out, it)
	}
	return out
}

// CancelRemote delivers a remote-cancel item: the remote task is canceled
// on its system. The remote's own answer (the task ended, or is unknown
// there) is final; an error is a failure to reach it, to try again.
func (e *Engine) CancelRemote(ctx context.Context, o OutboxItem) (err error) {
	defer wrap(&err, "remote-cancel for request %s of task %s", o.RequestID, o.TaskID)
	if o.Call == nil {
		e.log().Error("a remote-cancel item names no call", "task_id", o.TaskID, "outbox", o.SK())
		return nil
	}
	ra := e.remoteOf(o.Agent, *o.Call)
	if ra == nil {
		// Left out at start-up or removed: the item waits (until its ttl).
		return fmt.Errorf("agent %s has no remote agent %s loaded", o.Agent, o.Call.Agent)
	}
	if o.Call.RequestID == "" {
		text := o.Message
		if text == "" {
			text = e.sentText(ctx, o.TaskID, o.Call.ToolCallID)
		}
		err = ra.CancelMessage(ctx, o.Call.TaskID, o.Call.MessageID, text)
	} else {
		err = ra.Cancel(ctx, o.Call.TaskID, o.Call.RequestID)
	}
	if ae := (*Error)(nil); err != nil && !errors.As(err, &ae) {
		return err
	}
	return nil
}

// sentText is the message a remote agent call of the task sent, read
// from the call in its history ("" when it cannot be read: a remote that
// never had the message then makes a task of nothing, canceled at once).
func (e *Engine) sentText(ctx context.Context, taskID, toolCallID string) string {
	_, items, err := e.Store.LoadTask(ctx, taskID)
	if err != nil {
		return ""
	}
	for _, it := range items {
		for _, b := range it.Content {
			if b.Type == BlockToolUse && b.ID == toolCallID {
				if in, err := parseAgentInput(b.Input); err == nil {
					return in.Message
				}
			}
		}
	}
	return ""
}

// OutboxResult resolves what an outbox item tells its recipient
// (docs/architecture.md: items hold references): an ended request's RequestResult from its
// record; a pause's from META while the request still waits in that round,
// else the Paused result without its pending calls (it has moved on). A
// task deleted since still resolves (the delete keeps the records its
// items are for). It returns ErrNotFound when the request is gone.
func (e *Engine) OutboxResult(ctx context.Context, o OutboxItem) (_ *RequestResult, err error) {
	defer wrap(&err, "the result of request %s of task %s", o.RequestID, o.TaskID)
	ag, ok := e.Agents.Get(o.Agent)
	if !ok {
		ag = &Agent{Name: o.Agent}
	}
	t, err := e.Store.GetTask(ctx, o.TaskID)
	deleted := errors.Is(err, ErrNotFound)
	if deleted {
		// Deleted after the pause or end was committed: what is owed
		// still goes out, from the item and the record the delete keeps
		// for it (docs/api.md, Delete a task).
		t, err = &Task{ID: o.TaskID, Agent: o.Agent, UserID: o.UserID}, nil
	}
	if err != nil {
		return nil, err
	}
	if o.Event == EventRequestPaused {
		// The pause as it was, from the item's references, even when the
		// request has moved on since.
		pt := *t
		pt.Active = &ActiveRequest{ID: o.RequestID, Status: StatusPaused, Round: o.Round, Pending: slices.Clone(o.Pending)}
		if o.Usage != nil {
			pt.Active.Usage = *o.Usage
		}
		if err := e.pendingInputs(ctx, &pt, nil); err != nil && !deleted {
			return nil, err // a deleted task's inputs went with it
		}
		return pausedResult(ag, &pt, e.now()), nil
	}
	rec, err := e.findRecord(ctx, o.TaskID, o.RequestID)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, ErrNotFound
	}
	return resultOfRecord(ag, t, rec), nil
}
