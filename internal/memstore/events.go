package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// eventItemBytes bounds a batch's part, as DynamoDB's event items are
// bounded (internal/dynamo: 350 KB less what the keys take).
const eventItemBytes = 349_000

// AppendEvents implements agent.Store. The batch is cut as DynamoDB cuts it,
// into parts of at most 350 KB each kept under its first event's id, so a
// retried batch overwrites the first try and a read pages as on DynamoDB.
func (s *Store) AppendEvents(ctx context.Context, taskID, requestID string, events []eventlog.Event, expires time.Time) (err error) {
	defer wrap(&err, "AppendEvents", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	parts, err := cutEvents(events)
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
	for _, p := range parts {
		log[batchKey{events[0].Epoch, p.first}] = record{p.data, ttlOf(expires)}
	}
	return nil
}

// eventPart is a JSON array of consecutive events of a batch.
type eventPart struct {
	first int64
	data  []byte
}

// cutEvents cuts events, in their order, into JSON arrays of at most
// eventItemBytes (an event over it alone in its own).
func cutEvents(events []eventlog.Event) ([]eventPart, error) {
	var out []eventPart
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", e.ID, err)
		}
		if n := len(out); n == 0 || len(out[n-1].data)+len(b)+2 > eventItemBytes {
			out = append(out, eventPart{first: e.ID, data: []byte{'['}})
		} else {
			out[n-1].data = append(out[n-1].data, ',')
		}
		out[len(out)-1].data = append(out[len(out)-1].data, b...)
	}
	for i := range out {
		out[i].data = append(out[i].data, ']')
	}
	return out, nil
}

// ReadEvents implements agent.Store: the live parts from from on, in key
// order, until the next would pass eventlog.PageBytes.
func (s *Store) ReadEvents(ctx context.Context, taskID, requestID string, from eventlog.Pos, after int64) (_ eventlog.Page, err error) {
	defer wrap(&err, "ReadEvents", func() string { return taskID + "," + requestID })
	page := eventlog.Page{Events: []eventlog.Event{}, Next: from}
	if err := ctx.Err(); err != nil {
		return page, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return page, nil
	}
	log := tr.events[requestID]
	now := s.now()
	start := batchKey{from.Epoch, from.First}
	keys := make([]batchKey, 0, len(log))
	for k, r := range log {
		if live(r.ttl, now) && compareKeys(k, start) >= 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	size := 0
	for i, k := range keys {
		r := log[k]
		if i > 0 && size+len(r.data) > eventlog.PageBytes {
			page.More = true
			page.Next.First++
			break
		}
		size += len(r.data)
		page.Next = eventlog.Pos{Epoch: k.epoch, First: k.first}
		var part []eventlog.Event
		if err := json.Unmarshal(r.data, &part); err != nil {
			return page, fmt.Errorf("corrupt events %d#%d: %w", k.epoch, k.first, err)
		}
		for _, e := range part {
			if e.ID > after {
				e.Epoch = k.epoch
				page.Events = append(page.Events, e)
			}
		}
	}
	return page, nil
}

func compareKeys(a, b batchKey) int {
	return cmp.Or(cmp.Compare(a.epoch, b.epoch), cmp.Compare(a.first, b.first))
}

// ListEvents implements agent.Store.
func (s *Store) ListEvents(ctx context.Context, taskID, requestID string, after int64) (_ []eventlog.Event, err error) {
	defer wrap(&err, "ListEvents", func() string { return taskID + "," + requestID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []eventlog.Event{}
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
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		var batch []eventlog.Event
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
	slices.SortStableFunc(out, func(a, b eventlog.Event) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Epoch, b.Epoch))
	})
	return slices.CompactFunc(out, func(a, b eventlog.Event) bool { return a.ID == b.ID && a.Epoch == b.Epoch }), nil
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
