package memstore

import (
	"context"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// DeleteTask implements agent.Store, at once (DynamoDB deletes the META
// first, then the rest). A task already gone returns ErrNotFound, after
// removing whatever was left of it, like DynamoDB's sweep.
func (s *Store) DeleteTask(ctx context.Context, t *agent.Task) (err error) {
	defer wrap(&err, "DeleteTask", func() string { return t.ID })
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[t.ID]
	cur, err := tr.current(s.now())
	if err != nil {
		return err
	}
	if cur != nil && cur.Version != t.Version {
		return &agent.ConflictError{Current: cur}
	}
	if tr != nil {
		// landed stays: a retry of a write that had landed still answers
		// success, as DynamoDB's ClientRequestToken does.
		// The outbox items and the waiters' tokens stay: what a committed
		// pause or end owes still goes out, and the dispatcher deletes
		// them (docs/api.md, Delete a task). So do the records of the
		// requests they are owed for, which their payload is, for as long
		// as an outbox item is kept.
		owed := map[string]record{}
		reqs := map[string]record{}
		keep := s.now().Add(agent.OutboxTTL).Unix()
		for sk, r := range tr.keyed {
			if strings.HasPrefix(sk, "OUT#") || strings.HasPrefix(sk, "TOK#") {
				owed[sk] = r
				rid, _, _ := strings.Cut(sk[len("OUT#"):], "#")
				if rec, ok := tr.reqs[rid]; ok && strings.HasPrefix(sk, "OUT#") {
					reqs[rid] = record{rec.data, keep}
				}
			}
		}
		tr.meta = nil
		tr.due = nil
		tr.items = map[int64]record{}
		tr.reqs = reqs
		tr.events = map[string]map[batchKey]record{}
		tr.keyed = owed
	}
	if ss := s.sessions[t.SessionID]; ss != nil {
		delete(ss.index, t.ID)
	}
	if cur == nil {
		return agent.ErrNotFound
	}
	return nil
}

// ExpireTask implements agent.Store: the ttl on the META (if it is still at
// t.Version), on every live entry and request, on the event batches whose
// own ttl comes later, and on the session index entry.
func (s *Store) ExpireTask(ctx context.Context, t *agent.Task, until time.Time) (err error) {
	defer wrap(&err, "ExpireTask", func() string { return t.ID })
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	tr := s.tasks[t.ID]
	cur, err := tr.current(now)
	if err != nil {
		return err
	}
	if cur == nil {
		return agent.ErrNotFound
	}
	if cur.Version != t.Version {
		return &agent.ConflictError{Current: cur}
	}
	ttl := int64(0) // zero: remove the ttl
	if !until.IsZero() {
		ttl = ttlOf(until)
	}
	tr.meta.ttl = ttl
	for seq, r := range tr.items {
		if live(r.ttl, now) {
			tr.items[seq] = record{r.data, ttl}
		}
	}
	for id, r := range tr.reqs {
		if live(r.ttl, now) {
			tr.reqs[id] = record{r.data, ttl}
		}
	}
	for sk, r := range tr.keyed {
		if live(r.ttl, now) {
			tr.keyed[sk] = record{r.data, ttl}
		}
	}
	for _, log := range tr.events {
		for first, r := range log {
			if ttl != 0 && (r.ttl == 0 || (live(r.ttl, now) && r.ttl > ttl)) {
				log[first] = record{r.data, ttl}
			}
		}
	}
	if ss := s.sessions[t.SessionID]; ss != nil {
		if e, ok := ss.index[t.ID]; ok && live(e.ttl, now) {
			e.ttl = ttl
			ss.index[t.ID] = e
		}
	}
	return nil
}
