package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// TakeoverSender hands a takeover the reaper found to what carries it out
// (the resume function, {"op": "takeover"}).
type TakeoverSender interface {
	Takeover(ctx context.Context, tk agent.Takeover) error
}

// SweepEvery is how many of the schedule's one-minute ticks go by between
// two re-drives of the outbox: the reaper runs on every tick, the outbox
// sweep on every fifth (docs/architecture.md, "The reaper").
const SweepEvery = 5

// tick answers the schedule: the reaper's sweep (every tick), then the
// outbox's re-drive on every SweepEvery-th minute of the event's time.
func (h *Handler) tick(ctx context.Context, raw json.RawMessage) error {
	var ev struct {
		Time time.Time `json:"time"`
	}
	_ = json.Unmarshal(raw, &ev)
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	reapErr := h.reap(ctx)
	if h.Takeovers != nil && ev.Time.Minute()%SweepEvery != 0 {
		return reapErr
	}
	return errors.Join(reapErr, h.sweep(ctx))
}

// ReapBudget is how long one tick's reaper sweep may take (less when the
// invocation's deadline comes sooner): a sweep that cannot finish stops
// after the last entry it handled and the next tick resumes there.
const ReapBudget = 40 * time.Second

// reap sends a takeover for each dead leg and expired round the reaper's
// index holds, paging through all of it (agent.Engine.SweepDue).
func (h *Handler) reap(ctx context.Context) error {
	if h.Takeovers == nil {
		return nil
	}
	until := time.Now().Add(ReapBudget)
	if d, ok := ctx.Deadline(); ok && d.Add(-10*time.Second).Before(until) {
		until = d.Add(-10 * time.Second)
	}
	h.reapMu.Lock()
	defer h.reapMu.Unlock()
	var failed error
	next, err := h.D.Engine.SweepDue(ctx, h.reapPos, until, func(tk agent.Takeover) bool {
		if err := h.Takeovers.Takeover(ctx, tk); err != nil {
			h.log().Error("sending a takeover failed; the next tick sends it again", "task_id", tk.TaskID, "request_id", tk.RequestID, "err", err)
			failed = err
			return true
		}
		h.log().Info("a takeover was sent", "task_id", tk.TaskID, "request_id", tk.RequestID, "expired", tk.Expired)
		return true
	})
	h.reapPos = next
	if err != nil {
		return fmt.Errorf("notifier: reap: %w", err)
	}
	return failed
}

// Takeover implements TakeoverSender: the resume function, invoked
// asynchronously with {"op": "takeover", task_id, request_id}.
func (r ResumeInvoker) Takeover(ctx context.Context, tk agent.Takeover) error {
	payload, err := json.Marshal(map[string]any{"op": "takeover", "task_id": tk.TaskID, "request_id": tk.RequestID})
	if err != nil {
		return err
	}
	_, err = r.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(r.Function), InvocationType: lambdatypes.InvocationTypeEvent, Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", r.Function, err)
	}
	return nil
}
