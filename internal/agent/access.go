package agent

import (
	"context"
	"fmt"
)

// The checks of a call that names a task run in the order of docs/api.md
// "Errors": the body and the path (400) and the agent (404) first, then
//
//	the task exists               404 task_not_found
//	the request exists (if named) 404 request_not_found
//	the task is this agent's      404 task_not_found
//	the caller owns it            401 not_owner
//
// and only then the state (409 / 410). So a call with two faults always
// answers the first: another user naming an unknown request of someone's
// task is told request_not_found, never not_owner. LoadOwned therefore
// returns the task along with its 404 (another agent's) or 401, and the
// calls that name a request (resume, edit, events) check it in between.

// getTask reads a task's META: 404 task_not_found.
func (e *Engine) getTask(ctx context.Context, taskID string) (*Task, error) {
	t, err := e.Store.GetTask(ctx, taskID)
	if isNotFound(err) {
		return nil, Errorf(CodeTaskNotFound, "no task %s", taskID)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", taskID, err)
	}
	return t, nil
}

// requestFound is the request check of a call naming one: 404
// request_not_found unless found.
func requestFound(t *Task, requestID string, found bool) error {
	if !found {
		return Errorf(CodeRequestNotFound, "no request %s in task %s", requestID, t.ID)
	}
	return nil
}

// owned checks that the task is the agent's (404 task_not_found) and the
// user's (401 not_owner).
func owned(t *Task, agentName, userID string) error {
	if t.Agent != agentName {
		return Errorf(CodeTaskNotFound, "no task %s for agent %q", t.ID, agentName)
	}
	if t.UserID != userID {
		return Errorf(CodeNotOwner, "task %s belongs to another user", t.ID)
	}
	return nil
}
