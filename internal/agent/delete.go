package agent

import (
	"context"
	"errors"
	"fmt"
)

// DeleteTask deletes an idle task and everything under it: a running task
// is 409 task_busy, a paused one 409 task_paused.
func (e *Engine) DeleteTask(ctx context.Context, agentName, userID, taskID string) error {
	var err error
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
				return Errorf(CodeTaskPaused, "task %s is paused awaiting approval; cancel it first", t.ID)
			}
			return Errorf(CodeTaskBusy, "task %s is running request %s; cancel it first", t.ID, a.ID)
		}
		err = e.Store.DeleteTask(ctx, t)
		var ce *ConflictError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ce) && attempt < 3:
			continue
		case errors.Is(err, ErrNotFound):
			// It existed a moment ago: this delete's own retry, or another
			// delete, removed it. Either way it is gone.
			return nil
		}
		return fmt.Errorf("delete task %s: %w", t.ID, err)
	}
}
