package memstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// RenewLease implements agent.Store.
func (s *Store) RenewLease(ctx context.Context, taskID, claimToken string, until, now time.Time) (_ *agent.Task, err error) {
	defer wrap(&err, "RenewLease", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	cur, err := tr.current(s.now())
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, agent.ErrNotFound
	}
	a := cur.Active
	if a == nil || claimToken == "" || a.ClaimToken != claimToken || !now.Before(a.LeaseUntil) {
		return nil, &agent.ConflictError{Current: cur}
	}
	a.LeaseUntil = until
	cur.Version++
	b, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	tr.meta = &record{b, tr.meta.ttl}
	return cur, nil
}
