package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// StoredEvent is an event as the event log keeps it.
type StoredEvent struct {
	ID   int64           `json:"id"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
	// Epoch is the claim epoch of the leg that logged it (the batch's key
	// holds it, docs/architecture.md).
	Epoch int `json:"-"`
}

// EventCut ends a taken-over leg's events: readers drop those of its epoch
// with an id past Last (its last commit's), which a stalled holder may
// still flush late (docs/architecture.md, Dead legs).
type EventCut struct {
	Epoch int   `json:"epoch"`
	Last  int64 `json:"last"`
}

// Visible drops the events that cuts hide and keeps one event of each id,
// in id order (events come from ListEvents, by id then epoch).
func Visible(events []StoredEvent, cuts []EventCut) []StoredEvent {
	out := events[:0:0]
	for _, ev := range events {
		if cutOff(ev, cuts) || (len(out) > 0 && out[len(out)-1].ID == ev.ID) {
			continue
		}
		out = append(out, ev)
	}
	return out
}

func cutOff(ev StoredEvent, cuts []EventCut) bool {
	for _, c := range cuts {
		if c.Epoch == ev.Epoch && ev.ID > c.Last {
			return true
		}
	}
	return false
}

// EventPos is a place in a request's event log, in log order: a batch's
// claim epoch and first event id (the key EVT#<rid>#<epoch>#<first id>,
// docs/architecture.md). The zero EventPos is the log's start.
type EventPos struct {
	Epoch int
	First int64
}

// EventPageBytes bounds a page of the event log (Store.ReadEvents): about
// what one DynamoDB Query call returns.
const EventPageBytes = 1 << 20

// EventPage is one page of a request's event log.
type EventPage struct {
	// Events are the page's events above the read's after, in log order,
	// each with its epoch.
	Events []StoredEvent
	// Next is where to read on from: past the page's last batch when More;
	// else that batch itself (or the read's from when it found none),
	// which a retried flush may still grow.
	Next EventPos
	// More tells that the log holds batches past the page.
	More bool
}

// Log order is id order for what readers keep: a claim numbers its events
// on after every id logged before it, and the events a taken-over leg
// logged after its cut are dropped (Visible); of two events with one id,
// the first in log order is kept.

// EventLogTTL is how long a request's events are kept after its last one.
// A batch is written with this ttl plus the agent's longest approval wait
// (the pause that may follow its leg); a cancel or an expiry that ends a
// request late extends every batch of its log (Store.ExtendEvents).
const EventLogTTL = 24 * time.Hour

// EventFlushInterval is the most often a streaming request's events are
// written (docs/architecture.md: at most every 250 ms, and once at the end).
var EventFlushInterval = 250 * time.Millisecond

// eventLog buffers a leg's events and writes them in batches.
type eventLog struct {
	store   Store
	taskID  string
	rid     string
	mu      sync.Mutex
	pending []StoredEvent
	stop    chan struct{}
	done    chan struct{}
	log     func(msg string, args ...any)
	flushMu sync.Mutex
	// ttl of each batch: EventLogTTL, plus the agent's longest approval
	// wait, so that a leg's events outlive the pause that may follow it.
	ttl time.Duration
	// abandoned: the leg lost its lease; nothing more is written.
	abandoned bool
	// holds, when set, tells whether the leg still holds its lease by its
	// own count: a process that stalled past it (and was taken over) writes
	// nothing when it wakes, before its watcher has even noticed.
	holds func() bool
	// epoch is the leg's claim epoch, in its batches' keys: what a stalled
	// holder still flushes after a takeover is cut off by readers.
	epoch int
}

// abandon drops what is buffered and what comes: a leg that lost its lease
// must not log events the leg that took it over numbers on from.
func (l *eventLog) abandon() {
	l.mu.Lock()
	l.abandoned = true
	l.pending = nil
	l.mu.Unlock()
}

func newEventLog(s Store, taskID, rid string, epoch int, ttl time.Duration, log func(string, ...any), holds func() bool) *eventLog {
	l := &eventLog{store: s, taskID: taskID, rid: rid, epoch: epoch, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{}), log: log, holds: holds}
	go l.loop()
	return l
}

func (l *eventLog) add(e Event) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		data = []byte(`{}`)
	}
	l.mu.Lock()
	if !l.abandoned {
		l.pending = append(l.pending, StoredEvent{ID: e.ID, Name: e.Name, Data: data, Epoch: l.epoch})
	}
	l.mu.Unlock()
}

func (l *eventLog) loop() {
	defer close(l.done)
	t := time.NewTicker(EventFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.flush(context.Background())
		}
	}
}

// flush writes what is buffered, as one batch.
func (l *eventLog) flush(ctx context.Context) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.holds != nil && !l.holds() {
		l.abandon()
	}
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	abandoned := l.abandoned
	l.mu.Unlock()
	if len(batch) == 0 || abandoned {
		return
	}
	if err := l.store.AppendEvents(ctx, l.taskID, l.rid, batch, time.Now().Add(l.ttl)); err != nil {
		l.log("writing events failed", "task_id", l.taskID, "request_id", l.rid, "first", batch[0].ID, "err", err)
		// Keep them for the next flush.
		l.mu.Lock()
		if !l.abandoned {
			l.pending = append(batch, l.pending...)
		}
		l.mu.Unlock()
	}
}

// close stops the timer and writes the rest.
func (l *eventLog) close(ctx context.Context) {
	close(l.stop)
	<-l.done
	l.flush(ctx)
}

// logEvents writes events that no leg emits (a cancel of a paused request,
// an applied expiry) to the request's log, best effort.
func (e *Engine) logEvents(ctx context.Context, taskID, rid string, epoch int, evs ...Event) {
	batch := make([]StoredEvent, 0, len(evs))
	for _, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			data = []byte(`{}`)
		}
		batch = append(batch, StoredEvent{ID: ev.ID, Name: ev.Name, Data: data, Epoch: epoch})
	}
	expires := time.Now().Add(EventLogTTL)
	if err := e.Store.AppendEvents(ctx, taskID, rid, batch, expires); err != nil {
		e.log().Warn("writing events failed", "task_id", taskID, "request_id", rid, "err", err)
		return
	}
	if err := e.Store.ExtendEvents(ctx, taskID, rid, expires); err != nil {
		e.log().Warn("extending the event log failed", "task_id", taskID, "request_id", rid, "err", err)
	}
}

// settled is what follows a write outside a leg that ended requests (an
// expiry, a cancel's, a dead leg's): the finished task's retention, each
// request's final event logged, and the requests counted.
func (e *Engine) settled(ctx context.Context, agentName string, next *Task, recs []RequestRecord) {
	e.retainFinished(ctx, next)
	e.logSettled(ctx, next.ID, recs)
	e.observeSettled(agentName, recs)
}

// logSettled logs the final event of requests a claim settled: an applied
// expiry, or a dead request recorded Failed, ends with an error event.
func (e *Engine) logSettled(ctx context.Context, taskID string, recs []RequestRecord) {
	for _, r := range recs {
		if r.Error != nil && (IsExpiry(r.Error.Code) || r.Error.Code == CodeLeaseExpired) {
			e.logEvents(ctx, taskID, r.RequestID, r.Epoch, Event{ID: r.LastEventID, Name: EventError,
				Data: map[string]string{"code": r.Error.Code, "message": r.Error.Message, "request_id": r.RequestID}})
		}
	}
}

// lastLogged is the id of the last event of the request: META's count, or
// further if a leg that died had logged more (the log flushes on its own).
func (e *Engine) lastLogged(ctx context.Context, taskID string, a *ActiveRequest) int64 {
	last := a.LastEventID
	evs, err := e.Store.ListEvents(ctx, taskID, a.ID, last)
	if err != nil {
		e.log().Warn("reading the event log failed", "task_id", taskID, "request_id", a.ID, "err", err)
		return last
	}
	for _, ev := range evs {
		last = max(last, ev.ID)
	}
	return last
}
