package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// logEvents writes events that no leg emits (a cancel of a paused request,
// an applied expiry) to the request's log, best effort.
func (e *Engine) logEvents(ctx context.Context, taskID, rid string, epoch int, evs ...Event) {
	b, _ := eventBatch(rid, epoch, evs)
	batch, expires := b.Events, b.Expires
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

// eventBatch is evs as the log keeps them, under the leg's epoch, until
// eventlog.TTL from now. An event whose data does not marshal is logged
// as {} (its error is returned beside, for a caller that refuses it).
func eventBatch(rid string, epoch int, evs []Event) (*EventBatch, error) {
	b := &EventBatch{RequestID: rid, Events: make([]eventlog.Event, 0, len(evs)), Expires: time.Now().Add(eventlog.TTL)}
	var first error
	for _, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			data, first = []byte(`{}`), cmp.Or(first, err)
		}
		b.Events = append(b.Events, eventlog.Event{ID: ev.ID, Name: ev.Name, Data: data, Epoch: epoch})
	}
	return b, first
}
