package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

func idemFor(key string, t *agent.Task, expires time.Time) *agent.IdemRecord {
	return &agent.IdemRecord{Key: key, BodyHash: "h-" + t.ID, TaskID: t.ID, RequestID: t.Active.ID, SessionID: t.SessionID, Expires: expires}
}

func wantIdem(tb testing.TB, s agent.Store, want *agent.IdemRecord) {
	tb.Helper()
	got, err := s.GetIdem(context.Background(), want.Key)
	if err != nil {
		tb.Fatalf("GetIdem(%s): %v", want.Key, err)
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		tb.Errorf("GetIdem (-want +got):\n%s", diff)
	}
}

func wantNoIdem(tb testing.TB, s agent.Store, key string) {
	tb.Helper()
	if got, err := s.GetIdem(context.Background(), key); !errors.Is(err, agent.ErrNotFound) {
		tb.Errorf("GetIdem(%s) = %+v, %v; want ErrNotFound", key, got, err)
	}
}

func wantAbsent(tb testing.TB, s agent.Store, t *agent.Task) {
	tb.Helper()
	if _, _, err := s.LoadTask(context.Background(), t.ID); !errors.Is(err, agent.ErrNotFound) {
		tb.Errorf("LoadTask(%s): got %v, want ErrNotFound", t.ID, err)
	}
	if _, err := s.GetTask(context.Background(), t.ID); !errors.Is(err, agent.ErrNotFound) {
		tb.Errorf("GetTask(%s): got %v, want ErrNotFound", t.ID, err)
	}
}

// testIdem: a record lands with its write; a taken key refuses the whole
// write; an expired one is free again.
func testIdem(t *testing.T, s agent.Store) {
	ctx := context.Background()
	key := id()
	wantNoIdem(t, s, key)

	first := newTask("u1", "acc", id())
	first.NextSeq = 2
	rec := idemFor(key, first, time.Now().Add(time.Hour))
	if err := s.Write(ctx, &agent.Write{Task: first, Session: link(first), Items: []agent.Item{textItem(1, "first")}, Idem: rec}); err != nil {
		t.Fatalf("create with an idempotency record: %v", err)
	}
	wantIdem(t, s, rec)

	// A new task with the taken key: nothing of it lands.
	second := newTask("u1", "acc", id())
	second.NextSeq = 2
	err := s.Write(ctx, &agent.Write{Task: second, Session: link(second), Items: []agent.Item{textItem(1, "second")},
		Idem: idemFor(key, second, time.Now().Add(time.Hour))})
	if !errors.Is(err, agent.ErrIdemExists) {
		t.Fatalf("create with a taken key: got %v, want ErrIdemExists", err)
	}
	wantAbsent(t, s, second)
	if _, err := s.GetSession(ctx, second.SessionID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetSession of the refused create: got %v, want ErrNotFound", err)
	}
	wantIdem(t, s, rec)

	// An update with the taken key: the META and its items stay as they were.
	n := next(first)
	n.NextSeq = 3
	n.Status = agent.StatusCompleted
	err = s.Write(ctx, &agent.Write{Task: n, PrevVersion: 1, Items: []agent.Item{textItem(2, "update")},
		Requests: []agent.RequestRecord{{RequestView: agent.RequestView{RequestID: id(), Status: agent.StatusCompleted, CreatedAt: base}}},
		Idem:     idemFor(key, n, time.Now().Add(time.Hour))})
	if !errors.Is(err, agent.ErrIdemExists) {
		t.Fatalf("update with a taken key: got %v, want ErrIdemExists", err)
	}
	got, items := mustLoad(t, s, first.ID)
	if diff := cmp.Diff(first, got, opts); diff != "" {
		t.Errorf("META after the refused update (-want +got):\n%s", diff)
	}
	if len(items) != 1 {
		t.Errorf("items after the refused update: %d, want 1", len(items))
	}
	if reqs, err := s.ListRequests(ctx, first.ID); err != nil || len(reqs) != 0 {
		t.Errorf("ListRequests after the refused update = %v, %v; want none", reqs, err)
	}

	// An expired record is absent, and its key can be bound again.
	old := id()
	gone := newTask("u1", "acc", id())
	if err := s.Write(ctx, &agent.Write{Task: gone, Session: link(gone), Idem: idemFor(old, gone, time.Now().Add(-time.Minute))}); err != nil {
		t.Fatalf("create with an expired record: %v", err)
	}
	wantNoIdem(t, s, old)
	again := newTask("u1", "acc", id())
	fresh := idemFor(old, again, time.Now().Add(time.Hour))
	if err := s.Write(ctx, &agent.Write{Task: again, Session: link(again), Idem: fresh}); err != nil {
		t.Fatalf("bind an expired key again: %v", err)
	}
	wantIdem(t, s, fresh)
}

// testIdemConcurrent: of concurrent creates binding one key, exactly one wins.
func testIdemConcurrent(t *testing.T, s agent.Store) {
	ctx := context.Background()
	key := id()
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []*agent.IdemRecord
		losers []*agent.Task
	)
	for range n {
		wg.Go(func() {
			task := newTask("u1", "acc", id())
			rec := idemFor(key, task, time.Now().Add(time.Hour))
			err := s.Write(ctx, &agent.Write{Task: task, Session: link(task), Idem: rec})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, rec)
			case errors.Is(err, agent.ErrIdemExists):
				losers = append(losers, task)
			default:
				t.Errorf("a create binding the key: got %v, want nil or ErrIdemExists", err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d creates bound the key, want exactly 1", len(won))
	}
	wantIdem(t, s, won[0])
	for _, l := range losers {
		wantAbsent(t, s, l)
	}
}
