package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// ListDue implements agent.Store: the reaper's index, kept beside each META
// (taskRec.due) as DynamoDB keeps GSI4; an expired META is absent.
func (s *Store) ListDue(ctx context.Context, claimedBefore, now time.Time, limit int) (_ []agent.DueTask, err error) {
	defer wrap(&err, "ListDue", func() string { return "" })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var running, paused []agent.DueTask
	for _, tr := range s.tasks {
		d := tr.due
		if d == nil || tr.meta == nil || !live(tr.meta.ttl, s.now()) {
			continue
		}
		switch {
		case d.Running && !d.At.After(claimedBefore):
			running = append(running, *d)
		case !d.Running && !d.At.After(now):
			paused = append(paused, *d)
		}
	}
	byAt := func(a, b agent.DueTask) int { return a.At.Compare(b.At) }
	slices.SortFunc(running, byAt)
	slices.SortFunc(paused, byAt)
	if limit > 0 {
		running = running[:min(limit, len(running))]
		paused = paused[:min(limit, len(paused))]
	}
	return append(running, paused...), nil
}
