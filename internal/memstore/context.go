package memstore

import (
	"context"

	"github.com/hitch-agents/hitch/internal/agent"
)

// LoadContext implements agent.Store: META and the entries from its
// Context.Seq on.
func (s *Store) LoadContext(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	defer wrap(&err, "LoadContext", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	tr := s.tasks[taskID]
	t, err := tr.current(now)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, agent.ErrNotFound
	}
	items, err := tr.list(now, max(t.Context.Seq-1, 0), t.NextSeq, 0)
	if err != nil {
		return nil, nil, err
	}
	return t, items, nil
}
