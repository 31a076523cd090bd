package memstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(testing.TB) agent.Store { return memstore.New() })
}

func TestBytesContract(t *testing.T) {
	storetest.RunBytes(t, func(tb testing.TB) agent.ArtifactBytes { return memstore.NewBytes() })
}

// The memory store drops the artifacts retention expired, and their
// bytes, instead of keeping them until the process ends; live ones stay.
func TestDropExpiredArtifacts(t *testing.T) {
	ctx := context.Background()
	s, b := memstore.New(), memstore.NewBytes()
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name    string
		expires time.Time
	}{{"expired", old}, {"kept", time.Time{}}, {"later", time.Now().Add(time.Hour)}} {
		task := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "alice", Status: agent.StatusCompleted,
			CreatedAt: old, UpdatedAt: old, Version: 1, NextSeq: 1, WriteID: uuid.NewString()}
		a := agent.Artifact{ID: uuid.NewString(), Name: tc.name + ".txt", MediaType: "text/plain", Size: 1, RequestID: "r", CreatedAt: old}
		if err := b.Put(ctx, task.ID, a.ID, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		w := &agent.Write{Task: task, Artifacts: []agent.Artifact{a}, Expires: tc.expires,
			Session: &agent.SessionLink{SessionID: task.SessionID, UserID: "alice", TaskID: task.ID, Agent: "acc", CreatedAt: old}}
		if err := s.Write(ctx, w); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			want := 1
			if tc.name == "expired" {
				want = 0
			}
			if n := b.Len(task.ID); n != want {
				t.Errorf("%s: %d artifacts' bytes kept, want %d", tc.name, n, want)
			}
		})
	}
	n, err := s.DropExpiredArtifacts(ctx, b)
	if err != nil || n != 1 {
		t.Errorf("DropExpiredArtifacts = %d, %v; want 1 dropped", n, err)
	}
}
