// Legs: what a Start… gives — a claimed leg (Run, run.go) or a follower
// of a leg that runs or ran elsewhere (followLeg): how a follower waits
// for that leg's outcome and streams its events, answers a past round by
// that round's leg, and takes a dead leg over when the decision it
// follows is in hand (retake).

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Leg is what a Start… gives: a claimed request's leg to run (*Run), or a
// follower of a leg that runs, or ran, elsewhere (*followLeg): a
// duplicate of a decision in flight, a decision of a round the request
// has moved past, a message an Idempotency-Key bound already, a decision
// at a caller that another call moved on. Execute runs the leg, or
// follows the other one, and answers its outcome; it never returns nil.
type Leg interface {
	Execute(ctx context.Context, sink Sink) *RequestResult
	// Task is the task as the leg claimed it; nil for a follower.
	Task() *Task
	TaskID() string
	RequestID() string
	// Deadline is when the leg, or the follower, stops.
	Deadline() time.Time
}

// legOf is a claim's answer as a Leg: no leg (nil) when it claimed none.
func legOf(r *Run, err error) (Leg, error) {
	if r == nil {
		return nil, err
	}
	return r, err
}

// followLeg follows a leg of request reqID that another invocation runs
// or ran, and answers that leg's outcome (follower, below).
type followLeg struct {
	e        *Engine
	agent    *Agent
	taskID   string
	reqID    string
	deadline time.Time
	// legRound is the round whose decision it follows (0: the request's
	// first leg, a message's).
	legRound int
	follow   func(ctx context.Context, sink Sink) *RequestResult
	// retake, on a follower of a decision in flight, takes the request
	// over when the invocation running it died.
	retake func(ctx context.Context) (Leg, error)
}

// Execute follows the other leg and answers its outcome.
func (f *followLeg) Execute(ctx context.Context, sink Sink) *RequestResult {
	if sink == nil {
		sink = Discard
	}
	return f.follow(ctx, sink)
}

// Task is nil: a follower claimed nothing.
func (f *followLeg) Task() *Task { return nil }

// TaskID is the followed request's task.
func (f *followLeg) TaskID() string { return f.taskID }

// RequestID is the followed request.
func (f *followLeg) RequestID() string { return f.reqID }

// Deadline is when the follower stops: its caller's deadline, as a leg's.
func (f *followLeg) Deadline() time.Time { return f.deadline }

// bindFollower binds the waiter of a call answered by a follower (a
// duplicate that waits) to the request it follows (bindWaiter); a claim
// bound its own already.
func (e *Engine) bindFollower(ctx context.Context, run Leg, err error, wt *Waiter) (Leg, error) {
	f, ok := run.(*followLeg)
	if err != nil || wt == nil || !ok {
		return run, err
	}
	if err := e.bindWaiter(ctx, f.taskID, f.reqID, wt); err != nil {
		return nil, err
	}
	return run, nil
}

// pastLeg makes a follower of a decision whose request has moved past its
// round answer that round's leg (docs/api.md's answer table), not the
// request's outcome now. A leg that paused the request in the next round
// answers that pause: its request_complete from the event log (SSE: the
// leg replayed) or, where the log does not show that leg's end (a process
// died between the commit and its log, a takeover finished it), the pause
// as the store holds it. A leg the request ended in answers the request's
// outcome (with the log gone, expired, too).
func (e *Engine) pastLeg(f *followLeg) *followLeg {
	follow := f.follow
	f.follow = func(ctx context.Context, sink Sink) *RequestResult {
		paused := e.legPaused(ctx, f.agent, f.taskID, f.reqID, f.legRound)
		if paused == nil {
			return endedLeg(ctx, e, f, follow, sink)
		}
		var leg []Event
		c := &legEnd{}
		lctx, cancel := context.WithTimeout(ctx, pastLegWait)
		(&Follower{e: e, agent: f.agent, taskID: f.taskID, rid: f.reqID, legRound: f.legRound}).Stream(lctx,
			multiSink{SinkFunc(func(ev Event) { leg = append(leg, ev) }), c})
		cancel()
		if res := c.result(f.taskID, f.reqID, f.agent); res != nil && res.Status == StatusPaused && res.Round == paused.Round {
			for _, ev := range leg {
				sink.Emit(ev)
			}
			return res
		}
		var last int64
		if n := len(leg); n > 0 {
			last = leg[n-1].ID
		}
		return e.replayOutcome(ctx, f.taskID, paused, last, sink)
	}
	return f
}

// endedLeg answers a past round's leg that ended the request: that leg
// from the log, else the request's outcome.
func endedLeg(ctx context.Context, e *Engine, f *followLeg, follow func(context.Context, Sink) *RequestResult, sink Sink) *RequestResult {
	c := &legEnd{}
	if sink != Discard {
		// The stream replays that leg; its end is the answer.
		res := follow(ctx, multiSink{sink, c})
		if leg := c.result(f.taskID, f.reqID, f.agent); leg != nil {
			return leg
		}
		return res
	}
	lctx, cancel := context.WithTimeout(ctx, pastLegWait)
	(&Follower{e: e, agent: f.agent, taskID: f.taskID, rid: f.reqID, legRound: f.legRound}).Stream(lctx, c)
	cancel()
	if res := c.result(f.taskID, f.reqID, f.agent); res != nil {
		return res
	}
	return follow(ctx, Discard)
}

// legPaused is the pause round's leg ended in, when the request has moved
// past round: that leg paused it in the next round. Nil when the request
// ended in that leg (its outcome is the request's).
func (e *Engine) legPaused(ctx context.Context, ag *Agent, taskID, rid string, round int) *RequestResult {
	t, err := e.Store.GetTask(ctx, taskID)
	if err != nil {
		return nil
	}
	now := e.now()
	if a := t.Active; a != nil && a.ID == rid {
		if a.Round <= round {
			return nil
		}
		if a.Status == StatusPaused && a.Round == round+1 {
			if err := e.pendingInputs(ctx, t, nil); err != nil {
				e.log().Warn("reading the pending calls' inputs failed", "task_id", taskID, "err", err)
			}
			return pausedResult(ag, t, now)
		}
	} else {
		rec, err := e.findRecord(ctx, taskID, rid)
		if err != nil || rec == nil {
			return nil
		}
		final := rec.Round
		if l := lastOf(rec.Decisions); l != nil && l.Round > final {
			final = l.Round
		}
		if final <= round {
			return nil
		}
	}
	// Paused in the next round, decided since: its calls are no longer
	// pending.
	return &RequestResult{SessionID: t.SessionID, TaskID: taskID, RequestID: rid, Status: StatusPaused, Round: round + 1,
		PendingApprovals: []PendingView{}, ResumeURL: ResumeURL(t.Agent, taskID, rid), Source: ag.Source()}
}

// pastLegWait bounds the read of a past leg's end in the event log (it
// ended before the request moved past it: its events are there, unless
// the log expired).
const pastLegWait = 5 * time.Second

// multiSink emits each event to every sink.
type multiSink []Sink

func (m multiSink) Emit(ev Event) {
	for _, s := range m {
		s.Emit(ev)
	}
}

// legEnd keeps the last event of a leg it is shown: its request_complete,
// or the error that ended it.
type legEnd struct{ last *Event }

func (c *legEnd) Emit(ev Event) {
	if ev.Name == EventRequestComplete || ev.Name == EventError {
		c.last = &ev
	}
}

func (c *legEnd) result(taskID, rid string, ag *Agent) *RequestResult {
	if c.last == nil {
		return nil
	}
	b, err := json.Marshal(c.last.Data)
	if err != nil {
		return nil
	}
	if c.last.Name == EventRequestComplete {
		var res RequestResult
		if json.Unmarshal(b, &res) != nil {
			return nil
		}
		return &res
	}
	var ei ErrorInfo
	if json.Unmarshal(b, &ei) != nil || ei.Code == CodeRequestLost {
		return nil // not an outcome
	}
	return &RequestResult{TaskID: taskID, RequestID: rid, Status: StatusFailed, Error: &ei, Source: ag.Source()}
}

// follower is a leg that waits for another invocation's outcome of the
// request (a duplicate in flight) and answers it.
func (e *Engine) follower(ag *Agent, taskID, rid string, round int, callerDeadline time.Time) *followLeg {
	deadline, _ := e.legDeadline(callerDeadline)
	r := &followLeg{e: e, agent: ag, reqID: rid, taskID: taskID, legRound: round, deadline: deadline}
	r.follow = func(ctx context.Context, sink Sink) *RequestResult {
		// A follower stops with its caller's deadline, like a leg.
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		if sink != Discard {
			f := &Follower{e: e, agent: ag, taskID: taskID, rid: rid, legRound: round}
			if r.retake != nil {
				sink = notLost{sink}
			}
			f.Stream(ctx, sink)
		}
		res, _ := e.waitOutcome(ctx, ag, taskID, rid, round)
		if r.retake != nil && res.Error != nil && res.Error.Code == CodeRequestLost {
			e.log().Warn("the invocation running the request died; taking it over", "task_id", taskID, "request_id", rid)
			run, err := r.retake(ctx)
			if err == nil {
				return run.Execute(ctx, sink)
			}
			e.log().Warn("taking the request over failed", "task_id", taskID, "request_id", rid, "err", err)
		}
		if round > 0 && (res.Status != StatusPaused || res.Round != round+1) {
			// The request went on past the pause this round's leg ended
			// in (a cancel, a decision of the next round) before this
			// follower saw it: that pause is the answer (docs/api.md's
			// answer table), not the request's outcome now.
			if leg := e.legPaused(ctx, ag, taskID, rid, round); leg != nil {
				return leg
			}
		}
		return res
	}
	return r
}

// notLost passes events on but for a follower's request_lost: a follower
// that takes the request over streams the rest instead.
type notLost struct{ Sink }

func (s notLost) Emit(ev Event) {
	if d, ok := ev.Data.(map[string]string); ok && ev.Name == EventError && d["code"] == CodeRequestLost {
		return
	}
	s.Sink.Emit(ev)
}

// boundFollower follows the request an Idempotency-Key was bound to: 404
// if its task was deleted since.
func (e *Engine) boundFollower(ctx context.Context, ag *Agent, bound *IdemRecord, callerDeadline time.Time) (Leg, error) {
	if _, err := e.Store.GetTask(ctx, bound.TaskID); errors.Is(err, ErrNotFound) {
		return nil, Errorf(CodeTaskNotFound, "the task this Idempotency-Key created (%s) was deleted", bound.TaskID)
	} else if err != nil {
		return nil, fmt.Errorf("get task %s: %w", bound.TaskID, err)
	}
	return e.follower(ag, bound.TaskID, bound.RequestID, 0, callerDeadline), nil
}

// DuplicatePoll is how often a waiting duplicate reads META: at most once a
// second (docs/architecture.md, The table), however many wait on one request.
var DuplicatePoll = time.Second

// waitOutcome polls until the request ends or pauses in a later round. It
// returns the outcome and the id of the request's last event.
func (e *Engine) waitOutcome(ctx context.Context, ag *Agent, taskID, rid string, round int) (*RequestResult, int64) {
	for {
		t, err := e.Store.GetTask(ctx, taskID)
		if errors.Is(err, ErrNotFound) {
			return &RequestResult{TaskID: taskID, RequestID: rid, Status: StatusFailed,
				Error: &ErrorInfo{Code: CodeTaskNotFound, Message: "the task was deleted"}, Source: ag.Source()}, 0
		}
		if err == nil {
			a := t.Active
			switch {
			case a != nil && a.ID == rid && a.Status == StatusPaused && a.Round > round:
				if err := e.pendingInputs(ctx, t, nil); err != nil {
					e.log().Warn("reading the pending calls' inputs failed", "task_id", taskID, "err", err)
				}
				return pausedResult(ag, t, e.now()), a.LastEventID
			case a != nil && a.ID == rid && a.Status == StatusRunning && !e.now().Before(a.LeaseUntil):
				return &RequestResult{SessionID: t.SessionID, TaskID: t.ID, RequestID: rid, Status: StatusFailed,
					Error: &ErrorInfo{Code: CodeRequestLost, Message: "the request stopped without finishing (its lease expired); resume again to take it over"}, Source: ag.Source()}, a.LastEventID + 1
			case a == nil || a.ID != rid:
				recs, err := e.Store.ListRequests(ctx, taskID)
				if err == nil {
					for i := range recs {
						if recs[i].RequestID == rid {
							return resultOfRecord(ag, t, &recs[i]), recs[i].LastEventID
						}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return &RequestResult{TaskID: taskID, RequestID: rid, Status: StatusFailed,
				Error: &ErrorInfo{Code: CodeDeadlineExceeded, Message: "gave up waiting for the request's outcome"}, Source: ag.Source()}, 0
		case <-time.After(DuplicatePoll):
		}
	}
}

// replayOutcome answers a follower's sink with the outcome, as the
// request's last event.
func (e *Engine) replayOutcome(ctx context.Context, taskID string, res *RequestResult, last int64, sink Sink) *RequestResult {
	if sink == nil {
		sink = Discard
	}
	name, data := terminalEvent(res)
	sink.Emit(Event{ID: last, Name: name, Data: data})
	return res
}
