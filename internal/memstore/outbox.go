package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// tokenSK is a waiter's token item's key.
func tokenSK(rid, hash string) string { return "TOK#" + rid + "#" + hash }

// Feed is the memory store's outbox queue (docs/architecture.md: under `hitch serve`
// on memory, the dispatcher reads a queue): every outbox item a write puts
// is sent on it once the write has landed. When the queue is full the item
// waits for the sweep (ListOutbox), like a lost stream record.
func (s *Store) Feed() <-chan agent.OutboxItem { return s.feed }

func (s *Store) publish(items []agent.OutboxItem) {
	for _, it := range items {
		select {
		case s.feed <- it:
		default:
		}
	}
}

// GetOutbox implements agent.Store.
func (s *Store) GetOutbox(ctx context.Context, taskID, sk string) (_ *agent.OutboxItem, err error) {
	defer wrap(&err, "GetOutbox", func() string { return taskID + "," + sk })
	var o agent.OutboxItem
	if err := s.getKeyed(ctx, taskID, sk, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// DeleteOutbox implements agent.Store.
func (s *Store) DeleteOutbox(ctx context.Context, taskID, sk string) (err error) {
	defer wrap(&err, "DeleteOutbox", func() string { return taskID + "," + sk })
	return s.deleteKeyed(ctx, taskID, sk)
}

// ListOutbox implements agent.Store.
func (s *Store) ListOutbox(ctx context.Context, before time.Time, limit int) (_ []agent.OutboxItem, err error) {
	defer wrap(&err, "ListOutbox", func() string { return "" })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []agent.OutboxItem
	for _, tr := range s.tasks {
		for sk, r := range tr.keyed {
			if !strings.HasPrefix(sk, "OUT#") || !live(r.ttl, now) {
				continue
			}
			var o agent.OutboxItem
			if err := json.Unmarshal(r.data, &o); err != nil {
				return nil, fmt.Errorf("corrupt outbox item %s: %w", sk, err)
			}
			if o.CreatedAt.Before(before) {
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(a, b agent.OutboxItem) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.SK(), b.SK()))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ListRequestOutbox implements agent.Store.
func (s *Store) ListRequestOutbox(ctx context.Context, taskID, requestID string) (_ []agent.OutboxItem, err error) {
	defer wrap(&err, "ListRequestOutbox", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil, nil
	}
	now := s.now()
	var out []agent.OutboxItem
	for sk, r := range tr.keyed {
		if !strings.HasPrefix(sk, "OUT#"+requestID+"#") || !live(r.ttl, now) {
			continue
		}
		var o agent.OutboxItem
		if err := json.Unmarshal(r.data, &o); err != nil {
			return nil, fmt.Errorf("corrupt outbox item %s: %w", sk, err)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, agent.CompareOutbox)
	return out, nil
}

// GetToken implements agent.Store.
func (s *Store) GetToken(ctx context.Context, taskID, requestID, hash string) (_ *agent.TokenItem, err error) {
	defer wrap(&err, "GetToken", func() string { return taskID + "," + requestID })
	var tok agent.TokenItem
	if err := s.getKeyed(ctx, taskID, tokenSK(requestID, hash), &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// DeleteToken implements agent.Store.
func (s *Store) DeleteToken(ctx context.Context, taskID, requestID, hash string) (err error) {
	defer wrap(&err, "DeleteToken", func() string { return taskID + "," + requestID })
	return s.deleteKeyed(ctx, taskID, tokenSK(requestID, hash))
}

func (s *Store) getKeyed(ctx context.Context, taskID, sk string, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return agent.ErrNotFound
	}
	r, ok := tr.keyed[sk]
	if !ok || !live(r.ttl, s.now()) {
		return agent.ErrNotFound
	}
	return json.Unmarshal(r.data, v)
}

func (s *Store) deleteKeyed(ctx context.Context, taskID, sk string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr := s.tasks[taskID]; tr != nil {
		delete(tr.keyed, sk)
	}
	return nil
}
