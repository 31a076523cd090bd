package agent

import (
	"context"
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
// (kind edit) with the new user message (docs/api.md Edit).
func (e *Engine) StartEdit(ctx context.Context, in EditInput) (_ Leg, err error) {
	defer wrap(&err, "edit request %s of task %s", in.RequestID, in.TaskID)
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
	return e.startLoop(ctx, in.UserID, in.Agent, "edit", in.Idem, func(ag *Agent, bound *IdemRecord) (Leg, error) {
		if bound != nil {
			return e.boundFollower(ctx, ag, bound, in.Deadline)
		}
		return legOf(e.tryEdit(ctx, ag, in, content))
	})
}

func (e *Engine) tryEdit(ctx context.Context, ag *Agent, in EditInput, content []Block) (*Run, error) {
	t, items, err := e.LoadOwned(ctx, ag.Name, in.UserID, in.TaskID)
	if t == nil {
		return nil, err
	}
	denied := err // another agent's or user's task: after the request's 404
	first := int64(-1)
	for _, it := range items {
		if it.RequestID == in.RequestID {
			first = it.Seq
			break
		}
	}
	var rollback func(next *Task)
	if first < 0 || t.Context.Summary >= first {
		// The request was compacted out of the read, or the edit
		// supersedes a summary: the request records tell where it starts
		// and which compactions to undo.
		if first, items, rollback, err = e.editCompacted(ctx, t, items, in.RequestID, first); err != nil {
			return nil, err
		}
	}
	if first < 0 {
		return nil, Errorf(CodeRequestNotFound, "no request %s in task %s", in.RequestID, t.ID)
	}
	if denied != nil {
		return nil, denied
	}
	if by, sup := t.IsSuperseded(first); sup {
		return nil, Errorf(CodeRequestSuperseded, "request %s was superseded by %s; edit that one instead", in.RequestID, by)
	}
	return e.claimNew(ctx, ag, t, items, newRequest{kind: KindEdit, route: "edit", user: in.UserID, content: content,
		deadline: in.Deadline, idem: in.Idem}, func(next *Task, rid string) {
		// The range covers the entries up to the new user message, including
		// any that settling the active request adds.
		next.Superseded = append(next.Superseded, SeqRange{From: first, To: next.NextSeq, SupersededBy: rid})
		dropTrust(next, first)
		if rollback != nil {
			rollback(next)
		}
	})
}

// editCompacted finds where a request compacted out of the read starts, and
// undoes the compactions an edit from there supersedes: the context starts
// again where the earliest of them found it, and the entries from there on
// are read (two calls more, only for an edit behind a summary).
func (e *Engine) editCompacted(ctx context.Context, t *Task, items []Item, rid string, first int64) (int64, []Item, func(*Task), error) {
	recs, err := e.Store.ListRequests(ctx, t.ID)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("list requests of %s: %w", t.ID, err)
	}
	var compactions []Compaction
	for _, r := range recs {
		if first < 0 && r.RequestID == rid {
			first = r.FirstSeq
		}
		compactions = append(compactions, r.Compactions...)
	}
	if t.Active != nil {
		compactions = append(compactions, t.Active.Compactions...)
	}
	if first < 0 {
		return first, items, nil, nil
	}
	probe := t.Clone()
	if !rollbackContext(probe, compactions, first) {
		return first, items, nil, nil
	}
	start := probe.Context
	if len(items) == 0 || start.Seq < items[0].Seq {
		if items, err = e.Store.ListItems(ctx, t, max(start.Seq-1, 0), 0); err != nil {
			return 0, nil, nil, fmt.Errorf("list items of %s: %w", t.ID, err)
		}
	}
	return first, items, func(next *Task) { next.Context = start }, nil
}
