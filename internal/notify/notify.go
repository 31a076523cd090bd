// Package notify delivers the outbox (docs/architecture.md): each OUT# item a commit
// put is resolved (its webhook, its waiter's token, its request's result)
// and delivered at least once — a webhook POST, a Step Functions task token
// or a durable execution callback answered — then deleted. A recipient
// hears of one request's events in commit order: before each delivery the
// dispatcher reads the request's outbox (one Query), and an item with an
// earlier one for its recipient still there waits (Behind). The dispatcher
// is the same in the notifier function (fed by the table's stream, an SQS
// retry queue and a sweep) and under `hitch serve` (Runner: fed by the
// memory store's queue or the table's stream, retrying in process).
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Webhook is one webhook delivery: the message's stable id (webhook-id),
// its event type, and its data.
type Webhook struct {
	ID    string
	Type  string
	Time  time.Time
	Data  any
	Agent string
}

// WebhookSender posts one webhook attempt; an error means "retry later".
type WebhookSender interface {
	Send(ctx context.Context, n agent.Notification, msg Webhook) error
}

// Answerer answers a waiter: a Step Functions task token or a durable
// execution's callback. Final tells an error that retrying cannot cure
// (an unknown, answered or timed-out token).
type Answerer interface {
	Succeed(ctx context.Context, token string, res *agent.RequestResult) error
	Fail(ctx context.Context, token string, res *agent.RequestResult) error
	Heartbeat(ctx context.Context, token string) error
	Final(err error) bool
}

// ErrRetry wraps a delivery that failed and should be tried again later.
var ErrRetry = errors.New("notify: retry later")

// Dispatcher delivers outbox items.
type Dispatcher struct {
	Engine   *agent.Engine
	Webhooks WebhookSender
	// Answerers by waiter kind (agent.WaiterTaskToken, agent.WaiterCallback).
	Answerers map[string]Answerer
	// Continuer continues callers (docs/architecture.md); nil: in this process,
	// through Engine.ContinueCaller.
	Continuer Continuer
	// PollEvery is how often a caller paused on a remote agent polls it
	// in this process (DefaultPollEvery when 0).
	PollEvery time.Duration
	Log       *slog.Logger
	Now       func() time.Time
}

// Continuer delivers a continuation item: it continues the caller the item
// names, or hands it to what will (the resume function). ErrKept: handed
// on; the recipient deletes the item once the caller is continued.
type Continuer interface {
	Continue(ctx context.Context, o agent.OutboxItem) error
}

// ErrKept says a delivered item is deleted by its recipient, not by the
// dispatcher.
var ErrKept = errors.New("notify: the recipient deletes the item")

// continueHere continues callers in this process; poll is how long a
// caller's poll of a remote agent that has not moved waits.
type continueHere struct {
	e    *agent.Engine
	poll time.Duration
}

func (c continueHere) Continue(ctx context.Context, o agent.OutboxItem) error {
	if o.Event == agent.EventPoll {
		err := c.e.PollCaller(ctx, o.TaskID, o.RequestID)
		if errors.Is(err, agent.ErrWaiting) {
			return &RetryAfter{After: c.poll, Err: fmt.Errorf("poll %s: %w", o.RequestID, err)}
		}
		if err != nil {
			return fmt.Errorf("%w: poll %s: %v", ErrRetry, o.RequestID, err)
		}
		return nil
	}
	// The claim that continues the caller deletes the item in its own
	// transaction; with nothing to do, the dispatcher deletes it.
	run, err := c.e.ConsumeContinue(ctx, o.TaskID, o.RequestID, o.SK())
	if err != nil {
		return fmt.Errorf("%w: continue %s: %w", ErrRetry, o.RequestID, err)
	}
	if run == nil {
		return nil
	}
	run.Execute(ctx, agent.Discard)
	return ErrKept
}

// DefaultPollEvery is how often a caller paused on a remote agent polls it
// under `hitch serve` (Dispatcher.PollEvery's default).
const DefaultPollEvery = 5 * time.Second

// RetryAfter is a delivery to try again after a set wait rather than the
// backoff: a caller's poll of a remote agent that has not moved
// (docs/architecture.md). It is an ErrRetry.
type RetryAfter struct {
	After time.Duration
	Err   error
}

func (e *RetryAfter) Error() string { return fmt.Sprintf("retry in %s: %v", e.After, e.Err) }

// Is makes a RetryAfter an ErrRetry.
func (e *RetryAfter) Is(target error) bool { return target == ErrRetry }

func (e *RetryAfter) Unwrap() error { return e.Err }

func (d *Dispatcher) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Deliver delivers one item and deletes it. It returns nil when the item is
// done — delivered, already delivered (gone), or refused for good (the
// refusal is logged and counted, never retried) — and an error wrapping
// ErrRetry when it should be tried again (the item stays): a *Behind when
// an earlier item of its request for the same recipient is undelivered.
func (d *Dispatcher) Deliver(ctx context.Context, o agent.OutboxItem) error {
	store := d.Engine.Store
	if gone, err := d.check(ctx, o); err != nil {
		return err
	} else if gone {
		return nil // delivered meanwhile (a duplicate record, the sweep)
	}
	start := d.now()
	err := d.deliver(ctx, o)
	if errors.Is(err, ErrKept) {
		d.observe(o, nil, d.now().Sub(start))
		return nil
	}
	var ra *RetryAfter
	if !errors.As(err, &ra) {
		d.observe(o, err, d.now().Sub(start)) // a poll that found nothing new is no delivery
	}
	if errors.Is(err, ErrRetry) {
		return err
	}
	if err != nil {
		d.log().Warn("an outbox item was refused for good; it is dropped", "task_id", o.TaskID, "request_id", o.RequestID,
			"kind", o.Kind, "event", o.Event, "delivery_id", o.DeliveryID(), "err", err)
	}
	if derr := store.DeleteOutbox(ctx, o.TaskID, o.SK()); derr != nil {
		// Delivered, not deleted: it will be delivered again (at least once).
		return fmt.Errorf("%w: delete %s: %v", ErrRetry, o.SK(), derr)
	}
	return nil
}

// check reads whether o is still undelivered and, for a notification,
// whether it may go now: a recipient hears of a request's events in the
// order they were committed, each delivery starting only after the one
// before it to the same recipient was accepted (docs/api.md#notifications).
// One strongly consistent Query of the request's outbox tells both; the
// items before o for its recipient are still there until accepted, refused
// for good (deleted too) or expired (absent). A continuation is not a
// notification: its recipient is the caller, which reads its child's state
// as it is when continued, and it never waits (nor does anything wait for
// it); for it, as before, one GetItem.
func (d *Dispatcher) check(ctx context.Context, o agent.OutboxItem) (gone bool, err error) {
	store := d.Engine.Store
	if !Ordered(o) {
		if _, err := store.GetOutbox(ctx, o.TaskID, o.SK()); errors.Is(err, agent.ErrNotFound) {
			return true, nil
		} else if err != nil {
			return false, fmt.Errorf("%w: read %s: %v", ErrRetry, o.SK(), err)
		}
		return false, nil
	}
	items, err := store.ListRequestOutbox(ctx, o.TaskID, o.RequestID)
	if err != nil {
		return false, fmt.Errorf("%w: read the outbox of %s: %v", ErrRetry, o.RequestID, err)
	}
	gone = true
	for _, p := range items {
		if p.Recipient != o.Recipient || !Ordered(p) {
			continue
		}
		switch c := agent.CompareOutbox(p, o); {
		case c < 0:
			return false, &Behind{Earlier: p}
		case c == 0:
			gone = false
		}
	}
	return gone, nil
}

// Ordered reports whether o is a notification, delivered in order per
// request and recipient: a webhook, a task token's or a callback's answer
// or heartbeat; not a continuation (nor a poll) of a caller, nor a
// remote task's cancel.
func Ordered(o agent.OutboxItem) bool {
	return o.Kind != agent.OutboxContinue && o.Kind != agent.OutboxRemoteCancel
}

// Behind is a delivery put off because an earlier item of its request for
// the same recipient is undelivered. It is an ErrRetry: the item is looked
// at again after WaitBehind, and goes once the earlier one is done with.
type Behind struct {
	Earlier agent.OutboxItem
}

func (e *Behind) Error() string {
	return fmt.Sprintf("notify: %s waits for %s to be delivered", e.Earlier.Recipient, e.Earlier.SK())
}

// Is makes a Behind an ErrRetry.
func (e *Behind) Is(target error) bool { return target == ErrRetry }

// WaitBehind is how long a delivery that is Behind waits before it looks
// again, the n-th time: Backoff, at most a minute. It is no failure and
// grows apart from the item's own attempts.
func WaitBehind(n int) time.Duration { return min(Backoff(n), time.Minute) }

func (d *Dispatcher) observe(o agent.OutboxItem, err error, took time.Duration) {
	if m := d.Engine.Metrics; m != nil {
		m.Delivered(o.Agent, o.Kind, err != nil, took)
	}
}

func (d *Dispatcher) deliver(ctx context.Context, o agent.OutboxItem) error {
	switch o.Kind {
	case agent.OutboxWebhook:
		return d.webhook(ctx, o)
	case agent.OutboxTaskToken, agent.OutboxCallback:
		return d.answer(ctx, o)
	case agent.OutboxRemoteCancel:
		if err := d.Engine.CancelRemote(ctx, o); err != nil {
			return fmt.Errorf("%w: cancel the remote task %s: %v", ErrRetry, o.Call.RequestID, err)
		}
		return nil
	case agent.OutboxContinue:
		c := d.Continuer
		if c == nil {
			poll := d.PollEvery
			if poll <= 0 {
				poll = DefaultPollEvery
			}
			c = continueHere{e: d.Engine, poll: poll}
		}
		return c.Continue(ctx, o)
	}
	return fmt.Errorf("unknown outbox kind %q", o.Kind)
}

func (d *Dispatcher) webhook(ctx context.Context, o agent.OutboxItem) error {
	ag, ok := d.Engine.Agents.Get(o.Agent)
	if !ok {
		// Left out at start-up (an MCP server down) or removed: the item
		// waits (until its ttl) rather than be lost.
		return fmt.Errorf("%w: agent %s is not loaded", ErrRetry, o.Agent)
	}
	if o.Webhook >= len(ag.Notifications) {
		return fmt.Errorf("agent %s has no webhook %d any more", o.Agent, o.Webhook)
	}
	if d.Webhooks == nil {
		return fmt.Errorf("%w: no webhook sender", ErrRetry)
	}
	res, err := d.Engine.OutboxResult(ctx, o)
	if errors.Is(err, agent.ErrNotFound) {
		return fmt.Errorf("task %s or its request %s is gone", o.TaskID, o.RequestID)
	}
	if err != nil {
		return fmt.Errorf("%w: resolve %s: %v", ErrRetry, o.SK(), err)
	}
	msg := Webhook{ID: o.DeliveryID(), Type: o.Event, Time: d.now(), Agent: o.Agent,
		Data: webhookData{Agent: o.Agent, UserID: o.UserID, Approvers: approversOf(res), RequestResult: res}}
	if err := d.Webhooks.Send(ctx, ag.Notifications[o.Webhook], msg); err != nil {
		return fmt.Errorf("%w: %v", ErrRetry, err)
	}
	return nil
}

// webhookData is a webhook's data: the agent, the user and the
// RequestResult (docs/architecture.md).
type webhookData struct {
	Agent  string `json:"agent"`
	UserID string `json:"user_id"`
	// Approvers, on a pause, are the principals who may decide its
	// unsettled calls ("owner", "user:ID", "group:NAME"), each once: what a
	// chat bridge routes the pause on (docs/api.md, "Approvers").
	Approvers []string `json:"approvers,omitempty"`
	*agent.RequestResult
}

// approversOf are the principals of a paused result's unsettled calls.
func approversOf(res *agent.RequestResult) []string {
	if res == nil || res.Status != agent.StatusPaused {
		return nil
	}
	var out []string
	for _, p := range append(slices.Clone(res.PendingApprovals), res.PendingInputs...) {
		if p.Outcome != "" {
			continue // settled while the round waits
		}
		who := p.Approvers
		if len(who) == 0 {
			who = []string{agent.PrincipalOwner}
		}
		for _, pr := range who {
			if !slices.Contains(out, pr) {
				out = append(out, pr)
			}
		}
	}
	return out
}

func (d *Dispatcher) answer(ctx context.Context, o agent.OutboxItem) error {
	store := d.Engine.Store
	tok, err := store.GetToken(ctx, o.TaskID, o.RequestID, o.Hash)
	if errors.Is(err, agent.ErrNotFound) {
		return nil // answered already (a pause with on_pause "return", a duplicate)
	}
	if err != nil {
		return fmt.Errorf("%w: read token: %v", ErrRetry, err)
	}
	an := d.Answerers[o.Kind]
	if an == nil {
		return fmt.Errorf("%w: no answerer for %s", ErrRetry, o.Kind)
	}
	if o.Event == agent.EventHeartbeat {
		if err := an.Heartbeat(ctx, tok.ID); err != nil {
			if an.Final(err) {
				return fmt.Errorf("heartbeat: %w", err)
			}
			return fmt.Errorf("%w: heartbeat: %v", ErrRetry, err)
		}
		return nil
	}
	res, err := d.Engine.OutboxResult(ctx, o)
	if errors.Is(err, agent.ErrNotFound) {
		res = &agent.RequestResult{TaskID: o.TaskID, RequestID: o.RequestID, Status: agent.StatusFailed,
			Error: &agent.ErrorInfo{Code: agent.CodeTaskNotFound, Message: "the task was deleted before its result was delivered"}}
	} else if err != nil {
		return fmt.Errorf("%w: resolve %s: %v", ErrRetry, o.SK(), err)
	}
	switch res.Status {
	case agent.StatusCompleted, agent.StatusPaused:
		err = an.Succeed(ctx, tok.ID, res)
	default:
		err = an.Fail(ctx, tok.ID, res)
	}
	if err != nil && !an.Final(err) {
		return fmt.Errorf("%w: %v", ErrRetry, err)
	}
	// Answered (or refused for good): the token is done with.
	if derr := store.DeleteToken(ctx, o.TaskID, o.RequestID, o.Hash); derr != nil {
		d.log().Warn("deleting an answered token failed", "task_id", o.TaskID, "request_id", o.RequestID, "err", derr)
	}
	return err
}

// ResultJSON is res as JSON of at most limit bytes (Step Functions' and the
// durable callbacks' 256 KB): whole when it fits, else with "output": null
// and "output_truncated": true (docs/architecture.md), and, if that is still too big,
// without the pending calls' inputs either.
func ResultJSON(res *agent.RequestResult, limit int) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil || len(b) <= limit {
		return b, err
	}
	cut := *res
	cut.Output, cut.OutputTruncated = "", true
	b, err = withNullOutput(&cut)
	if err != nil || len(b) <= limit {
		return b, err
	}
	cut.PendingApprovals = slices.Clone(cut.PendingApprovals)
	for i := range cut.PendingApprovals {
		cut.PendingApprovals[i].Input = map[string]any{}
	}
	cut.PendingInputs = slices.Clone(cut.PendingInputs)
	for i := range cut.PendingInputs {
		cut.PendingInputs[i].Input = map[string]any{}
	}
	b, err = withNullOutput(&cut)
	if err == nil && len(b) > limit {
		return nil, fmt.Errorf("notify: the result of %s is %d bytes even without its output and inputs (limit %d)", res.RequestID, len(b), limit)
	}
	return b, err
}

func withNullOutput(res *agent.RequestResult) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["output"] = json.RawMessage("null")
	return json.Marshal(m)
}

// MaxResultBytes is the largest result Step Functions (output) and the
// durable callbacks (Result, ErrorData) take, as docs/architecture.md counts it.
const MaxResultBytes = 256 * 1024
