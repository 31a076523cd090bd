package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EditInput replaces a request's user message and re-runs from there.
type EditInput struct {
	Agent, UserID, TaskID, RequestID string
	Items                            []InputItem
	Deadline                         time.Time
	Idem                             *Idempotency
}

// StartEdit supersedes every entry from the edited request's first entry on
// (a range on the task; no entry is rewritten) and claims a new request
// (kind edit) with the new user message (DESIGN §3 Edit).
func (e *Engine) StartEdit(ctx context.Context, in EditInput) (*Run, error) {
	content, err := UserContent(in.Items)
	if err != nil {
		return nil, err
	}
	if in.TaskID, err = ParseID("task_id", in.TaskID); err != nil {
		return nil, err
	}
	if in.RequestID, err = ParseID("request_id", in.RequestID); err != nil {
		return nil, err
	}
	return e.startLoop(ctx, in.UserID, in.Agent, "edit", in.Idem, func(ag *Agent, bound *IdemRecord) (*Run, error) {
		if bound != nil {
			return e.follower(ag, bound.TaskID, bound.RequestID, 0), nil
		}
		return e.tryEdit(ctx, ag, in, content)
	})
}

func (e *Engine) tryEdit(ctx context.Context, ag *Agent, in EditInput, content []Block) (*Run, error) {
	t, items, err := e.LoadOwned(ctx, ag.Name, in.UserID, in.TaskID)
	if err != nil {
		return nil, err
	}
	first := int64(-1)
	for _, it := range items {
		if it.RequestID == in.RequestID {
			first = it.Seq
			break
		}
	}
	if first < 0 {
		return nil, Errorf(CodeRequestNotFound, "no request %s in task %s", in.RequestID, t.ID)
	}
	if by, sup := t.IsSuperseded(first); sup {
		return nil, Errorf(CodeRequestSuperseded, "request %s was superseded by %s; edit that one instead", in.RequestID, by)
	}
	now := e.now()
	next := t.Clone()
	var extra []Item
	var records []RequestRecord
	if t.Active != nil {
		extra, records, err = e.settleActive(ag, next, items, now)
		if err != nil {
			return nil, err
		}
	}
	deadline, lease := e.legDeadline(in.Deadline)
	rid := e.newID()
	// The range covers the entries up to the new user message, including
	// any the settling above adds.
	next.Superseded = append(next.Superseded, SeqRange{From: first, To: next.NextSeq, SupersededBy: rid})
	user := Item{Seq: next.NextSeq, RequestID: rid, Role: RoleUser, CreatedAt: now, Content: content}
	next.Status, next.UpdatedAt = StatusRunning, now
	next.Version, next.WriteID = t.Version+1, e.newID()
	next.NextSeq++
	next.Active = &ActiveRequest{
		ID: rid, Kind: KindEdit, Status: StatusRunning, ClaimToken: e.newID(),
		LeaseUntil: lease, CreatedAt: now, FirstSeq: user.Seq,
	}
	w := &Write{Task: next, PrevVersion: t.Version, Items: append(extra, user), Requests: records,
		Idem: e.newIdem(in.UserID, ag.Name, "edit", in.Idem, t.ID, t.SessionID, rid, 0)}
	if err := e.clearRetention(ctx, t, next); err != nil {
		return nil, err
	}
	if err := e.Store.Write(ctx, w); err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, fmt.Errorf("claim edit of %s: %w", t.ID, err)
	}
	e.logSettled(ctx, t.ID, records)
	return e.newRun(ag, next, append(items, w.Items...), deadline), nil
}
