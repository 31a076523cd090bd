package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// outboxKeys lists the request's outbox items' keys as ListRequestOutbox
// reads them.
func outboxKeys(tb testing.TB, s agent.Store, taskID, rid string) []string {
	tb.Helper()
	got, err := s.ListRequestOutbox(context.Background(), taskID, rid)
	if err != nil {
		tb.Fatalf("ListRequestOutbox(%s, %s): %v", taskID, rid, err)
	}
	var keys []string
	for _, o := range got {
		if o.TaskID != taskID || o.RequestID != rid {
			tb.Errorf("ListRequestOutbox(%s, %s) read %s of %s/%s", taskID, rid, o.SK(), o.TaskID, o.RequestID)
		}
		keys = append(keys, o.SK())
	}
	return keys
}

// testRequestOutbox: ListRequestOutbox reads one request's live outbox
// items under its task, a continuation another task's commit put there
// included, in commit order with epochs and event ids compared as numbers
// (an 11-digit event id after a 10-digit one); not another request's (not
// even one whose id starts with this one's), not another task's, not the
// request's other items; a deleted item at once, an expired one never.
func testRequestOutbox(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task)
	rid := task.Active.ID
	item := func(rid string, epoch int, eventID int64, recipient string) agent.OutboxItem {
		return agent.OutboxItem{TaskID: task.ID, RequestID: rid, Epoch: epoch, EventID: eventID, Recipient: recipient,
			Kind: agent.OutboxWebhook, Event: agent.EventRequestPaused, Agent: "acc", UserID: "u1", CreatedAt: base}
	}
	completed := item(rid, 2, 12_345_678_901, "wh0")
	completed.Event = agent.EventRequestCompleted
	paused := item(rid, 2, 9_999_999_999, "wh0")
	heartbeat := item(rid, 1, 40, "ta-0123456789abcdef")
	heartbeat.Kind, heartbeat.Event, heartbeat.Hash = agent.OutboxTaskToken, agent.EventHeartbeat, "0123456789abcdef"
	first := item(rid, 1, 40, "wh0")
	outbox := []agent.OutboxItem{completed, paused, heartbeat, first,
		item(rid+"0", 1, 1, "wh0"), // another request whose id starts with rid
		item(id(), 1, 1, "wh0")}
	tok := agent.TokenItem{TaskID: task.ID, RequestID: rid, Waiter: agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok"}, Hash: "0123456789abcdef"}
	n := next(task)
	update(t, s, &agent.Write{Task: n, PrevVersion: task.Version, Outbox: outbox, Tokens: []agent.TokenItem{tok},
		Decisions: []agent.RequestDecision{{RequestID: rid, Decision: agent.Decision{Round: 1}}}})
	// A child's commit puts its caller's continuation under the caller.
	child := newTask("u1", "leaf", id())
	create(t, s, child)
	cont := agent.OutboxItem{TaskID: task.ID, RequestID: rid, Epoch: 1, EventID: 3, Recipient: agent.ContinueRecipient(child.Active.ID),
		Kind: agent.OutboxContinue, Event: agent.EventContinue, Agent: "acc", UserID: "u1", CreatedAt: base}
	own := item(rid, 1, 1, "wh0")
	own.TaskID = child.ID
	update(t, s, &agent.Write{Task: next(child), PrevVersion: child.Version, Outbox: []agent.OutboxItem{cont, own}})
	// The same request id under the child's task is the child's.
	if got := outboxKeys(t, s, child.ID, rid); len(got) != 1 {
		t.Errorf("under the child's task: %v, want its one item", got)
	}

	want := []string{cont.SK(), heartbeat.SK(), first.SK(), paused.SK(), completed.SK()}
	if diff := cmp.Diff(want, outboxKeys(t, s, task.ID, rid)); diff != "" {
		t.Errorf("ListRequestOutbox (-want +got):\n%s", diff)
	}
	got, err := s.ListRequestOutbox(ctx, task.ID, rid)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(completed, got[len(got)-1], opts); diff != "" {
		t.Errorf("the item as read (-want +got):\n%s", diff)
	}

	if err := s.DeleteOutbox(ctx, task.ID, paused.SK()); err != nil {
		t.Fatal(err)
	}
	want = []string{cont.SK(), heartbeat.SK(), first.SK(), completed.SK()}
	if diff := cmp.Diff(want, outboxKeys(t, s, task.ID, rid)); diff != "" {
		t.Errorf("after a delivery (-want +got):\n%s", diff)
	}
	if got := outboxKeys(t, s, id(), rid); len(got) != 0 {
		t.Errorf("an unknown task: %v", got)
	}

	// Expired items are absent (DynamoDB deletes them late).
	until := time.Now().Add(time.Second)
	if err := s.ExpireTask(ctx, n, until); err != nil {
		t.Fatal(err)
	}
	if got := outboxKeys(t, s, task.ID, rid); len(got) != 4 {
		t.Errorf("before the ttl: %v", got)
	}
	time.Sleep(time.Until(until.Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
	if got := outboxKeys(t, s, task.ID, rid); len(got) != 0 {
		t.Errorf("after the ttl: %v, want none", got)
	}
}

// testOutboxKeepUntil: an item's KeepUntil is its ttl instead of the
// outbox's 7 days (a poll lives as long as its round): one kept for a
// few seconds is absent after it, while one without stays; KeepUntil reads back.
func testOutboxKeepUntil(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	create(t, s, task)
	rid := task.Active.ID
	until := time.Now().Add(3 * time.Second)
	poll := agent.OutboxItem{TaskID: task.ID, RequestID: rid, Epoch: 1, EventID: 2, Recipient: agent.PollRecipient("m1"),
		Kind: agent.OutboxContinue, Event: agent.EventPoll, Agent: "acc", UserID: "u1", CreatedAt: base, KeepUntil: until}
	plain := poll
	plain.EventID, plain.KeepUntil = 3, time.Time{}
	long := poll
	long.EventID, long.KeepUntil = 4, time.Now().Add(40*24*time.Hour).Truncate(time.Second)
	update(t, s, &agent.Write{Task: next(task), PrevVersion: task.Version, Outbox: []agent.OutboxItem{poll, plain, long}})
	got, err := s.GetOutbox(context.Background(), task.ID, long.SK())
	if err != nil {
		t.Fatal(err)
	}
	if !got.KeepUntil.Equal(long.KeepUntil) {
		t.Errorf("KeepUntil read back as %v, want %v", got.KeepUntil, long.KeepUntil)
	}
	if got := outboxKeys(t, s, task.ID, rid); len(got) != 3 {
		t.Errorf("before its ttl: %v", got)
	}
	time.Sleep(time.Until(until.Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
	want := []string{plain.SK(), long.SK()}
	if diff := cmp.Diff(want, outboxKeys(t, s, task.ID, rid)); diff != "" {
		t.Errorf("after the poll's ttl (-want +got):\n%s", diff)
	}
}
