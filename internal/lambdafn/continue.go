package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// OpContinue is the resume function's direct payload (docs/architecture.md,
// "The outbox and the notifier"): the notifier hands it a caller to continue, by the outbox
// item a child's commit wrote.
const OpContinue = "continue"

// OpTakeover is the resume function's direct payload from the reaper (the
// notifier's schedule, docs/architecture.md "The reaper"): take over the
// request's dead leg, or apply its round's expiry.
const OpTakeover = "takeover"

// ContinuePayload is {"op": "continue", task_id, request_id, outbox,
// poll?}: the caller's task and request, and the key of the outbox item to
// delete once the caller is continued. Poll: the item polls the caller's
// remote agents; it stays while they have not moved (the notifier's sweep
// delivers it again).
type ContinuePayload struct {
	Op        string `json:"op"`
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
	Outbox    string `json:"outbox"`
	Poll      bool   `json:"poll,omitempty"`
}

// ContinueAnswer is what a continuation answers: the caller's status
// after it, or "" when there was nothing to do.
type ContinueAnswer struct {
	TaskID    string       `json:"task_id"`
	RequestID string       `json:"request_id"`
	Status    agent.Status `json:"status,omitempty"`
	// Waiting: a poll found the caller's remote agents where they were.
	Waiting bool `json:"waiting,omitempty"`
}

// Continue answers the resume function's direct payloads: it continues the
// caller (to its end or its next pause) and then deletes the outbox item. A
// caller a live invocation holds is the function error Hitch.task_busy, so
// the asynchronous invocation is retried (and the notifier's sweep re-drives
// the item after that).
func Continue(e *agent.Engine) lambdahttp.DirectFunc {
	log := e.Log
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p ContinuePayload
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, "the resume function takes {op: \"continue\", task_id, request_id, outbox}: "+err.Error())
		}
		if p.Op != OpContinue && p.Op != OpTakeover {
			return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("the resume function's direct payload is op %q or %q, not %q (direct invoke, resume, cancel and get go to the invoke function)", OpContinue, OpTakeover, p.Op))
		}
		var err error
		if p.TaskID, err = agent.ParseID("task_id", p.TaskID); err != nil {
			return nil, refusal(err)
		}
		if p.RequestID, err = agent.ParseID("request_id", p.RequestID); err != nil {
			return nil, refusal(err)
		}
		wctx := context.WithoutCancel(ctx)
		start := e.StartContinue
		consumes := false
		switch {
		case p.Op == OpTakeover:
			start = e.StartTakeover
		case p.Poll:
			start = e.StartPoll
		case p.Outbox != "":
			// The claim that continues the caller deletes the item.
			consumes = true
			start = func(ctx context.Context, taskID, rid string) (*agent.Run, error) {
				return e.ConsumeContinue(ctx, taskID, rid, p.Outbox)
			}
		}
		run, err := start(wctx, p.TaskID, p.RequestID)
		if errors.Is(err, agent.ErrWaiting) {
			// Nothing new there: the item stays for the next sweep.
			return ContinueAnswer{TaskID: p.TaskID, RequestID: p.RequestID, Status: agent.StatusPaused, Waiting: true}, nil
		}
		if errors.Is(err, agent.ErrBusy) {
			return nil, lambdahttp.Refusal(agent.CodeTaskBusy, "the caller is held by a live invocation; try again later")
		}
		if err != nil {
			log.Error("continue failed", "task_id", p.TaskID, "request_id", p.RequestID, "err", err)
			return nil, lambdahttp.Refusal(agent.CodeInternal, "the caller could not be continued")
		}
		out := ContinueAnswer{TaskID: p.TaskID, RequestID: p.RequestID}
		if run != nil {
			out.Status = run.Execute(wctx, agent.Discard).Status
		}
		if p.Outbox != "" && (run == nil || !consumes) {
			// Nothing consumed it (there was nothing to do), or a poll
			// whose caller went on: delete it here.
			if err := e.Store.DeleteOutbox(wctx, p.TaskID, p.Outbox); err != nil {
				log.Warn("deleting a continuation's outbox item failed; it will be delivered again", "task_id", p.TaskID, "sk", p.Outbox, "err", err)
			}
		}
		return out, nil
	}
}

func refusal(err error) error {
	var ae *agent.Error
	if errors.As(err, &ae) {
		return lambdahttp.Refusal(ae.Code, ae.Message)
	}
	return err
}
