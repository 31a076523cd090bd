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

// artifact is an artifact's metadata made by the task's active request.
func artifact(t *agent.Task, name string, seq int64) agent.Artifact {
	return agent.Artifact{ID: id(), TaskID: t.ID, Name: name, MediaType: "text/markdown", Size: 42,
		SHA256: "ab12", RequestID: t.Active.ID, ToolCallID: "c" + name, CreatedAt: base.Add(time.Duration(seq) * time.Second), Seq: seq}
}

// testArtifacts: ART# items are put by a write, read one by one and as a
// list (oldest first), never with the history, and only under their task.
func testArtifacts(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task, textItem(1, "make a report"))
	if got, err := s.ListArtifacts(ctx, task.ID); err != nil || len(got) != 0 {
		t.Fatalf("ListArtifacts of a task without any = %v, %v; want none", got, err)
	}
	a1, a2 := artifact(task, "report.md", 1), artifact(task, "chart.png", 1)
	a2.MediaType = "image/png"
	n := next(task)
	n.ArtifactCount = 2
	update(t, s, &agent.Write{Task: n, PrevVersion: task.Version, Artifacts: []agent.Artifact{a1, a2}})
	a3 := artifact(task, "data.csv", 1)
	n2 := next(n)
	n2.ArtifactCount = 3
	update(t, s, &agent.Write{Task: n2, PrevVersion: n.Version, Artifacts: []agent.Artifact{a3}})

	got, err := s.ListArtifacts(ctx, task.ID)
	if err != nil {
		t.Fatalf("ListArtifacts: %v", err)
	}
	if diff := cmp.Diff([]agent.Artifact{a1, a2, a3}, got, opts); diff != "" {
		t.Errorf("ListArtifacts (-want +got):\n%s", diff)
	}
	one, err := s.GetArtifact(ctx, task.ID, a2.ID)
	if err != nil {
		t.Fatalf("GetArtifact: %v", err)
	}
	if diff := cmp.Diff(&a2, one, opts); diff != "" {
		t.Errorf("GetArtifact (-want +got):\n%s", diff)
	}
	if _, err := s.GetArtifact(ctx, task.ID, id()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetArtifact of an unknown id: got %v, want ErrNotFound", err)
	}
	other := newTask("u1", "acc", id())
	create(t, s, other)
	if _, err := s.GetArtifact(ctx, other.ID, a1.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("GetArtifact under another task: got %v, want ErrNotFound", err)
	}
	if got, err := s.ListArtifacts(ctx, other.ID); err != nil || len(got) != 0 {
		t.Errorf("ListArtifacts of another task = %v, %v; want none", got, err)
	}
	// The history read never meets them.
	meta, items := mustLoad(t, s, task.ID)
	if len(items) != 1 || meta.ArtifactCount != 3 {
		t.Errorf("LoadTask: %d items, count %d; want 1 item, count 3", len(items), meta.ArtifactCount)
	}
	if _, items, err := s.LoadContext(ctx, task.ID); err != nil || len(items) != 1 {
		t.Errorf("LoadContext: %d items, %v; want 1", len(items), err)
	}
}

// testArtifactsConflict: a write refused on its version puts no artifact.
func testArtifactsConflict(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task, textItem(1, "hi"))
	n := next(task)
	update(t, s, &agent.Write{Task: n, PrevVersion: task.Version})
	stale := next(task)
	err := s.Write(ctx, &agent.Write{Task: stale, PrevVersion: task.Version, Artifacts: []agent.Artifact{artifact(task, "x.txt", 1)}})
	wantConflict(t, err, n)
	if got, err := s.ListArtifacts(ctx, task.ID); err != nil || len(got) != 0 {
		t.Errorf("ListArtifacts after a refused write = %v, %v; want none", got, err)
	}
}

// testArtifactQuota: the per-user count of artifact bytes is one
// conditional update; concurrent additions never pass the limit together,
// a refused one changes nothing, and giving back never goes below zero.
func testArtifactQuota(t *testing.T, s agent.Store) {
	ctx := context.Background()
	alice, bob := "alice-"+id(), "bob-"+id()
	if got, err := s.AddArtifactBytes(ctx, alice, 60, 100); err != nil || got != 60 {
		t.Fatalf("add 60 = %d, %v; want 60", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, alice, 41, 100); !errors.Is(err, agent.ErrQuotaExceeded) || got != 60 {
		t.Errorf("add 41 past 100 = %d, %v; want 60 and ErrQuotaExceeded", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, bob, 101, 100); !errors.Is(err, agent.ErrQuotaExceeded) || got != 0 {
		t.Errorf("bob adds 101 past 100 = %d, %v; want 0 and ErrQuotaExceeded", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, bob, 100, 100); err != nil || got != 100 {
		t.Errorf("bob adds 100 = %d, %v; want 100 (his own count)", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, alice, -50, 0); err != nil || got != 10 {
		t.Errorf("give back 50 = %d, %v; want 10", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, alice, -50, 0); err != nil || got != 0 {
		t.Errorf("give back 50 more = %d, %v; want 0, never below", got, err)
	}
	if got, err := s.AddArtifactBytes(ctx, alice, 500, 0); err != nil || got != 500 {
		t.Errorf("add without a limit = %d, %v; want 500", got, err)
	}
	if _, err := s.AddArtifactBytes(ctx, alice, -500, 0); err != nil {
		t.Fatal(err)
	}
	// Twenty concurrent additions of 7 under a limit of 100: fourteen fit.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 20 {
		wg.Go(func() {
			_, err := s.AddArtifactBytes(ctx, alice, 7, 100)
			switch {
			case err == nil:
				mu.Lock()
				ok++
				mu.Unlock()
			case !errors.Is(err, agent.ErrQuotaExceeded):
				t.Errorf("a concurrent add: %v", err)
			}
		})
	}
	wg.Wait()
	if got, err := s.AddArtifactBytes(ctx, alice, 0, 100); ok != 14 || err != nil || got != 98 {
		t.Errorf("%d of 20 concurrent adds of 7 fit, the count is %d (%v); want 14 and 98", ok, got, err)
	}
}
