// Package eventlog keeps a request's events as a log of batches: what a
// leg emits is buffered and written at most every FlushInterval and once
// at the end (Writer), each batch under its leg's claim epoch, and
// readers drop what a taken-over leg wrote after its cut (Visible). The
// store that holds the batches is the engine's (docs/architecture.md,
// "The table"); this package only needs it to append.
package eventlog

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Appender writes one batch of a request's consecutive events, kept until
// expires (the engine's Store.AppendEvents).
type Appender interface {
	AppendEvents(ctx context.Context, taskID, requestID string, events []Event, expires time.Time) error
}

// Event is an event as the log keeps it.
type Event struct {
	ID   int64           `json:"id"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
	// Epoch is the claim epoch of the leg that logged it (the batch's key
	// holds it, docs/architecture.md).
	Epoch int `json:"-"`
}

// Cut ends a taken-over leg's events: readers drop those of its epoch
// with an id past Last (its last commit's), which a stalled holder may
// still flush late (docs/architecture.md, Dead legs).
type Cut struct {
	Epoch int   `json:"epoch"`
	Last  int64 `json:"last"`
}

// Visible drops the events that cuts hide and keeps one event of each id,
// in id order (events as the engine's Store.ListEvents gives them, by id then epoch).
func Visible(events []Event, cuts []Cut) []Event {
	out := events[:0:0]
	for _, ev := range events {
		if CutOff(ev, cuts) || (len(out) > 0 && out[len(out)-1].ID == ev.ID) {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// CutOff tells whether a cut hides ev.
func CutOff(ev Event, cuts []Cut) bool {
	for _, c := range cuts {
		if c.Epoch == ev.Epoch && ev.ID > c.Last {
			return true
		}
	}
	return false
}

// Pos is a place in a request's event log, in log order: a batch's
// claim epoch and first event id (the key EVT#<rid>#<epoch>#<first id>,
// docs/architecture.md). The zero Pos is the log's start.
type Pos struct {
	Epoch int
	First int64
}

// PageBytes bounds a page of the event log (the engine's Store.ReadEvents): about
// what one DynamoDB Query call returns.
const PageBytes = 1 << 20

// Page is one page of a request's event log.
type Page struct {
	// Events are the page's events above the read's after, in log order,
	// each with its epoch.
	Events []Event
	// Next is where to read on from: past the page's last batch when More;
	// else that batch itself (or the read's from when it found none),
	// which a retried flush may still grow.
	Next Pos
	// More tells that the log holds batches past the page.
	More bool
}

// Log order is id order for what readers keep: a claim numbers its events
// on after every id logged before it, and the events a taken-over leg
// logged after its cut are dropped (Visible); of two events with one id,
// the first in log order is kept.

// TTL is how long a request's events are kept after its last one.
// A batch is written with this ttl plus the agent's longest approval wait
// (the pause that may follow its leg); a cancel or an expiry that ends a
// request late extends every batch of its log (the engine's Store.ExtendEvents).
const TTL = 24 * time.Hour

// FlushInterval is the most often a streaming request's events are
// written (docs/architecture.md: at most every 250 ms, and once at the end).
var FlushInterval = 250 * time.Millisecond

// Writer buffers a leg's events and writes them in batches.
type Writer struct {
	store   Appender
	taskID  string
	rid     string
	mu      sync.Mutex
	pending []Event
	stop    chan struct{}
	done    chan struct{}
	log     func(msg string, args ...any)
	flushMu sync.Mutex
	// ttl of each batch: TTL, plus the agent's longest approval
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

// Abandon drops what is buffered and what comes: a leg that lost its lease
// must not log events the leg that took it over numbers on from.
func (l *Writer) Abandon() {
	l.mu.Lock()
	l.abandoned = true
	l.pending = nil
	l.mu.Unlock()
}

// New starts the writer of request rid's events, logged under the leg's
// claim epoch and kept ttl after each batch; log reports a failed write
// (kept for the next flush), holds, when set, whether the leg still holds
// its request.
func New(s Appender, taskID, rid string, epoch int, ttl time.Duration, log func(string, ...any), holds func() bool) *Writer {
	l := &Writer{store: s, taskID: taskID, rid: rid, epoch: epoch, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{}), log: log, holds: holds}
	go l.loop()
	return l
}

// Add buffers an event: its id, its name and its data (as JSON).
func (l *Writer) Add(id int64, name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	l.mu.Lock()
	if !l.abandoned {
		l.pending = append(l.pending, Event{ID: id, Name: name, Data: data, Epoch: l.epoch})
	}
	l.mu.Unlock()
}

func (l *Writer) loop() {
	defer close(l.done)
	t := time.NewTicker(FlushInterval)
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
func (l *Writer) flush(ctx context.Context) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.holds != nil && !l.holds() {
		l.Abandon()
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

// Close stops the timer and writes the rest.
func (l *Writer) Close(ctx context.Context) {
	close(l.stop)
	<-l.done
	l.flush(ctx)
}
