// Expiry: a paused round past its approvals' expiry ends Failed
// approval_expired without a model call — found by a resume, a message, the
// reaper or a caller — and a chain ends whole: a leaf's expiry ends its
// callers, a caller's ends every leaf it awaited, local or remote
// (docs/architecture.md, "The rules that keep a chain honest").

package agent

import (
	"context"
	"time"
)

// expireCaller ends a paused caller Failed approval_expired because a leaf
// of its chain expired (docs/architecture.md, "The rules that keep a chain honest"): its open calls get the expiry
// as their error, nothing runs anywhere. Its end continues its own caller,
// which ends the same way; then every other leaf round it awaits that is
// still paused is expired too, so that none is left approvable at its own
// URL with its result going nowhere.
func (e *Engine) expireCaller(ctx context.Context, ag *Agent, t *Task, items []Item, rec *RequestRecord) error {
	now := e.now()
	next := e.nextOf(t)
	a := next.Active
	code, msg := CodeApprovalExpired, "approval expired"
	if rec.Error != nil {
		code, msg = rec.Error.Code, rec.Error.Message
	}
	var extra []Item
	if closing := danglingResults(items, a.ID, msg); len(closing) > 0 {
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: now, Content: closing})
		next.NextSeq++
	}
	a.LastEventID++ // the error event, logged once written
	r := recordOf(a, StatusFailed, now)
	r.Error = &ErrorInfo{Code: code, Message: msg}
	next.Active, next.Status = nil, StatusFailed
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = now
	if err := e.write(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{r}}); err != nil {
		return err
	}
	e.settled(ctx, ag.Name, next, []RequestRecord{r})
	at := roundExpiry(t.Active)
	if at.IsZero() || at.After(now) {
		at = now
	}
	e.expireLeaves(ctx, t.Agent, t.Active, at)
	return nil
}

// expireLeaves expires, as of at, every local leaf round a ended caller
// awaited that is still paused in that round (the chain's expiry, docs/architecture.md), and cancels its remote leaves' tasks on their systems. A leaf
// decided meanwhile (its own URL, before the expiry reached it) goes on:
// its version moved, and its result reaches nobody.
func (e *Engine) expireLeaves(ctx context.Context, callerAgent string, a *ActiveRequest, at time.Time) {
	for _, w := range a.Awaits {
		if cc := remoteVia(a, w); cc != nil {
			// A remote leaf still paused in its round would wait for ever
			// below an ended chain: its task is canceled there.
			if ra := e.remoteOf(callerAgent, *cc); ra != nil && cc.RequestID != "" {
				if err := ra.Cancel(ctx, cc.TaskID, cc.RequestID); err != nil {
					e.log().Warn("canceling a remote leaf of an expired chain failed; it expires on its own system", "agent", cc.Agent, "remote_task_id", cc.RequestID, "err", err)
				}
			}
			continue
		}
		sub, ok := e.Agents.Get(w.Agent)
		if !ok {
			continue
		}
		if _, err := again(false, func() (*RequestRecord, error) { return e.expireLeaf(ctx, sub, w, at) }); err != nil {
			e.log().Warn("expiring a leaf of an expired chain failed", "task_id", w.TaskID, "request_id", w.RequestID, "err", err)
		}
	}
}

// expireLeaf expires a leaf round a caller awaited, as of at, while it is
// still paused in that round.
func (e *Engine) expireLeaf(ctx context.Context, sub *Agent, w Await, at time.Time) (*RequestRecord, error) {
	lt, litems, err := e.loadFor(ctx, sub, w.TaskID)
	if err != nil {
		return nil, nil
	}
	la := lt.Active
	if la == nil || la.ID != w.RequestID || la.Status != StatusPaused || la.Round != w.Round || len(la.Awaits) > 0 {
		return nil, nil
	}
	return e.expireAt(ctx, sub, lt, litems, e.now(), at)
}

// roundExpired tells whether a paused round has passed its earliest expiry.
func roundExpired(a *ActiveRequest, now time.Time) bool {
	for _, p := range a.Pending {
		if !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) {
			return true
		}
	}
	return false
}

// roundExpiry is when a paused round expires: its calls' earliest expiry.
func roundExpiry(a *ActiveRequest) time.Time {
	var at time.Time
	for _, p := range a.Pending {
		if !p.ExpiresAt.IsZero() && (at.IsZero() || p.ExpiresAt.Before(at)) {
			at = p.ExpiresAt
		}
	}
	return at
}

// expireRound applies a paused round's expiry (docs/api.md, "Expiry"); at is
// when the chain it belongs to expired (its own earliest expiry, or an
// earlier one of another leaf of its chain).
func (e *Engine) expireRound(next *Task, items []Item, now, at time.Time) ([]Item, []RequestRecord, []RequestDecision, error) {
	a := next.Active
	code, msg := expiryOf(a, at)
	closing := danglingResults(items, a.ID, msg)
	var extra []Item
	if len(closing) > 0 {
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: now, Content: closing})
		next.NextSeq++
	}
	d := Decision{Round: a.Round, Approver: "system:expiry", DecidedAt: now, Action: "reject"}
	for _, p := range a.Pending {
		d.Calls = append(d.Calls, CallDecision{ToolCallID: p.ToolCallID, Action: "reject", Reason: msg})
	}
	a.Decisions = append(a.Decisions, d)
	a.LastEventID++ // the error event, logged once the expiry is written
	rec := recordOf(a, StatusFailed, now)
	rec.Error = &ErrorInfo{Code: code, Message: msg}
	next.Active = nil
	next.Status = StatusFailed
	return extra, []RequestRecord{rec}, []RequestDecision{{RequestID: a.ID, Decision: d}}, nil
}

// applyExpiry expires a paused round past its expiry (the lazy expiry of
// docs/api.md, applied by a resume, a message or the reaper): each pending call
// closed, the request Failed approval_expired, no model call. It returns
// the record written.
func (e *Engine) applyExpiry(ctx context.Context, ag *Agent, t *Task, items []Item, now time.Time) (*RequestRecord, error) {
	return e.expireAt(ctx, ag, t, items, now, roundExpiry(t.Active))
}

// expireAt expires t's paused round as of at (an expiry of its chain).
func (e *Engine) expireAt(ctx context.Context, ag *Agent, t *Task, items []Item, now, at time.Time) (*RequestRecord, error) {
	next := e.nextOf(t)
	extra, recs, decided, _ := e.expireRound(next, items, now, at)
	next.UpdatedAt = now
	next.RetainUntil = e.retainUntil()
	if err := e.commit(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: recs, Decisions: decided}, "expire round of %s", t.ID); err != nil {
		return nil, err
	}
	e.settled(ctx, ag.Name, next, recs)
	return &recs[0], nil
}
