package memstore

import (
	"context"

	"github.com/hitch-agents/hitch/internal/agent"
)

// LoadContext implements agent.Store: META and the entries from its
// Context.Seq on.
func (s *Store) LoadContext(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	defer wrap(&err, "LoadContext", func() string { return taskID })
	return s.load(ctx, taskID, func(t *agent.Task) int64 { return max(t.Context.Seq-1, 0) })
}
