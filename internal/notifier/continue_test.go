package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/notifier"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
	"github.com/hitch-agents/hitch/internal/sqsfake"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// TestContinuationThroughTheResumeFunction: on AWS, the leaf's commit
// writes its caller's continuation; the notifier gets it from the stream
// and invokes the resume function asynchronously ({"op": "continue"},
// through the real Lambda client); the resume function's handler
// continues the caller to its end and deletes the item. The notifier does
// not delete it itself, and a second delivery changes nothing.
func TestContinuationThroughTheResumeFunction(t *testing.T) {
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, table)
	o := enginetest.NewOrch(t, store)
	res, _ := o.Invoke(t, "desk", "", enginetest.CallAgent("leaf", enginetest.Append("lambda.txt", "x")))
	if res.Status != agent.StatusPaused {
		t.Fatalf("desk: %+v", res)
	}
	p := res.PendingApprovals[0]
	if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume at the leaf: %+v %v", out, err)
	}
	items, err := store.ListOutbox(context.Background(), time.Now().Add(24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	var cont *agent.OutboxItem
	for i := range items {
		if items[i].Kind == agent.OutboxContinue && items[i].TaskID == res.TaskID {
			cont = &items[i]
		}
	}
	if cont == nil || cont.RequestID != res.RequestID {
		t.Fatalf("no continuation of desk in the outbox: %+v", items)
	}

	fn, h := withResumeFunction(t, o.E, client, table)
	if _, err := store.GetOutbox(context.Background(), cont.TaskID, cont.SK()); err != nil {
		t.Fatalf("GetOutbox %s: %v", cont.SK(), err)
	}
	if err := h.D.Deliver(context.Background(), *cont); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	inv := fn.Invocations()
	if len(inv) != 1 || inv[0].InvocationType != "Event" {
		t.Fatalf("invocations: %+v", inv)
	}
	var payload map[string]string
	if err := json.Unmarshal(inv[0].Payload, &payload); err != nil || payload["op"] != "continue" || payload["task_id"] != res.TaskID ||
		payload["request_id"] != res.RequestID || payload["outbox"] != cont.SK() {
		t.Errorf("the payload: %s", inv[0].Payload)
	}
	if v := o.View(t, "desk", res.TaskID); v.Status != agent.StatusCompleted {
		t.Errorf("desk after the continuation: %s", v.Status)
	}
	if _, err := store.GetOutbox(context.Background(), cont.TaskID, cont.SK()); err == nil {
		t.Error("the continuation's item is still there")
	}
	if got := o.Lines("lambda.txt"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("lambda.txt = %q", got)
	}
	// Delivered again (a duplicate record): it is gone, nothing happens.
	if err := h.D.Deliver(context.Background(), *cont); err != nil || len(fn.Invocations()) != 1 {
		t.Errorf("a second delivery: %v, %d invocations", err, len(fn.Invocations()))
	}
}

// TestResumeInvokerRetries: an invocation the Lambda API refuses is retried
// later (the item stays).
func TestResumeInvokerRetries(t *testing.T) {
	fn := fakelambda.New(t) // no function registered: 404
	r := notifier.ResumeInvoker{Lambda: fn.Client(t), Function: "hitch-resume"}
	err := r.Continue(context.Background(), agent.OutboxItem{TaskID: "t", RequestID: "r", Kind: agent.OutboxContinue})
	if err == nil || !errors.Is(err, notify.ErrRetry) {
		t.Errorf("Continue = %v, want a retry", err)
	}
}

// TestResumeInvokerPolls: a poll item (a caller paused on a remote A2A
// agent) goes to the resume function with "poll": true and is delivered
// again after PollEvery (RetryAfter; the resume function deletes it once
// the caller went on); a continuation goes without it, and the resume
// function deletes it (ErrKept).
func TestResumeInvokerPolls(t *testing.T) {
	fn := fakelambda.New(t)
	fn.Handle("hitch-resume", func([]byte) fakelambda.Result { return fakelambda.JSON(map[string]any{}) })
	r := notifier.ResumeInvoker{Lambda: fn.Client(t), Function: "hitch-resume"}
	err := r.Continue(context.Background(), agent.OutboxItem{TaskID: "t", RequestID: "r", Kind: agent.OutboxContinue, Event: agent.EventPoll, Recipient: "x"})
	var ra *notify.RetryAfter
	if !errors.As(err, &ra) || ra.After != notifier.DefaultPollEvery || errors.Is(err, notify.ErrKept) {
		t.Errorf("poll: Continue = %v, want a RetryAfter of %s", err, notifier.DefaultPollEvery)
	}
	err = r.Continue(context.Background(), agent.OutboxItem{TaskID: "t", RequestID: "r", Kind: agent.OutboxContinue, Event: agent.EventContinue, Recipient: "x"})
	if !errors.Is(err, notify.ErrKept) {
		t.Errorf("continue: Continue = %v, want ErrKept", err)
	}
	inv := fn.Invocations()
	if len(inv) != 2 {
		t.Fatalf("invocations: %+v", inv)
	}
	for i, want := range []bool{true, false} {
		var p map[string]any
		if err := json.Unmarshal(inv[i].Payload, &p); err != nil {
			t.Fatal(err)
		}
		if got, _ := p["poll"].(bool); got != want || p["op"] != "continue" {
			t.Errorf("payload %d: %s, want poll %v", i, inv[i].Payload, want)
		}
	}
}

// withResumeFunction is the notifier over the table with the resume
// function behind the Lambda Invoke API: its real direct handler over the
// engine e (continuations, takeovers).
func withResumeFunction(t *testing.T, e *agent.Engine, client *dynamodb.Client, table string) (*fakelambda.Server, *notifier.Handler) {
	t.Helper()
	fn := fakelambda.New(t)
	resume := lambdafn.Continue(e)
	fn.Handle("hitch-resume", func(payload []byte) fakelambda.Result {
		out, err := resume(context.Background(), payload)
		if err != nil {
			return fakelambda.Fail("Hitch.error", err.Error())
		}
		return fakelambda.JSON(out)
	})
	q := sqsfake.New(t)
	h, err := notifier.NewWith(notifier.Config{Table: table, RetryQueueURL: q.URL + "/retry", ResumeFunction: "hitch-resume", Log: slog.New(slog.DiscardHandler)},
		notifier.Clients{DynamoDB: client, SQS: q.Client(), Lambda: fn.Client(t), Webhooks: &notifytest.Hooks{}})
	if err != nil {
		t.Fatal(err)
	}
	return fn, h
}
