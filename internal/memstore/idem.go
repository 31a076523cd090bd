package memstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-agents/hitch/internal/agent"
)

// GetIdem implements agent.Store.
func (s *Store) GetIdem(ctx context.Context, key string) (_ *agent.IdemRecord, err error) {
	defer wrap(&err, "GetIdem", func() string { return key })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.idem[key]
	if !ok || !live(r.ttl, s.now()) {
		return nil, agent.ErrNotFound
	}
	var rec agent.IdemRecord
	if err := json.Unmarshal(r.data, &rec); err != nil {
		return nil, fmt.Errorf("corrupt idempotency record: %w", err)
	}
	return &rec, nil
}

// FindRequest implements agent.Store.
func (s *Store) FindRequest(ctx context.Context, requestID string) (_ *agent.RequestLookup, err error) {
	defer wrap(&err, "FindRequest", func() string { return requestID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.lookups[requestID]
	if !ok || !live(r.ttl, s.now()) {
		return nil, agent.ErrNotFound
	}
	var l agent.RequestLookup
	if err := json.Unmarshal(r.data, &l); err != nil {
		return nil, fmt.Errorf("corrupt request lookup: %w", err)
	}
	return &l, nil
}
