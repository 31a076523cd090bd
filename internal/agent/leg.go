package agent

import (
	"context"
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
// or ran, and answers that leg's outcome (resume.go, follower).
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
