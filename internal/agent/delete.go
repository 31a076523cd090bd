package agent

import (
	"context"
	"errors"
	"fmt"
)

// DeleteTask deletes an idle task and everything under it: a running task
// is 409 task_busy, a paused one 409 task_paused.
func (e *Engine) DeleteTask(ctx context.Context, agentName, userID, taskID string) (err error) {
	defer wrap(&err, "delete task %s", taskID)
	if taskID, err = ParseID("task_id", taskID); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		t, err := e.ownedMeta(ctx, agentName, userID, taskID)
		if err != nil {
			return err
		}
		if a := t.Active; a != nil {
			if a.Status == StatusPaused {
				return Errorf(CodeTaskPaused, "task %s is paused awaiting %s; cancel it first", t.ID, awaiting(a))
			}
			return Errorf(CodeTaskBusy, "task %s is running request %s; cancel it first", t.ID, a.ID)
		}
		if err := e.callerWaits(ctx, t); err != nil {
			return err
		}
		err = e.Store.DeleteTask(ctx, t)
		var ce *ConflictError
		switch {
		case err == nil:
			e.deleteArtifactBytes(ctx, t)
			e.deleteChildren(ctx, t)
			return nil
		case errors.As(err, &ce) && attempt < 3:
			continue
		case errors.Is(err, ErrNotFound):
			// It existed a moment ago: this delete's own retry, or another
			// delete, removed it. Either way it is gone, and so are its
			// bytes (again: a retry after a crash between the two).
			e.deleteArtifactBytes(ctx, &Task{ID: t.ID}) // given back by the delete that removed it
			return nil
		}
		return fmt.Errorf("delete task %s: %w", t.ID, err)
	}
}

// callerWaits refuses to delete a child task whose caller still has the
// call open (docs/architecture.md): 409 task_busy.
func (e *Engine) callerWaits(ctx context.Context, t *Task) error {
	if t.ParentTaskID == "" {
		return nil
	}
	pt, err := e.Store.GetTask(ctx, t.ParentTaskID)
	if err != nil || pt.Active == nil {
		return nil // the caller is gone, or idle
	}
	for _, cc := range pt.Active.Calls {
		if cc.TaskID == t.ID {
			return Errorf(CodeTaskBusy, "task %s is a sub-agent task that %s's request %s still waits on; cancel that first", t.ID, pt.Agent, pt.Active.ID)
		}
	}
	return nil
}

// deleteChildren deletes the child tasks of a deleted task, and theirs
// (docs/architecture.md): the session's tasks of each sub-agent it called whose
// parent it is. A child still busy (it cannot be, its caller being idle,
// unless a cancel is under way) is kept, and logged.
func (e *Engine) deleteChildren(ctx context.Context, t *Task) {
	for sub := range t.Children {
		cursor := ""
		for {
			list, next, err := e.Store.ListSessionTasks(ctx, ListQuery{UserID: t.UserID, Agent: sub, SessionID: t.SessionID, Limit: 100, Cursor: cursor})
			if err != nil {
				e.log().Warn("listing a deleted task's sub-agent tasks failed", "task_id", t.ID, "agent", sub, "err", err)
				break
			}
			for _, s := range list {
				if s.ParentTaskID != t.ID {
					continue
				}
				ct, err := e.Store.GetTask(ctx, s.TaskID)
				if err != nil {
					continue // gone
				}
				if ct.Active != nil {
					e.log().Warn("a deleted task's sub-agent task is busy; it is kept", "task_id", t.ID, "child_task_id", ct.ID)
					continue
				}
				if err := e.Store.DeleteTask(ctx, ct); err != nil && !errors.Is(err, ErrNotFound) {
					e.log().Warn("deleting a sub-agent task failed", "task_id", t.ID, "child_task_id", ct.ID, "err", err)
					continue
				}
				e.deleteArtifactBytes(ctx, ct)
				e.deleteChildren(ctx, ct)
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
}
