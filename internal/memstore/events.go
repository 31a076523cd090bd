package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// AppendEvents implements agent.Store. The batch is kept whole under its
// first event's id (DynamoDB cuts it into items of 350 KB, each under its own
// first id; what ListEvents returns is the same), so a retried batch
// overwrites the first try.
func (s *Store) AppendEvents(ctx context.Context, taskID, requestID string, events []agent.StoredEvent, expires time.Time) (err error) {
	defer wrap(&err, "AppendEvents", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	b, err := json.Marshal(events)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		tr = newTaskRec()
		s.tasks[taskID] = tr
	}
	log := tr.events[requestID]
	if log == nil {
		log = map[batchKey]record{}
		tr.events[requestID] = log
	}
	log[batchKey{events[0].Epoch, events[0].ID}] = record{b, ttlOf(expires)}
	return nil
}

// ListEvents implements agent.Store.
func (s *Store) ListEvents(ctx context.Context, taskID, requestID string, after int64) (_ []agent.StoredEvent, err error) {
	defer wrap(&err, "ListEvents", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []agent.StoredEvent{}
	tr := s.tasks[taskID]
	if tr == nil {
		return out, nil
	}
	log := tr.events[requestID]
	now := s.now()
	keys := make([]batchKey, 0, len(log))
	for k, r := range log {
		if live(r.ttl, now) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b batchKey) int { return cmp.Or(cmp.Compare(a.epoch, b.epoch), cmp.Compare(a.first, b.first)) })
	for _, k := range keys {
		var batch []agent.StoredEvent
		if err := json.Unmarshal(log[k].data, &batch); err != nil {
			return nil, fmt.Errorf("corrupt events %d#%d: %w", k.epoch, k.first, err)
		}
		for _, e := range batch {
			if e.ID > after {
				e.Epoch = k.epoch
				out = append(out, e)
			}
		}
	}
	// By id then epoch, the first of each kept: the batch with the lowest
	// first id wins, as in DynamoDB.
	slices.SortStableFunc(out, func(a, b agent.StoredEvent) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Epoch, b.Epoch))
	})
	return slices.CompactFunc(out, func(a, b agent.StoredEvent) bool { return a.ID == b.ID && a.Epoch == b.Epoch }), nil
}

// ExtendEvents implements agent.Store.
func (s *Store) ExtendEvents(ctx context.Context, taskID, requestID string, expires time.Time) (err error) {
	defer wrap(&err, "ExtendEvents", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil
	}
	now, ttl := s.now(), ttlOf(expires)
	for k, r := range tr.events[requestID] {
		if live(r.ttl, now) && r.ttl != 0 && r.ttl < ttl {
			tr.events[requestID][k] = record{r.data, ttl}
		}
	}
	return nil
}
