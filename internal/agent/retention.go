package agent

import (
	"context"
	"fmt"
	"time"
)

// clearRetention: a finished task whose items carry a ttl (retention) is
// about to take a new request, so its items must not expire under it. It
// removes the ttl (one more pass over the task's items; only with retention
// configured) and clears next's RetainUntil.
func (e *Engine) clearRetention(ctx context.Context, t, next *Task) error {
	if t.RetainUntil == 0 {
		return nil
	}
	if err := e.Store.ExpireTask(ctx, t, time.Time{}); err != nil {
		return fmt.Errorf("clear the retention of %s: %w", t.ID, err)
	}
	next.RetainUntil = 0
	return nil
}

// retainFinished gives every item of a task that just finished its ttl
// (t.RetainUntil, set by retainUntil), best effort: on failure the task is kept.
func (e *Engine) retainFinished(ctx context.Context, t *Task) {
	if t == nil || t.Active != nil || t.RetainUntil == 0 {
		return
	}
	until := time.Unix(t.RetainUntil, 0)
	if err := e.Store.ExpireTask(ctx, t, until); err != nil {
		e.log().Warn("setting the retention failed; the task is kept", "task_id", t.ID, "err", err)
		return
	}
	// A new request may have claimed the task while the items were being
	// marked, and cleared their ttl before some of ours landed: clear again
	// (erring toward keeping the history).
	if cur, err := e.Store.GetTask(ctx, t.ID); err == nil && cur.Version != t.Version {
		if err := e.Store.ExpireTask(ctx, cur, time.Time{}); err != nil {
			e.log().Warn("clearing a raced retention failed", "task_id", t.ID, "err", err)
		}
	}
}

// retainUntil is when a task finishing now expires (epoch seconds), or 0
// without retention. A ttl: on the wall clock, as the stores judge it.
func (e *Engine) retainUntil() int64 {
	if e.RetentionDays <= 0 {
		return 0
	}
	return time.Now().AddDate(0, 0, e.RetentionDays).Unix()
}
