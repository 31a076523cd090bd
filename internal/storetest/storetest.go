// Package storetest is the conformance suite of agent.Store: one set of tests
// that every store (memstore, dynamo) must pass, so that memory and DynamoDB
// keep exactly the same semantics (docs/architecture.md).
//
// A store's test calls Run with a constructor that returns a fresh, empty
// store for each subtest.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Run runs the suite. newStore returns an empty store; it may register
// cleanups on tb.
func Run(t *testing.T, newStore func(tb testing.TB) agent.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s agent.Store)
	}{
		{"CreateTask", testCreateTask},
		{"CreateTwiceConflicts", testCreateTwice},
		{"VersionGuardedUpdate", testUpdate},
		{"StaleVersionConflicts", testStaleVersion},
		{"UpdateMissingConflicts", testUpdateMissing},
		{"RetriedWriteThatLanded", testRetriedWrite},
		{"SessionOwnedByAnother", testSessionOwner},
		{"ItemsPastNextSeqInvisible", testNextSeq},
		{"LoadTaskBigHistory", testBigHistory},
		{"LoadContext", testLoadContext},
		{"ListItemsPaging", testListItems},
		{"Requests", testRequests},
		{"ListUserTasks", testListUserTasks},
		{"ListSessionTasks", testListSessionTasks},
		{"BadCursor", testBadCursor},
		{"ExpiredIsAbsent", testExpired},
		{"NoAliasing", testNoAliasing},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Idempotency", testIdem},
		{"IdempotencyConcurrent", testIdemConcurrent},
		{"Events", testEvents},
		{"EventsRetried", testEventsRetried},
		{"EventsBig", testEventsBig},
		{"EventsExpired", testEventsExpired},
		{"EventsExtended", testEventsExtended},
		{"EventsPaged", testEventsPaged},
		{"DeleteTask", testDeleteTask},
		{"Artifacts", testArtifacts},
		{"ArtifactsOfAConflictingWrite", testArtifactsConflict},
		{"ArtifactQuota", testArtifactQuota},
		{"ExpireTask", testExpireTask},
		{"ExpireTaskCleared", testExpireTaskCleared},
		{"RenewLease", testRenewLease},
		{"RequestLookup", testRequestLookup},
		{"Decisions", testDecisions},
		{"EventsEpochs", testEventsEpochs},
		{"OutboxElsewhere", testOutboxElsewhere},
		{"DeleteKeepsOwedRecords", testDeleteKeepsOwedRecords},
		{"Joins", testJoins},
		{"RequestOutbox", testRequestOutbox},
		{"OutboxKeepUntil", testOutboxKeepUntil},
		{"WriteTogether", testWriteTogether},
		{"WriteTogetherTooLarge", testWriteTogetherTooLarge},
		{"ReapStatesTwice", testReapStatesTwice},
		{"PendingInputs", testInputs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

// opts compare stored values: JSON round-trips turn empty into nil; byte
// slices (1 MB images) compare at once rather than element by element.
var opts = cmp.Options{cmpopts.EquateEmpty(),
	cmp.FilterValues(func(a, b []byte) bool { return len(a)+len(b) > 0 }, cmp.Comparer(bytes.Equal))}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func id() string { return uuid.Must(uuid.NewV7()).String() }

func newTask(user, agentName, session string) *agent.Task {
	return &agent.Task{
		ID: id(), SessionID: session, Agent: agentName, UserID: user,
		Status: agent.StatusRunning, CreatedAt: base, UpdatedAt: base,
		Metadata: map[string]string{"ticket": "ACME-42"},
		Version:  1, NextSeq: 1, WriteID: id(),
		Active: &agent.ActiveRequest{ID: id(), Kind: agent.KindInvoke, Status: agent.StatusRunning,
			ClaimToken: id(), LeaseUntil: base.Add(15 * time.Minute), Round: 1, CreatedAt: base, FirstSeq: 1},
	}
}

func textItem(seq int64, text string) agent.Item {
	return agent.Item{Seq: seq, RequestID: "r", Role: agent.RoleUser, CreatedAt: base.Add(time.Duration(seq) * time.Second),
		Content: []agent.Block{agent.TextBlock(text)}}
}

func link(t *agent.Task) *agent.SessionLink {
	return &agent.SessionLink{SessionID: t.SessionID, UserID: t.UserID, TaskID: t.ID, Agent: t.Agent, CreatedAt: t.CreatedAt}
}

// create writes a new task with its session link and items.
func create(tb testing.TB, s agent.Store, t *agent.Task, items ...agent.Item) {
	tb.Helper()
	t.NextSeq = int64(len(items)) + 1
	if err := s.Write(context.Background(), &agent.Write{Task: t, Items: items, Session: link(t)}); err != nil {
		tb.Fatalf("create task %s: %v", t.ID, err)
	}
}

// next returns the task's successor for a version-guarded update.
func next(t *agent.Task) *agent.Task {
	n := t.Clone()
	n.Version++
	n.WriteID = id()
	n.UpdatedAt = n.UpdatedAt.Add(time.Second)
	return n
}

func update(tb testing.TB, s agent.Store, w *agent.Write) {
	tb.Helper()
	if err := s.Write(context.Background(), w); err != nil {
		tb.Fatalf("update task %s to version %d: %v", w.Task.ID, w.Task.Version, err)
	}
}

func mustLoad(tb testing.TB, s agent.Store, taskID string) (*agent.Task, []agent.Item) {
	tb.Helper()
	got, items, err := s.LoadTask(context.Background(), taskID)
	if err != nil {
		tb.Fatalf("LoadTask(%s): %v", taskID, err)
	}
	return got, items
}

func wantConflict(tb testing.TB, err error, current *agent.Task) {
	tb.Helper()
	var ce *agent.ConflictError
	if !errors.As(err, &ce) {
		tb.Fatalf("Write: got error %v, want *agent.ConflictError", err)
	}
	if !errors.Is(err, agent.ErrConflict) {
		tb.Errorf("errors.Is(%v, ErrConflict) = false", err)
	}
	if diff := cmp.Diff(current, ce.Current, opts); diff != "" {
		tb.Errorf("ConflictError.Current (-want +got):\n%s", diff)
	}
}

func testCreateTask(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	items := []agent.Item{textItem(1, "hello"), {Seq: 2, RequestID: "r", Role: agent.RoleAssistant, CreatedAt: base,
		Content: []agent.Block{{Type: agent.BlockToolUse, ID: "c1", Name: "get_time", Input: []byte(`{"tz":"UTC"}`)}}}}
	create(t, s, task, items...)

	got, gotItems := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(task, got, opts); diff != "" {
		t.Errorf("LoadTask task (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(items, gotItems, opts); diff != "" {
		t.Errorf("LoadTask items (-want +got):\n%s", diff)
	}
	meta, err := s.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if diff := cmp.Diff(task, meta, opts); diff != "" {
		t.Errorf("GetTask (-want +got):\n%s", diff)
	}
	sess, err := s.GetSession(ctx, task.SessionID)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if diff := cmp.Diff(&agent.Session{ID: task.SessionID, UserID: "u1", CreatedAt: base}, sess, opts); diff != "" {
		t.Errorf("GetSession (-want +got):\n%s", diff)
	}
	list, _, err := s.ListSessionTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: task.SessionID, Limit: 10})
	if err != nil {
		t.Fatalf("ListSessionTasks: %v", err)
	}
	if diff := cmp.Diff([]agent.TaskSummary{task.Summary()}, list, opts); diff != "" {
		t.Errorf("ListSessionTasks (-want +got):\n%s", diff)
	}
	for _, missing := range []func() error{
		func() error { _, err := s.GetTask(ctx, id()); return err },
		func() error { _, _, err := s.LoadTask(ctx, id()); return err },
		func() error { _, err := s.GetSession(ctx, id()); return err },
	} {
		if err := missing(); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("reading a missing record: got %v, want ErrNotFound", err)
		}
	}
}

func testCreateTwice(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	create(t, s, task)
	again := task.Clone()
	again.WriteID = id()
	again.Status = agent.StatusCompleted
	err := s.Write(context.Background(), &agent.Write{Task: again, Session: link(again)})
	wantConflict(t, err, task)
	got, _ := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(task, got, opts); diff != "" {
		t.Errorf("after the refused create (-want +got):\n%s", diff)
	}
}

func testUpdate(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	create(t, s, task, textItem(1, "hi"))
	n := next(task)
	n.Status = agent.StatusCompleted
	n.Active = nil
	n.NextSeq = 3
	update(t, s, &agent.Write{Task: n, PrevVersion: 1, Items: []agent.Item{textItem(2, "answer")}})
	got, items := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(n, got, opts); diff != "" {
		t.Errorf("task after update (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]agent.Item{textItem(1, "hi"), textItem(2, "answer")}, items, opts); diff != "" {
		t.Errorf("items after update (-want +got):\n%s", diff)
	}
}

func testStaleVersion(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	create(t, s, task)
	winner := next(task)
	winner.Status = agent.StatusPaused
	update(t, s, &agent.Write{Task: winner, PrevVersion: 1})
	loser := next(task)
	loser.Status = agent.StatusFailed
	loser.NextSeq = 2
	err := s.Write(context.Background(), &agent.Write{Task: loser, PrevVersion: 1, Items: []agent.Item{textItem(1, "lost")}})
	wantConflict(t, err, winner)
	got, items := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(winner, got, opts); diff != "" {
		t.Errorf("task after the stale write (-want +got):\n%s", diff)
	}
	if len(items) != 0 {
		t.Errorf("items after the stale write = %v, want none", items)
	}
}

func testUpdateMissing(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	task.Version = 4
	err := s.Write(context.Background(), &agent.Write{Task: task, PrevVersion: 3})
	wantConflict(t, err, nil)
	if _, err := s.GetTask(context.Background(), task.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetTask after the refused update: got %v, want ErrNotFound", err)
	}
}

func testRetriedWrite(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	first := &agent.Write{Task: task, Session: link(task), Items: []agent.Item{textItem(1, "hi")}}
	task.NextSeq = 2
	if err := s.Write(ctx, first); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.Write(ctx, first); err != nil {
		t.Errorf("the same create retried after it landed: %v, want nil", err)
	}
	n := next(task)
	n.Status = agent.StatusCompleted
	w := &agent.Write{Task: n, PrevVersion: 1}
	update(t, s, w)
	if err := s.Write(ctx, w); err != nil {
		t.Errorf("the same update retried after it landed: %v, want nil", err)
	}
	got, items := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(n, got, opts); diff != "" {
		t.Errorf("task after retries (-want +got):\n%s", diff)
	}
	if len(items) != 1 {
		t.Errorf("items after retries: %d, want 1", len(items))
	}
	// A retry of a landed write changes nothing, even after a later write.
	// (DynamoDB's idempotency token answers success for 10 minutes.)
	n2 := next(n)
	update(t, s, &agent.Write{Task: n2, PrevVersion: 2})
	if err := s.Write(ctx, w); err != nil {
		t.Errorf("the landed update retried after a later write: %v, want nil", err)
	}
	if got, _ := mustLoad(t, s, task.ID); !cmp.Equal(n2, got, opts) {
		t.Errorf("a retried write changed the task: got version %d write %s, want the later write %s", got.Version, got.WriteID, n2.WriteID)
	}
}

func testSessionOwner(t *testing.T, s agent.Store) {
	ctx := context.Background()
	sid := id()
	mine := newTask("alice", "acc", sid)
	create(t, s, mine)

	theirs := newTask("mallory", "acc", sid)
	theirs.CreatedAt = base.Add(time.Minute)
	theirs.NextSeq = 2
	err := s.Write(ctx, &agent.Write{Task: theirs, Session: link(theirs), Items: []agent.Item{textItem(1, "x")}})
	if !errors.Is(err, agent.ErrSessionOwner) {
		t.Fatalf("Write into another user's session: got %v, want ErrSessionOwner", err)
	}
	if _, _, err := s.LoadTask(ctx, theirs.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("LoadTask of the refused task: got %v, want ErrNotFound", err)
	}
	if got, _, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "mallory", Agent: "acc", Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("ListUserTasks(mallory) = %v, %v; want nothing", got, err)
	}

	// The owner's second task joins the session; the session keeps its creation time.
	second := newTask("alice", "acc", sid)
	second.CreatedAt = base.Add(2 * time.Minute)
	create(t, s, second)
	sess, err := s.GetSession(ctx, sid)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if diff := cmp.Diff(&agent.Session{ID: sid, UserID: "alice", CreatedAt: base}, sess, opts); diff != "" {
		t.Errorf("GetSession (-want +got):\n%s", diff)
	}
	list, _, err := s.ListSessionTasks(ctx, agent.ListQuery{UserID: "alice", Agent: "acc", SessionID: sid, Limit: 10})
	if err != nil {
		t.Fatalf("ListSessionTasks: %v", err)
	}
	if diff := cmp.Diff([]agent.TaskSummary{second.Summary(), mine.Summary()}, list, opts); diff != "" {
		t.Errorf("ListSessionTasks (-want +got):\n%s", diff)
	}
}

func testNextSeq(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	items := []agent.Item{textItem(1, "a"), textItem(2, "b"), textItem(3, "landed early")}
	if err := s.Write(ctx, &agent.Write{Task: task, Session: link(task), Items: items}); err != nil {
		t.Fatal(err)
	}
	task.NextSeq = 3 // set after the write: the write's own value decides
	_ = task
	got, gotItems := mustLoad(t, s, task.ID)
	if got.NextSeq != 1 {
		t.Fatalf("NextSeq = %d, want 1", got.NextSeq)
	}
	if len(gotItems) != 0 {
		t.Errorf("LoadTask with NextSeq 1: %d items, want none", len(gotItems))
	}
	n := next(got)
	n.NextSeq = 3
	update(t, s, &agent.Write{Task: n, PrevVersion: 1})
	_, gotItems = mustLoad(t, s, task.ID)
	if diff := cmp.Diff(items[:2], gotItems, opts); diff != "" {
		t.Errorf("LoadTask with NextSeq 3 (-want +got):\n%s", diff)
	}
	listed, err := s.ListItems(ctx, n, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(items[:2], listed, opts); diff != "" {
		t.Errorf("ListItems with NextSeq 3 (-want +got):\n%s", diff)
	}
}

// bigItem is an entry whose JSON is far over 300 KB: a user message with an
// image of size bytes.
func bigItem(seq int64, size int) agent.Item {
	img := make([]byte, size)
	for i := range img {
		img[i] = byte(i*7 + int(seq))
	}
	it := textItem(seq, fmt.Sprintf("look at picture %d", seq))
	it.Content = append(it.Content, agent.Block{Type: agent.BlockImage, MediaType: "image/png", Data: img})
	return it
}

func testBigHistory(t *testing.T, s agent.Store) {
	// 150 small entries (more than one transaction's 100 actions), then entries
	// of 1 MB images and multi-byte text (more than one transaction's bytes).
	task := newTask("u1", "acc", id())
	var want []agent.Item
	for i := int64(1); i <= 150; i++ {
		want = append(want, textItem(i, strings.Repeat("x", 100)))
	}
	create(t, s, task, want...)

	n := next(task)
	big := []agent.Item{bigItem(151, 1<<20), bigItem(152, 1<<20), textItem(153, strings.Repeat("é✓", 120_000)), bigItem(154, 1<<20)}
	n.NextSeq = 155
	update(t, s, &agent.Write{Task: n, PrevVersion: 1, Items: big})
	want = append(want, big...)

	got, items := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(n, got, opts); diff != "" {
		t.Errorf("LoadTask task (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, items, opts); diff != "" {
		t.Errorf("LoadTask items (-want +got):\n%s", diff)
	}
	paged, err := s.ListItems(context.Background(), n, 149, 4)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[149:153], paged, opts); diff != "" {
		t.Errorf("ListItems(after 149, limit 4) (-want +got):\n%s", diff)
	}
}

func testListItems(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	var want []agent.Item
	for i := int64(1); i <= 10; i++ {
		want = append(want, textItem(i, fmt.Sprint("entry ", i)))
	}
	create(t, s, task, want...)
	var got []agent.Item
	after := int64(0)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("ListItems does not end")
		}
		page, err := s.ListItems(context.Background(), task, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("ListItems(limit 3) returned %d", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("ListItems pages (-want +got):\n%s", diff)
	}
	if page, err := s.ListItems(context.Background(), task, 10, 3); err != nil || len(page) != 0 {
		t.Errorf("ListItems(after the last) = %v, %v; want none", page, err)
	}
}

func testRequests(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task)
	stop := "end_turn"
	reqs := []agent.RequestRecord{
		{RequestView: agent.RequestView{RequestID: id(), Kind: agent.KindInvoke, Status: agent.StatusCompleted, CreatedAt: base.Add(time.Hour), UpdatedAt: base.Add(time.Hour),
			Usage: agent.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, StopReason: &stop}, Output: "done", Round: 1},
		{RequestView: agent.RequestView{RequestID: id(), Kind: agent.KindInvoke, Status: agent.StatusFailed, CreatedAt: base, UpdatedAt: base,
			Error: &agent.ErrorInfo{Code: agent.CodeModelError, Message: "boom"}}},
	}
	n := next(task)
	update(t, s, &agent.Write{Task: n, PrevVersion: 1, Requests: reqs})
	got, err := s.ListRequests(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agent.RequestRecord{reqs[1], reqs[0]}, got, opts); diff != "" {
		t.Errorf("ListRequests, oldest first (-want +got):\n%s", diff)
	}
	if got, err := s.ListRequests(ctx, id()); err != nil || len(got) != 0 {
		t.Errorf("ListRequests(unknown task) = %v, %v; want none", got, err)
	}
}

// listAll pages through a list with the given limit, failing on duplicates.
func listAll(tb testing.TB, list func(context.Context, agent.ListQuery) ([]agent.TaskSummary, string, error), q agent.ListQuery) []agent.TaskSummary {
	tb.Helper()
	var all []agent.TaskSummary
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 50 {
			tb.Fatal("the list does not end")
		}
		page, cursor, err := list(context.Background(), q)
		if err != nil {
			tb.Fatalf("list %+v: %v", q, err)
		}
		if len(page) > q.Limit {
			tb.Fatalf("list returned %d, limit %d", len(page), q.Limit)
		}
		for _, s := range page {
			if seen[s.TaskID] {
				tb.Errorf("task %s listed twice", s.TaskID)
			}
			seen[s.TaskID] = true
		}
		all = append(all, page...)
		if cursor == "" {
			return all
		}
		if len(page) == 0 {
			tb.Errorf("an empty page with a cursor")
		}
		q.Cursor = cursor
	}
}

func testListUserTasks(t *testing.T, s agent.Store) {
	ctx := context.Background()
	statuses := []agent.Status{agent.StatusPaused, agent.StatusCompleted, agent.StatusRunning, agent.StatusPaused,
		agent.StatusFailed, agent.StatusCanceled, agent.StatusCompleted, agent.StatusPaused, agent.StatusCompleted}
	var tasks []*agent.Task // u1's acc tasks, oldest updated first
	for i, st := range statuses {
		tk := newTask("u1", "acc", id())
		tk.Status = st
		tk.UpdatedAt = base.Add(time.Duration(i) * time.Minute)
		if i == 4 { // a tie: same instant as the previous, ordered by id
			tk.UpdatedAt = tasks[3].UpdatedAt
		}
		create(t, s, tk)
		tasks = append(tasks, tk)
	}
	// Other users and agents must not show.
	for _, o := range []*agent.Task{newTask("u2", "acc", id()), newTask("u1", "other", id())} {
		o.Status = agent.StatusPaused
		o.UpdatedAt = base.Add(time.Hour)
		create(t, s, o)
	}
	newestFirst := func(st agent.Status) []agent.TaskSummary {
		var out []agent.TaskSummary
		for i := len(tasks) - 1; i >= 0; i-- {
			if st == "" || tasks[i].Status == st {
				out = append(out, tasks[i].Summary())
			}
		}
		if st == "" { // the tie: the greater id first
			if out[4].TaskID < out[5].TaskID {
				out[4], out[5] = out[5], out[4]
			}
		}
		return out
	}
	for _, st := range []agent.Status{"", agent.StatusPaused, agent.StatusCompleted, agent.StatusRunning, agent.StatusFailed} {
		for _, limit := range []int{1, 2, 3, 100} {
			t.Run(fmt.Sprintf("status=%s/limit=%d", st, limit), func(t *testing.T) {
				got := listAll(t, s.ListUserTasks, agent.ListQuery{UserID: "u1", Agent: "acc", Status: st, Limit: limit})
				if diff := cmp.Diff(newestFirst(st), got, opts); diff != "" {
					t.Errorf("ListUserTasks (-want +got):\n%s", diff)
				}
			})
		}
	}
	// A status change moves the task to the other status and to the top.
	moved := next(tasks[0])
	moved.Status = agent.StatusCompleted
	moved.UpdatedAt = base.Add(2 * time.Hour)
	update(t, s, &agent.Write{Task: moved, PrevVersion: 1})
	paused, _, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", Status: agent.StatusPaused, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agent.TaskSummary{tasks[7].Summary(), tasks[3].Summary()}, paused, opts); diff != "" {
		t.Errorf("Paused after a change (-want +got):\n%s", diff)
	}
	top, _, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agent.TaskSummary{moved.Summary()}, top, opts); diff != "" {
		t.Errorf("newest after a change (-want +got):\n%s", diff)
	}
	if got, cur, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "nobody", Agent: "acc", Limit: 5}); err != nil || len(got) != 0 || cur != "" {
		t.Errorf("ListUserTasks(nobody) = %v, %q, %v; want nothing", got, cur, err)
	}
}

func testListSessionTasks(t *testing.T, s agent.Store) {
	sid := id()
	var want []agent.TaskSummary
	for i := range 9 {
		agentName := "acc"
		if i%3 == 1 {
			agentName = "other"
		}
		tk := newTask("u1", agentName, sid)
		tk.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		tk.UpdatedAt = base.Add(time.Duration(9-i) * time.Hour) // not the order of the list
		create(t, s, tk)
		if agentName == "acc" {
			want = append([]agent.TaskSummary{tk.Summary()}, want...)
		}
	}
	create(t, s, newTask("u1", "acc", id())) // another session
	for _, limit := range []int{1, 2, 4, 100} {
		got := listAll(t, s.ListSessionTasks, agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: sid, Limit: limit})
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ListSessionTasks(limit %d) (-want +got):\n%s", limit, diff)
		}
	}
	page, cursor, err := s.ListSessionTasks(context.Background(), agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: sid, Limit: 2})
	if err != nil || len(page) != 2 || cursor == "" {
		t.Errorf("ListSessionTasks(limit 2) = %d tasks, cursor %q, %v; want a full page across the other agent's tasks and a cursor", len(page), cursor, err)
	}
	if got, _, err := s.ListSessionTasks(context.Background(), agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: id(), Limit: 5}); err != nil || len(got) != 0 {
		t.Errorf("ListSessionTasks(unknown session) = %v, %v; want nothing", got, err)
	}
}

func testBadCursor(t *testing.T, s agent.Store) {
	for _, c := range []string{"%%%", "bm90IGpzb24", "e30"} { // not base64; "not json"; "{}"
		for name, list := range map[string]func(context.Context, agent.ListQuery) ([]agent.TaskSummary, string, error){
			"ListUserTasks": s.ListUserTasks, "ListSessionTasks": s.ListSessionTasks,
		} {
			_, _, err := list(context.Background(), agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: id(), Limit: 5, Cursor: c})
			var ae *agent.Error
			if !errors.As(err, &ae) || ae.Code != agent.CodeInvalidQuery {
				t.Errorf("%s(cursor %q): got %v, want *agent.Error invalid_query", name, c, err)
			}
		}
	}
}

func testExpired(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	task.NextSeq = 2
	w := &agent.Write{Task: task, Session: link(task), Items: []agent.Item{textItem(1, "gone")},
		Requests: []agent.RequestRecord{{RequestView: agent.RequestView{RequestID: id(), Status: agent.StatusCompleted, CreatedAt: base}}},
		Expires:  time.Now().Add(-time.Minute)}
	if err := s.Write(ctx, w); err != nil {
		t.Fatalf("write an expired task: %v", err)
	}
	kept := newTask("u1", "acc", id())
	kept.NextSeq = 2
	if err := s.Write(ctx, &agent.Write{Task: kept, Session: link(kept), Items: []agent.Item{textItem(1, "kept")},
		Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("write a retained task: %v", err)
	}

	if _, err := s.GetTask(ctx, task.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetTask(expired): got %v, want ErrNotFound", err)
	}
	if _, _, err := s.LoadTask(ctx, task.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("LoadTask(expired): got %v, want ErrNotFound", err)
	}
	if _, err := s.GetSession(ctx, task.SessionID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetSession(expired): got %v, want ErrNotFound", err)
	}
	if got, err := s.ListItems(ctx, task, 0, 10); err != nil || len(got) != 0 {
		t.Errorf("ListItems(expired) = %v, %v; want none", got, err)
	}
	if got, err := s.ListRequests(ctx, task.ID); err != nil || len(got) != 0 {
		t.Errorf("ListRequests(expired) = %v, %v; want none", got, err)
	}
	if got, _, err := s.ListSessionTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", SessionID: task.SessionID, Limit: 5}); err != nil || len(got) != 0 {
		t.Errorf("ListSessionTasks(expired) = %v, %v; want none", got, err)
	}
	got, _, err := s.ListUserTasks(ctx, agent.ListQuery{UserID: "u1", Agent: "acc", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agent.TaskSummary{kept.Summary()}, got, opts); diff != "" {
		t.Errorf("ListUserTasks: only the unexpired task (-want +got):\n%s", diff)
	}
	if _, items := mustLoad(t, s, kept.ID); len(items) != 1 {
		t.Errorf("LoadTask(retained): %d items, want 1", len(items))
	}

	// An expired task is absent for writes too: it can be created again.
	again := task.Clone()
	again.WriteID = id()
	again.NextSeq = 1
	if err := s.Write(ctx, &agent.Write{Task: again, Session: link(again)}); err != nil {
		t.Fatalf("create over an expired task: %v", err)
	}
	if got, _ := mustLoad(t, s, task.ID); got.WriteID != again.WriteID {
		t.Errorf("LoadTask after re-create: WriteID %s, want %s", got.WriteID, again.WriteID)
	}
}

func testNoAliasing(t *testing.T, s agent.Store) {
	task := newTask("u1", "acc", id())
	item := textItem(1, "original")
	create(t, s, task, item)
	want := task.Clone()

	task.Metadata["ticket"] = "changed by the caller"
	task.Active.Round = 99
	item.Content[0].Text = "changed by the caller"
	got, items := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("stored task changed through the writer's pointer (-want +got):\n%s", diff)
	}
	got.Metadata["ticket"] = "changed by a reader"
	items[0].Content[0].Text = "changed by a reader"
	again, items2 := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(want, again, opts); diff != "" {
		t.Errorf("stored task changed through a reader's pointer (-want +got):\n%s", diff)
	}
	if items2[0].Content[0].Text != "original" {
		t.Errorf("stored item text = %q, want original", items2[0].Content[0].Text)
	}
}

func testConcurrentWriters(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task)
	const n = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		errs    []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := next(task)
			w.Metadata = map[string]string{"writer": fmt.Sprint(i)}
			w.NextSeq = 2
			err := s.Write(ctx, &agent.Write{Task: w, PrevVersion: 1, Items: []agent.Item{textItem(1, fmt.Sprint("writer ", i))}})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				winners = append(winners, w.WriteID)
			} else {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d writers won, want exactly 1", len(winners))
	}
	got, items := mustLoad(t, s, task.ID)
	if got.WriteID != winners[0] || got.Version != 2 {
		t.Errorf("stored META: version %d write %s, want version 2 by the winner %s", got.Version, got.WriteID, winners[0])
	}
	if len(items) != 1 || items[0].Text() != "writer "+got.Metadata["writer"] {
		t.Errorf("stored items = %v, want the winner's entry", items)
	}
	for _, err := range errs {
		var ce *agent.ConflictError
		if !errors.As(err, &ce) {
			t.Errorf("a losing writer: got %v, want *agent.ConflictError", err)
			continue
		}
		if ce.Current != nil && ce.Current.Version != 2 {
			t.Errorf("a losing writer saw version %d, want 2", ce.Current.Version)
		}
	}
}

// A request's lookup is put with the write that creates the request, and only
// if that write lands.
func testRequestLookup(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	rid := task.Active.ID
	if _, err := s.FindRequest(ctx, rid); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("FindRequest before the write: %v, want ErrNotFound", err)
	}
	want := &agent.RequestLookup{RequestID: rid, TaskID: task.ID, Agent: "acc", UserID: "u1"}
	task.NextSeq = 2
	if err := s.Write(ctx, &agent.Write{Task: task, Items: []agent.Item{textItem(1, "hi")}, Session: link(task), Lookup: want}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := s.FindRequest(ctx, rid)
	if err != nil {
		t.Fatalf("FindRequest: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FindRequest (-want +got):\n%s", diff)
	}
	// A write that fails on its condition puts no lookup.
	stale := next(task)
	stale.Version = task.Version + 5
	other := &agent.RequestLookup{RequestID: id(), TaskID: task.ID, Agent: "acc", UserID: "u1"}
	err = s.Write(ctx, &agent.Write{Task: stale, PrevVersion: task.Version + 4, Lookup: other})
	if !errors.Is(err, agent.ErrConflict) {
		t.Fatalf("stale Write: %v, want a conflict", err)
	}
	if _, err := s.FindRequest(ctx, other.RequestID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("FindRequest after a failed write: %v, want ErrNotFound", err)
	}
}

// A renewal extends only the holder's live lease, bumps the version (a writer
// that read META before it conflicts, and so never writes a stale lease back)
// and leaves the rest of META as it was.
func testRenewLease(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task, textItem(1, "hi"))
	tok, lease := task.Active.ClaimToken, task.Active.LeaseUntil
	until := lease.Add(20 * time.Second)

	if _, err := s.RenewLease(ctx, task.ID, id(), until, base); !errors.Is(err, agent.ErrConflict) {
		t.Errorf("another claim's renewal: %v, want a conflict", err)
	}
	if _, err := s.RenewLease(ctx, task.ID, tok, until, lease); !errors.Is(err, agent.ErrConflict) {
		t.Errorf("a renewal at the lease's end: %v, want a conflict", err)
	}
	if _, err := s.RenewLease(ctx, id(), tok, until, base); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("a renewal of a missing task: %v, want ErrNotFound", err)
	}
	got, err := s.RenewLease(ctx, task.ID, tok, until, base)
	if err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	want := task.Clone()
	want.Version, want.Active.LeaseUntil = task.Version+1, until
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("RenewLease answered (-want +got):\n%s", diff)
	}
	meta, err := s.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, meta, opts); diff != "" {
		t.Errorf("GetTask after the renewal (-want +got):\n%s", diff)
	}
	loaded, _ := mustLoad(t, s, task.ID)
	if diff := cmp.Diff(want, loaded, opts); diff != "" {
		t.Errorf("LoadTask after the renewal (-want +got):\n%s", diff)
	}

	// A writer that read META before the renewal (a cancel setting its flag)
	// conflicts, and learns the renewed lease.
	stale := next(task)
	stale.Active.CancelRequested = true
	err = s.Write(ctx, &agent.Write{Task: stale, PrevVersion: task.Version})
	wantConflict(t, err, want)
	// Rebased on the renewed META, it lands and keeps the renewed lease.
	fresh := next(meta)
	fresh.Active.CancelRequested = true
	update(t, s, &agent.Write{Task: fresh, PrevVersion: meta.Version})
	after, err := s.GetTask(ctx, task.ID)
	if err != nil || !after.Active.LeaseUntil.Equal(until) || !after.Active.CancelRequested {
		t.Errorf("after a write on the renewed META: %+v, %v", after.Active, err)
	}
	// The renewal returns the cancel flag, which stands in for a poll.
	again, err := s.RenewLease(ctx, task.ID, tok, until.Add(time.Second), base)
	if err != nil || !again.Active.CancelRequested {
		t.Errorf("a renewal of a flagged request: %+v, %v", again, err)
	}
	// A request whose claim token was cleared (paused) is not renewed.
	paused := next(again)
	paused.Active.ClaimToken, paused.Active.Status, paused.Status = "", agent.StatusPaused, agent.StatusPaused
	update(t, s, &agent.Write{Task: paused, PrevVersion: again.Version})
	if _, err := s.RenewLease(ctx, task.ID, tok, until.Add(2*time.Second), base); !errors.Is(err, agent.ErrConflict) {
		t.Errorf("a renewal of a paused request: %v, want a conflict", err)
	}
}
