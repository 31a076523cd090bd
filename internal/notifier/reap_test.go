package notifier_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// TestReaperThroughTheResumeFunction: on AWS, a request whose process died
// is found by the notifier's one-minute schedule (the reaper's index on
// DynamoDB Local) and handed to the resume function ({"op": "takeover"},
// through the real Lambda client), whose handler takes it over and ends it
// — nobody touched the task.
func TestReaperThroughTheResumeFunction(t *testing.T) {
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, table)
	env := enginetest.New(t, store)
	env.E.Now = nil
	ctx := context.Background()
	// The invocation claims the request, then its process dies.
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	fn, h := withResumeFunction(t, env.E, client, table)
	tick := func(at string) {
		t.Helper()
		ev, _ := json.Marshal(map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "time": at})
		if _, err := h.Handle(ctx, ev); err != nil {
			t.Fatalf("tick at %s: %v", at, err)
		}
	}
	// While the lease lives, a tick sends nothing.
	tick("2026-11-26T07:31:00Z")
	if inv := fn.Invocations(); len(inv) != 0 {
		t.Fatalf("a live leg was sent for takeover: %+v", inv)
	}
	time.Sleep(agent.LeaseDuration + 200*time.Millisecond)
	env.Model.Add(agenttest.Say("recovered"))
	tick("2026-11-26T07:32:00Z")
	inv := fn.Invocations()
	if len(inv) != 1 || inv[0].InvocationType != "Event" {
		t.Fatalf("invocations: %+v", inv)
	}
	var payload map[string]string
	if err := json.Unmarshal(inv[0].Payload, &payload); err != nil || payload["op"] != "takeover" ||
		payload["task_id"] != run.TaskID() || payload["request_id"] != run.RequestID() {
		t.Errorf("the payload: %s", inv[0].Payload)
	}
	v, err := env.E.GetTask(ctx, "acc", "alice", run.TaskID(), agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != agent.StatusCompleted || len(v.Requests) != 1 || v.Requests[0].Status != agent.StatusCompleted {
		t.Errorf("after the reaper: %s %+v", v.Status, v.Requests[0])
	}
	// Nothing is due any more: the next tick sends nothing.
	tick("2026-11-26T07:33:00Z")
	if n := len(fn.Invocations()); n != 1 {
		t.Errorf("%d invocations after the request ended, want 1", n)
	}
}

// sentTakeovers records the takeovers a tick hands on.
type sentTakeovers struct{ got []agent.Takeover }

func (s *sentTakeovers) Takeover(_ context.Context, tk agent.Takeover) error {
	s.got = append(s.got, tk)
	return nil
}

// TestScheduleSweepsEveryFifthTick: with the reaper on, the one-minute
// schedule re-drives outbox items older than the sweep age only on the
// ticks of every fifth minute; the others only reap.
func TestScheduleSweepsEveryFifthTick(t *testing.T) {
	f := newFixture(t, 0)
	f.h.SweepAge = time.Nanosecond
	sent := &sentTakeovers{}
	f.h.Takeovers = sent
	_, item := f.pause(t)
	time.Sleep(10 * time.Millisecond)
	f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-11-26T07:31:00Z"})
	if got := f.hooks.Delivered(); len(got) != 0 {
		t.Fatalf("a tick of minute 31 re-drove the outbox: %+v", got)
	}
	f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-11-26T07:35:00Z"})
	if got := f.hooks.Delivered(); len(got) != 1 || got[0].ID != item.DeliveryID() {
		t.Errorf("the tick of minute 35: %+v, want the paused item re-driven", got)
	}
	if len(sent.got) != 0 {
		t.Errorf("takeovers of a paused, unexpired request: %+v", sent.got)
	}
}
