package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// fullTask writes a task with everything that lives under it: entries (one of
// them split in DynamoDB), a request record, two requests' events, its session
// index entry. It returns the task at its last version.
func fullTask(tb testing.TB, s agent.Store, session string) *agent.Task {
	tb.Helper()
	task := newTask("u1", "acc", session)
	create(tb, s, task, textItem(1, "hello"), bigItem(2, 400_000))
	n := next(task)
	n.Status = agent.StatusCompleted
	n.NextSeq = 4
	update(tb, s, &agent.Write{Task: n, PrevVersion: task.Version, Items: []agent.Item{textItem(3, "bye")},
		Artifacts: []agent.Artifact{artifact(task, "report.md", 2)},
		Requests:  []agent.RequestRecord{{RequestView: agent.RequestView{RequestID: task.Active.ID, Status: agent.StatusCompleted, CreatedAt: base}}}})
	exp := time.Now().Add(eventlog.TTL)
	appendEvents(tb, s, task.ID, task.Active.ID, events(1, 3, "a", 0), exp)
	appendEvents(tb, s, task.ID, id(), events(1, 2, "b", 0), exp)
	return n
}

// wantGone checks that the task is absent from every read.
func wantGone(tb testing.TB, s agent.Store, task *agent.Task, kept *agent.Task) {
	tb.Helper()
	ctx := context.Background()
	wantAbsent(tb, s, task)
	if got, err := s.ListItems(ctx, task, 0, 10); err != nil || len(got) != 0 {
		tb.Errorf("ListItems = %d items, %v; want none", len(got), err)
	}
	if got, err := s.ListRequests(ctx, task.ID); err != nil || len(got) != 0 {
		tb.Errorf("ListRequests = %v, %v; want none", got, err)
	}
	wantEvents(tb, s, task.ID, task.Active.ID, 0, nil)
	if got, err := s.ListArtifacts(ctx, task.ID); err != nil || len(got) != 0 {
		tb.Errorf("ListArtifacts = %v, %v; want none", got, err)
	}
	want := []agent.TaskSummary{kept.Summary()}
	got, _, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", Limit: 10})
	if err != nil {
		tb.Fatal(err)
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		tb.Errorf("ListUserTasks: only the other task (-want +got):\n%s", diff)
	}
	got, _, err = s.ListSessionTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: task.SessionID, Limit: 10})
	if err != nil {
		tb.Fatal(err)
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		tb.Errorf("ListSessionTasks: only the other task (-want +got):\n%s", diff)
	}
}

func testDeleteTask(t *testing.T, s agent.Store) {
	ctx := context.Background()
	session := id()
	kept := newTask("u1", "acc", session)
	kept.CreatedAt = base.Add(-time.Hour)
	create(t, s, kept)
	task := fullTask(t, s, session)

	stale := task.Clone()
	stale.Version--
	wantConflict(t, s.DeleteTask(ctx, stale), task)
	if got, items := mustLoad(t, s, task.ID); got.Version != task.Version || len(items) != 3 {
		t.Fatalf("after a refused delete: version %d, %d items; want %d, 3", got.Version, len(items), task.Version)
	}
	wantEvents(t, s, task.ID, task.Active.ID, 0, events(1, 3, "a", 0))

	if err := s.DeleteTask(ctx, task); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	wantGone(t, s, task, kept)
	if err := s.DeleteTask(ctx, task); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("DeleteTask of a deleted task: got %v, want ErrNotFound", err)
	}
	if _, items := mustLoad(t, s, kept.ID); len(items) != 0 {
		t.Errorf("the other task: %d items, want 0", len(items))
	}
	if _, err := s.GetSession(ctx, session); err != nil {
		t.Errorf("GetSession: %v; the session stays", err)
	}
}

func testExpireTask(t *testing.T, s agent.Store) {
	ctx := context.Background()
	session := id()
	kept := newTask("u1", "acc", session)
	kept.CreatedAt = base.Add(-time.Hour)
	create(t, s, kept)
	task := fullTask(t, s, session)

	stale := task.Clone()
	stale.Version--
	// Far enough ahead that a loaded machine reads everything before it.
	until := time.Now().Add(5 * time.Second)
	wantConflict(t, s.ExpireTask(ctx, stale, until), task)
	if err := s.ExpireTask(ctx, task, until); err != nil {
		t.Fatalf("ExpireTask: %v", err)
	}
	// Until then, everything is there.
	if _, items := mustLoad(t, s, task.ID); len(items) != 3 {
		t.Errorf("LoadTask before the ttl: %d items, want 3", len(items))
	}
	if got, err := s.ListRequests(ctx, task.ID); err != nil || len(got) != 1 {
		t.Errorf("ListRequests before the ttl = %v, %v; want 1", got, err)
	}
	wantEvents(t, s, task.ID, task.Active.ID, 0, events(1, 3, "a", 0))
	if got, err := s.ListArtifacts(ctx, task.ID); err != nil || len(got) != 1 {
		t.Errorf("ListArtifacts before the ttl = %v, %v; want 1", got, err)
	}
	list, _, err := s.ListSessionTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: session, Limit: 10})
	if err != nil || len(list) != 2 {
		t.Errorf("ListSessionTasks before the ttl = %v, %v; want both tasks", list, err)
	}

	// The ttl is in whole seconds, rounded up.
	time.Sleep(time.Until(until.Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
	wantGone(t, s, task, kept)
	if err := s.ExpireTask(ctx, task, time.Now().Add(time.Hour)); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("ExpireTask of an expired task: got %v, want ErrNotFound", err)
	}
	if _, err := s.GetTask(ctx, kept.ID); err != nil {
		t.Errorf("GetTask(the other task): %v", err)
	}
}

// testExpireTaskCleared: a zero time removes the ttl again (a finished task
// that takes a new request keeps its history).
func testExpireTaskCleared(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := fullTask(t, s, id())
	until := time.Now().Add(time.Second)
	if err := s.ExpireTask(ctx, task, until); err != nil {
		t.Fatalf("ExpireTask: %v", err)
	}
	if err := s.ExpireTask(ctx, task, time.Time{}); err != nil {
		t.Fatalf("ExpireTask(zero): %v", err)
	}
	time.Sleep(time.Until(until.Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
	if _, items := mustLoad(t, s, task.ID); len(items) != 3 {
		t.Errorf("LoadTask after a cleared ttl: %d items, want 3", len(items))
	}
	if got, err := s.ListRequests(ctx, task.ID); err != nil || len(got) != 1 {
		t.Errorf("ListRequests after a cleared ttl = %v, %v; want 1", got, err)
	}
}
