package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// testDecisions: decided rounds are items of their own (DEC#<rid>#<round>),
// read back by request then round (round 10 after round 2), of one request
// or of the task; a write's decisions land with it or not at all; a
// deleted task has none.
func testDecisions(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task)
	r1, r2 := task.Active.ID, id()
	dec := func(rid string, round int, action string) agent.RequestDecision {
		reason := "because"
		return agent.RequestDecision{RequestID: rid, Decision: agent.Decision{Round: round, Approver: "u1", DecidedAt: base.Add(time.Duration(round) * time.Minute),
			Action: action, Reason: &reason, Calls: []agent.CallDecision{{ToolCallID: "t" + action, Action: action, Input: []byte(`{"path":"a"}`), InputHash: "h"}}}}
	}
	n := next(task)
	update(t, s, &agent.Write{Task: n, PrevVersion: 1, Decisions: []agent.RequestDecision{dec(r1, 10, "approve"), dec(r2, 1, "reject")}})
	n2 := next(n)
	update(t, s, &agent.Write{Task: n2, PrevVersion: 2, Decisions: []agent.RequestDecision{dec(r1, 2, "edit")}})
	// A write that fails its condition puts no decision.
	if err := s.Write(ctx, &agent.Write{Task: next(n), PrevVersion: 2, Decisions: []agent.RequestDecision{dec(r1, 3, "approve")}}); err == nil {
		t.Fatal("a write at a stale version landed")
	}

	got, err := s.ListDecisions(ctx, task.ID, r1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agent.RequestDecision{dec(r1, 2, "edit"), dec(r1, 10, "approve")}, got, opts); diff != "" {
		t.Errorf("ListDecisions(r1) by round (-want +got):\n%s", diff)
	}
	all, err := s.ListDecisions(ctx, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("ListDecisions(task) = %d decisions, want 3: %+v", len(all), all)
	}
	for i := 1; i < len(all); i++ {
		if a, b := all[i-1], all[i]; a.RequestID > b.RequestID || (a.RequestID == b.RequestID && a.Decision.Round > b.Decision.Round) {
			t.Errorf("ListDecisions(task) out of order at %d: %s/%d before %s/%d", i, a.RequestID, a.Decision.Round, b.RequestID, b.Decision.Round)
		}
	}
	if got, err := s.ListDecisions(ctx, id(), ""); err != nil || len(got) != 0 {
		t.Errorf("ListDecisions(unknown task) = %v, %v; want none", got, err)
	}
	if err := s.DeleteTask(ctx, n2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ListDecisions(ctx, task.ID, ""); err != nil || len(got) != 0 {
		t.Errorf("ListDecisions(deleted task) = %v, %v; want none", got, err)
	}
}

// testEventsEpochs: batches of different claim epochs are kept apart
// (EVT#<rid>#<epoch>#<first id>): a stalled holder's late flush under the
// old epoch overwrites nothing of the taker's, ListEvents returns both with
// their epoch, and Visible drops what the cut hides.
func testEventsEpochs(t *testing.T, s agent.Store) {
	tid, rid := id(), id()
	exp := time.Now().Add(eventlog.TTL)
	epoch := func(n int, evs []eventlog.Event) []eventlog.Event {
		for i := range evs {
			evs[i].Epoch = n
		}
		return evs
	}
	old := epoch(1, events(1, 5, "old", 0))
	appendEvents(t, s, tid, rid, old, exp)
	taker := epoch(2, events(6, 9, "taker", 0))
	appendEvents(t, s, tid, rid, taker, exp)
	late := epoch(1, events(6, 8, "late", 0)) // flushed by the old holder after the takeover
	appendEvents(t, s, tid, rid, late, exp)

	got, err := s.ListEvents(context.Background(), tid, rid, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]eventlog.Event{}, old...)
	for i := range taker[:3] {
		want = append(want, late[i], taker[i]) // by id, then epoch
	}
	want = append(want, taker[3])
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("ListEvents across epochs (-want +got):\n%s", diff)
	}
	visible := eventlog.Visible(got, []eventlog.Cut{{Epoch: 1, Last: 5}})
	if diff := cmp.Diff(append(append([]eventlog.Event{}, old...), taker...), visible, opts); diff != "" {
		t.Errorf("Visible with the old leg cut at 5 (-want +got):\n%s", diff)
	}
}

// testOutboxElsewhere: an outbox item for another task (a child's commit
// owes its caller a continuation, docs/architecture.md) is put under that task: read
// and deleted there, listed, and kept when the task is deleted, until the
// dispatcher deletes it.
func testOutboxElsewhere(t *testing.T, s agent.Store) {
	ctx := context.Background()
	parent := newTask("u1", "desk", id())
	create(t, s, parent)
	child := newTask("u1", "leaf", id())
	create(t, s, child)
	o := agent.OutboxItem{TaskID: parent.ID, RequestID: parent.Active.ID, Epoch: 1, EventID: 7, Recipient: agent.ContinueRecipient(child.Active.ID),
		Kind: agent.OutboxContinue, Event: agent.EventContinue, Agent: "desk", UserID: "u1", CreatedAt: base}
	update(t, s, &agent.Write{Task: next(child), PrevVersion: 1, Outbox: []agent.OutboxItem{o}})
	if _, err := s.GetOutbox(ctx, child.ID, o.SK()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the item is under the child's task: %v", err)
	}
	got, err := s.GetOutbox(ctx, parent.ID, o.SK())
	if err != nil || got.Kind != agent.OutboxContinue || got.RequestID != parent.Active.ID {
		t.Fatalf("GetOutbox under the caller's task: %+v %v", got, err)
	}
	list, err := s.ListOutbox(ctx, base.Add(time.Hour), 0)
	if err != nil || !slices.ContainsFunc(list, func(x agent.OutboxItem) bool { return x.SK() == o.SK() && x.TaskID == parent.ID }) {
		t.Errorf("ListOutbox: %+v %v", list, err)
	}
	p, err := s.GetTask(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A delete keeps what the task still owes (docs/api.md, Delete a
	// task): the dispatcher delivers the item, or finds the task gone,
	// and deletes it.
	if _, err := s.GetOutbox(ctx, parent.ID, o.SK()); err != nil {
		t.Errorf("the item owed went with its task: %v", err)
	}
	if err := s.DeleteOutbox(ctx, parent.ID, o.SK()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetOutbox(ctx, parent.ID, o.SK()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the item outlived its delivery: %v", err)
	}
}

// testJoins: a child's outcome put for its caller (JOIN#, docs/architecture.md) is
// read with the caller's task by LoadTask and LoadContext, and deleted
// with it.
func testJoins(t *testing.T, s agent.Store) {
	ctx := context.Background()
	caller := newTask("u1", "desk", id())
	create(t, s, caller, textItem(1, "ask leaf"))
	child := newTask("u1", "leaf", id())
	create(t, s, child)
	j := agent.Join{CallerTaskID: caller.ID, RequestID: caller.Active.ID, ToolCallID: "tc1", Agent: "leaf", TaskID: child.ID,
		ChildRequestID: child.Active.ID, Status: agent.StatusCompleted, Output: "done"}
	update(t, s, &agent.Write{Task: next(child), PrevVersion: 1, Joins: []agent.Join{j}})
	for name, load := range map[string]func(context.Context, string) (*agent.Task, []agent.Item, error){"LoadTask": s.LoadTask, "LoadContext": s.LoadContext} {
		got, items, err := load(ctx, caller.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Join{j}, got.Joins); diff != "" {
			t.Errorf("%s(caller).Joins (-want +got):\n%s", name, diff)
		}
		if len(items) != 1 {
			t.Errorf("%s(caller) items: %d, want the one entry", name, len(items))
		}
		other, _, err := load(ctx, child.ID)
		if err != nil || len(other.Joins) != 0 {
			t.Errorf("%s(child).Joins = %v %v", name, other.Joins, err)
		}
	}
	c, err := s.GetTask(ctx, caller.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(ctx, c); err != nil {
		t.Fatal(err)
	}
	again := newTask("u1", "desk", id())
	again.ID = caller.ID
	create(t, s, again)
	if got, _, err := s.LoadTask(ctx, caller.ID); err != nil || len(got.Joins) != 0 {
		t.Errorf("a join outlived its task: %v %v", got.Joins, err)
	}
}

// testDeleteKeepsOwedRecords: a delete keeps the record of a request an
// outbox item is owed for (its payload: docs/api.md, Delete a task), and
// no other.
func testDeleteKeepsOwedRecords(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task)
	owed, done := task.Active.ID, id()
	rec := func(rid string) agent.RequestRecord {
		return agent.RequestRecord{RequestView: agent.RequestView{RequestID: rid, Kind: agent.KindInvoke, Status: agent.StatusCompleted, CreatedAt: base, UpdatedAt: base}, Output: "out " + rid}
	}
	n := next(task)
	n.Active, n.Status = nil, agent.StatusCompleted
	o := agent.OutboxItem{TaskID: task.ID, RequestID: owed, Epoch: 1, EventID: 3, Recipient: agent.WebhookRecipient(0),
		Kind: agent.OutboxWebhook, Event: agent.EventRequestCompleted, Agent: "acc", UserID: "u1", CreatedAt: base}
	update(t, s, &agent.Write{Task: n, PrevVersion: task.Version, Requests: []agent.RequestRecord{rec(owed), rec(done)}, Outbox: []agent.OutboxItem{o}})
	cur, err := s.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(ctx, cur); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ListRequests(ctx, task.ID)
	if err != nil || len(recs) != 1 || recs[0].RequestID != owed || recs[0].Output != "out "+owed {
		t.Errorf("the records after the delete: %+v %v; want the owed request's alone", recs, err)
	}
	if _, err := s.GetTask(ctx, task.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetTask after the delete: %v", err)
	}
}
