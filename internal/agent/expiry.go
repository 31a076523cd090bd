// Expiry: a paused round past its approvals' expiry ends Failed
// approval_expired without a model call — found by a resume, a message, the
// reaper or a caller — and a chain ends whole: a leaf's expiry ends its
// callers, a caller's ends every leaf it awaited, local or remote
// (docs/architecture.md, "The rules that keep a chain honest").

package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// expireCaller ends a paused caller Failed approval_expired because a leaf
// of its chain expired (docs/architecture.md, "Orchestration"): its open
// calls get the expiry as their error, nothing runs anywhere. In the same
// transaction every local leaf round it awaits that is still paused in
// that round is expired, and every caller between them ends the same way,
// each META at the version read: a leaf decided at its own URL meanwhile
// makes it a conflict (read again: that leaf goes on, its result reaching
// nobody), never a leaf approvable after the chain answered 410. A failed
// read of a leaf is an error, never a partial expiry. Remote leaves'
// tasks are canceled on their systems once it landed.
func (e *Engine) expireCaller(ctx context.Context, ag *Agent, t *Task, items []Item, rec *RequestRecord) error {
	now := e.now()
	code, msg := CodeApprovalExpired, "approval expired"
	if rec.Error != nil {
		code, msg = rec.Error.Code, rec.Error.Message
	}
	at := roundExpiry(t.Active)
	if at.IsZero() || at.After(now) {
		at = now
	}
	w := e.callerExpiry(t, items, code, msg, now)
	ends := []ended{{agent: ag.Name, w: w, open: e.openCalls(t, items)}}
	below, err := e.chainBelow(ctx, t, now, at)
	if err != nil {
		return err
	}
	ends = append(ends, below...)
	for _, x := range below {
		w.With = append(w.With, x.w)
	}
	ci := cancelInfo{by: "system", reason: "its caller ended (" + code + ")", at: now}
	orphans, flags, err := e.orphansOf(ctx, ends, ci)
	if err != nil {
		return err
	}
	w.With = append(w.With, flags...)
	err = e.write(ctx, w)
	if errors.Is(err, ErrTooLarge) {
		// A chain wider than one transaction: the caller first, then each
		// leaf still paused (its own conflict leaves it be), then each
		// child that moved on flagged (canceled below in any case).
		e.log().Warn("a chain's expiry does not fit one transaction; its requests are expired one by one", "task_id", t.ID, "requests", len(ends))
		w.With = nil
		err = e.write(ctx, w)
		ends = ends[:1]
		if err == nil {
			for _, x := range below {
				if e.write(ctx, x.w) == nil {
					ends = append(ends, x)
				}
			}
			for _, f := range flags {
				_ = e.write(ctx, f)
			}
		}
	}
	if err != nil {
		return err
	}
	for _, x := range ends {
		e.settled(ctx, x.agent, x.w.Task, x.w.Requests)
	}
	e.cancelRemoteLeaves(ctx, t.Agent, t.Active)
	if len(orphans) > 0 {
		e.cancelCalls(ctx, t.Agent, orphans, ci, time.Now().Add(CancelWait))
	}
	return nil
}

// ended is a request a chain's expiry ends: its agent and its write, and,
// for a caller, the sub-agent calls its end closes.
type ended struct {
	agent string
	w     *Write
	open  []ChildCall
}

// orphansOf finds the local child requests whose calls the expiry's
// callers close and that the expiry does not end itself: a leaf decided
// at its own URL meanwhile, running the round its caller shows or paused
// in a later one its caller has not heard of, or a caller between them
// that moved on. A sub-agent call closed without its child's result
// cancels the child (docs/architecture.md, "Orchestration"): each is
// flagged in the expiry's own transaction — no claim of it runs anything
// more, its running leg ends Canceled, the reaper finalises it if nobody
// else does — and canceled once the expiry landed, never left waiting
// below an ended root. Such a child ran, so its call is closed with what
// is known of it, never the expiry's did-not-run text: outcome_unknown
// while it has not ended, its own result once it has (as a cancel closes
// it, closeChildCalls). A failed read is an error, never a partial expiry.
func (e *Engine) orphansOf(ctx context.Context, ends []ended, ci cancelInfo) ([]ChildCall, []*Write, error) {
	expiring := map[string]bool{}
	for _, x := range ends {
		expiring[x.w.Task.ID] = true
	}
	flagged := map[string]bool{}
	var orphans []ChildCall
	var flags []*Write
	for _, x := range ends {
		known := map[string]Block{}
		for _, cc := range x.open {
			if cc.Remote != "" {
				// A remote leaf's call gets outcome_unknown, never the
				// expiry's text: its task there is canceled once the expiry
				// landed (cancelRemoteLeaves), or went on — decided there
				// meanwhile, or out of reach — so it does not end by this
				// expiry, and it may have run tools before it paused.
				known[cc.ToolCallID] = ErrorResult(cc.ToolCallID, childUnknownMessage(cc.Agent))
				continue
			}
			if cc.RequestID == "" || expiring[cc.TaskID] {
				continue
			}
			if _, ok := e.Agents.Get(cc.Agent); !ok {
				continue
			}
			ct, err := e.Store.GetTask(ctx, cc.TaskID)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("read %s below the expired chain of %s: %w", cc.TaskID, x.w.Task.ID, err)
			}
			ca := ct.Active
			if ca == nil || ca.ID != cc.RequestID {
				// It ended: its result closes the call, reaching no model.
				if res, ran := e.childCallResult(ctx, x.w.Requests[0].RequestID, x.w.Task.Joins, cc); ran {
					known[cc.ToolCallID] = res
				}
				continue
			}
			known[cc.ToolCallID] = ErrorResult(cc.ToolCallID, childUnknownMessage(cc.Agent))
			if flagged[cc.TaskID] {
				continue
			}
			flagged[cc.TaskID] = true
			orphans = append(orphans, cc)
			if ca.CancelRequested {
				continue
			}
			flags = append(flags, e.flagged(ct, ci))
		}
		e.closeKnown(x, known)
	}
	return orphans, flags, nil
}

// closeKnown puts in x's write the results known of its open calls (by
// call id), in place of the expiry's text.
func (e *Engine) closeKnown(x ended, known map[string]Block) {
	if len(known) == 0 {
		return
	}
	ag, ok := e.Agents.Get(x.agent)
	if !ok {
		ag = &Agent{Name: x.agent}
	}
	for i := range x.w.Items {
		it := &x.w.Items[i]
		if it.Role != RoleTool {
			continue
		}
		for j, b := range it.Content {
			if res, ok := known[b.ToolUseID]; ok {
				it.Content[j] = truncateResult(ag, res)
			}
		}
	}
}

// callerExpiry is the write that ends a paused caller Failed with the
// expiry of its chain: its open calls closed with msg.
func (e *Engine) callerExpiry(t *Task, items []Item, code, msg string, now time.Time) *Write {
	next := e.nextOf(t)
	a := next.Active
	var extra []Item
	if closing := danglingResults(items, a.ID, msg); len(closing) > 0 {
		extra = append(extra, Item{Seq: next.NextSeq, RequestID: a.ID, Role: RoleTool, CreatedAt: now, Content: closing})
		next.NextSeq++
	}
	r := endOf(a, StatusFailed, &ErrorInfo{Code: code, Message: msg}, now)
	next.Active, next.Status = nil, StatusFailed
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = now
	return &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{r}}
}

// chainBelow reads what a caller's expiry ends with it: every local leaf
// round it awaits still paused in that round, expired as of at, and every
// caller between it and those leaves still paused (its ancestors below
// t), ended the same way. A leaf or caller that moved on is left out; a
// failed read is an error.
func (e *Engine) chainBelow(ctx context.Context, t *Task, now, at time.Time) ([]ended, error) {
	a := t.Active
	var out []ended
	seen := map[string]bool{t.ID: true}
	var load chainLoad = func(agentName, taskID string) (*Agent, *Task, []Item, error) {
		sub, ok := e.Agents.Get(agentName)
		if !ok || seen[taskID] {
			return nil, nil, nil, nil
		}
		seen[taskID] = true
		lt, litems, err := e.loadFor(ctx, sub, taskID)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, nil, nil
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read %s of the expired chain of %s: %w", taskID, t.ID, err)
		}
		return sub, lt, litems, nil
	}
	for _, w := range a.Awaits {
		if remoteVia(a, w) != nil {
			continue
		}
		sub, lt, litems, err := load(w.Agent, w.TaskID)
		if err != nil {
			return nil, err
		}
		if lt == nil {
			continue
		}
		la := lt.Active
		if la == nil || la.ID != w.RequestID || la.Status != StatusPaused || la.Round != w.Round || len(la.Awaits) > 0 || la.CancelRequested {
			continue
		}
		next := e.nextOf(lt)
		extra, recs, decided, _ := e.expireRound(next, litems, now, at)
		next.UpdatedAt = now
		next.RetainUntil = e.retainUntil()
		out = append(out, ended{agent: sub.Name, w: &Write{Task: next, PrevVersion: lt.Version, Items: extra, Requests: recs, Decisions: decided}})
		// The callers between t and this leaf end with it.
		between, err := e.callersBetween(ctx, t, la, load, now, at)
		if err != nil {
			return nil, err
		}
		out = append(out, between...)
	}
	return out, nil
}

// chainLoad reads a task of an expiring chain with its history and agent
// (nil when gone, undeployed or read already).
type chainLoad func(agentName, taskID string) (*Agent, *Task, []Item, error)

// callersBetween are the callers between t and its expiring leaf request
// la still paused on their leaves, each ended with la's expiry.
func (e *Engine) callersBetween(ctx context.Context, t *Task, la *ActiveRequest, load chainLoad, now, at time.Time) ([]ended, error) {
	var out []ended
	below := false
	for _, anc := range la.Ancestors {
		if anc.TaskID == t.ID {
			below = true
			continue
		}
		if !below {
			continue
		}
		ct, err := e.Store.GetTask(ctx, anc.TaskID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s of the expired chain of %s: %w", anc.TaskID, t.ID, err)
		}
		csub, ct, citems, err := load(ct.Agent, anc.TaskID)
		if err != nil {
			return nil, err
		}
		if ct == nil {
			continue
		}
		ca := ct.Active
		if ca == nil || ca.ID != anc.RequestID || ca.Status != StatusPaused || len(ca.Awaits) == 0 || ca.CancelRequested {
			continue
		}
		code, msg := expiryOf(la, at)
		out = append(out, ended{agent: csub.Name, w: e.callerExpiry(ct, citems, code, msg, now), open: e.openCalls(ct, citems)})
	}
	return out, nil
}

// cancelRemoteLeaves cancels, on their systems, the remote leaves an
// expired caller awaited: a remote task still paused in its round would
// wait for ever below an ended chain.
func (e *Engine) cancelRemoteLeaves(ctx context.Context, callerAgent string, a *ActiveRequest) {
	for _, w := range a.Awaits {
		cc := remoteVia(a, w)
		if cc == nil {
			continue
		}
		if ra := e.remoteOf(callerAgent, *cc); ra != nil && cc.RequestID != "" {
			if err := ra.Cancel(ctx, cc.TaskID, cc.RequestID); err != nil {
				e.log().Warn("canceling a remote leaf of an expired chain failed; it expires on its own system", "agent", cc.Agent, "remote_task_id", cc.RequestID, "err", err)
			}
		}
	}
}

// RemotePartMargin is how close to its expiry a remote leaf's round may be
// and still be decided at a caller that decides a local leaf with it. The
// remote's part goes out only once the local claims landed (a decision at
// a caller is all or nothing), so a round that closes sooner would be
// closed by its expiry there after the local part ran, and the chain
// would record a decision the remote never took: it is taken as expired
// at the caller instead (docs/architecture.md, "The rules that keep a
// chain honest").
const RemotePartMargin = 2 * time.Second

// remotePartTooLate tells whether a decision at the caller a would send a
// remote leaf's part after local claims too close to that remote round's
// expiry (RemotePartMargin): a's round awaits a local leaf and a remote
// one whose pending calls (a's copies) expire within the margin.
func remotePartTooLate(a *ActiveRequest, now time.Time) bool {
	local, closing := false, false
	for _, w := range a.Awaits {
		if remoteVia(a, w) == nil {
			local = true
			continue
		}
		for _, p := range a.Pending {
			if slices.Contains(w.ToolCallIDs, p.ToolCallID) && !p.ExpiresAt.IsZero() && p.ExpiresAt.Sub(now) < RemotePartMargin {
				closing = true
			}
		}
	}
	return local && closing
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

// expireRound applies a paused round's expiry (docs/api.md, Resume); at is
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
		// A call's partial approvals stay beside the expiry that closed it.
		d.Calls = append(d.Calls, CallDecision{ToolCallID: p.ToolCallID, Action: "reject", Reason: msg, Clauses: p.Clauses, Approvals: p.Approvals})
	}
	a.Decisions = append(a.Decisions, d)
	rec := endOf(a, StatusFailed, &ErrorInfo{Code: code, Message: msg}, now)
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
