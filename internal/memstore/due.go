package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// ListDue implements agent.Store: the reaper's index, kept beside each META
// (taskRec.due) as DynamoDB keeps GSI4, read in GSI4's order (partition,
// then key) from the position given; an expired META is absent.
func (s *Store) ListDue(ctx context.Context, claimedBefore, now time.Time, from string, limit int) (_ []agent.DueTask, err error) {
	defer wrap(&err, "ListDue", func() string { return from })
	part, key, err := agent.ParseDuePos(from)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type entry struct {
		part int
		key  string
		d    agent.DueTask
	}
	s.mu.Lock()
	var all []entry
	for _, tr := range s.tasks {
		d := tr.due
		if d == nil || tr.meta == nil || !live(tr.meta.ttl, s.now()) {
			continue
		}
		if (d.Running && d.At.After(claimedBefore)) || (!d.Running && d.At.After(now)) {
			continue
		}
		e := entry{part: agent.DuePartition(d.Running, agent.ReaperShard(d.TaskID)), key: agent.DueKey(d.At, d.TaskID), d: *d}
		if e.part < part || (e.part == part && e.key <= key && from != "") {
			continue
		}
		e.d.Pos = agent.DuePos(e.part, e.key)
		all = append(all, e)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b entry) int { return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.key, b.key)) })
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	out := make([]agent.DueTask, len(all))
	for i, e := range all {
		out[i] = e.d
	}
	return out, nil
}

// ReapStates implements agent.Store.
func (s *Store) ReapStates(ctx context.Context, taskIDs []string) (_ map[string]agent.ReapState, err error) {
	defer wrap(&err, "ReapStates", func() string { return "" })
	out := map[string]agent.ReapState{}
	for _, id := range taskIDs {
		t, err := s.GetTask(ctx, id)
		if errors.Is(err, agent.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = agent.ReapStateOf(t)
	}
	return out, nil
}
