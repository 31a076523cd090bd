package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

// FollowPoll bounds how often a follower reads the event log.
var FollowPoll = 100 * time.Millisecond

// terminalGrace is how long a follower of an ended request waits for its
// final event to reach the log before answering it from the request's record.
const terminalGrace = 2 * time.Second

// Follower replays a request's events after an id, then follows them live
// until the next request_complete or error (docs/api.md Server-Sent Events).
type Follower struct {
	e      *Engine
	agent  *Agent
	taskID string
	rid    string
	after  int64
	// legRound, when > 0, starts at the resume leg of that round instead.
	legRound int
	// cuts hide what taken-over legs logged after their last commit.
	cuts []eventlog.Cut
	// from is where the log's events after `after` start (OpenEvents
	// found it), so Stream does not read the log's beginning again.
	from eventlog.Pos
}

// followReadFailures is how many failed reads of the log in a row end a
// follower's stream: cut, so that its client reconnects.
const followReadFailures = 10

// OpenEvents checks a GET …/events call: ids (400), agent, task, request
// (404), owner (401), and an expired log (410 events_expired).
func (e *Engine) OpenEvents(ctx context.Context, agentName, userID, taskID, requestID string, after int64) (_ *Follower, err error) {
	defer wrap(&err, "events of request %s of task %s", requestID, taskID)
	if taskID, err = ParseID("task_id", taskID); err != nil {
		return nil, err
	}
	if requestID, err = ParseID("request_id", requestID); err != nil {
		return nil, err
	}
	ag, ok := e.Agents.Get(agentName)
	if !ok {
		return nil, Errorf(CodeAgentNotFound, "no agent is named %q", agentName)
	}
	t, err := e.getTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	var rec *RequestRecord
	active := t.Active != nil && t.Active.ID == requestID
	if !active {
		if rec, err = e.findRecord(ctx, taskID, requestID); err != nil {
			return nil, err
		}
	}
	if err := requestFound(t, requestID, active || rec != nil); err != nil {
		return nil, err
	}
	if err := owned(t, agentName, userID); err != nil {
		return nil, err
	}
	f := &Follower{e: e, agent: ag, taskID: taskID, rid: requestID, after: after}
	if rec != nil {
		f.cuts = rec.Cuts
	}
	// Batches expire one by one (24 h after each was written): a log that
	// starts past after+1 lost its beginning.
	first, from, err := e.firstEvent(ctx, taskID, requestID, after)
	if err != nil {
		return nil, fmt.Errorf("read the events of %s: %w", requestID, err)
	}
	if first != nil && first.ID > after+1 {
		return nil, Errorf(CodeEventsExpired, "the events of request %s after %d have expired (kept %s)", requestID, after, eventlog.TTL)
	}
	f.from = from
	if active {
		return f, nil
	}
	if after < rec.LastEventID && e.now().After(rec.UpdatedAt.Add(eventlog.TTL)) {
		return nil, Errorf(CodeEventsExpired, "the events of request %s expired %s after it ended", requestID, eventlog.TTL)
	}
	return f, nil
}

// firstEvent reads the log page by page to its first event after `after`;
// from is where the page holding it starts (or where the log ends).
func (e *Engine) firstEvent(ctx context.Context, taskID, rid string, after int64) (first *eventlog.Event, from eventlog.Pos, err error) {
	for {
		page, err := e.Store.ReadEvents(ctx, taskID, rid, from, after)
		if err != nil {
			return nil, from, err
		}
		if len(page.Events) > 0 {
			return &page.Events[0], from, nil
		}
		if !page.More {
			return nil, page.Next, nil
		}
		from = page.Next
	}
}

func (e *Engine) findRecord(ctx context.Context, taskID, rid string) (*RequestRecord, error) {
	recs, err := e.Store.ListRequests(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("list requests of %s: %w", taskID, err)
	}
	for i := range recs {
		if recs[i].RequestID == rid {
			return &recs[i], nil
		}
	}
	return nil, nil
}

// Stream sends the events to sink until the next request_complete or error,
// or until ctx ends. It reads the log a page at a time and reads the next
// only once sink took the last (docs/api.md Reconnecting): a sink that
// blocks paces it, and it never holds more than a page.
func (f *Follower) Stream(ctx context.Context, sink Sink) {
	after, from := f.after, f.from
	started := f.legRound == 0
	var endedAt time.Time
	poll := FollowPoll
	failures := 0
	ended := false // the request's record, and so its cuts, are read
	for {
		// META first: the cuts it holds are those of every takeover before
		// the events read next, so a stalled holder's late flush is hidden.
		meta, err := f.e.Store.GetTask(ctx, f.taskID)
		if err == nil && meta.Active != nil && meta.Active.ID == f.rid {
			f.cuts = meta.Active.Cuts
		} else if err == nil && !ended {
			if rec, rerr := f.e.findRecord(ctx, f.taskID, f.rid); rerr == nil && rec != nil {
				f.cuts, ended = rec.Cuts, true
			}
		}
		page, lerr := f.e.Store.ReadEvents(ctx, f.taskID, f.rid, from, after)
		if ctx.Err() != nil {
			return
		}
		if lerr != nil {
			f.e.log().Error("reading events failed", "task_id", f.taskID, "request_id", f.rid, "err", lerr)
			// Never taken for the log's end: a cut stream is reconnected.
			if failures++; failures >= followReadFailures {
				return
			}
		} else {
			failures = 0
			from = page.Next
		}
		if f.emitPage(page.Events, &after, &started, sink) {
			return
		}
		if lerr == nil {
			if page.More {
				continue // the next page, now that sink took this one
			}
			if f.atEnd(ctx, meta, err, after, &endedAt, sink) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
		if poll < 500*time.Millisecond {
			poll += poll / 2
		}
	}
}

// emitPage sends a page's events after the id after (moved on as they
// go), from the followed leg's start: true once the request's last event
// went out. Log order is id order for the events kept (eventlog.Page); an id
// seen already is a taken-over leg's copy.
func (f *Follower) emitPage(events []eventlog.Event, after *int64, started *bool, sink Sink) bool {
	for _, ev := range events {
		if ev.ID <= *after || eventlog.CutOff(ev, f.cuts) {
			continue
		}
		*after = ev.ID
		if !*started {
			*started = isLegStart(ev, f.legRound)
			if !*started {
				continue
			}
		}
		sink.Emit(Event{ID: ev.ID, Name: ev.Name, Data: json.RawMessage(ev.Data)})
		if ev.Name == EventRequestComplete || ev.Name == EventError {
			return true
		}
	}
	return false
}

// atEnd tells, once the log is read to its end, whether the stream is
// over: the task gone; the request's leg dead (request_lost sent); or the
// request ended and, past a grace for its last events to reach the log,
// its outcome answered from its record. endedAt is when the request was
// first seen ended; meta and err are the META read of this round.
func (f *Follower) atEnd(ctx context.Context, meta *Task, err error, after int64, endedAt *time.Time, sink Sink) bool {
	switch {
	case errors.Is(err, ErrNotFound):
		return true
	case err != nil:
		return false
	case meta.Active != nil && meta.Active.ID == f.rid:
		*endedAt = time.Time{}
		if meta.Active.Status == StatusRunning && !f.e.now().Before(meta.Active.LeaseUntil) {
			sink.Emit(Event{ID: after + 1, Name: EventError, Data: map[string]string{
				"code": CodeRequestLost, "message": "the request stopped without finishing (its lease expired)", "request_id": f.rid}})
			return true
		}
		return false
	case endedAt.IsZero():
		*endedAt = time.Now()
		return false
	case time.Since(*endedAt) <= terminalGrace:
		return false
	}
	rec, err := f.e.findRecord(ctx, f.taskID, f.rid)
	if err == nil && rec != nil && rec.LastEventID > after {
		res := resultOfRecord(f.agent, meta, rec)
		f.e.replayOutcome(ctx, f.taskID, res, rec.LastEventID, sink)
	}
	return true
}

func isLegStart(ev eventlog.Event, round int) bool {
	if ev.Name != EventRequestStarted {
		return false
	}
	var d struct {
		Kind  string `json:"kind"`
		Round int    `json:"round"`
	}
	return json.Unmarshal(ev.Data, &d) == nil && d.Kind == KindResume && d.Round == round
}
