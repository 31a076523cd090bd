package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// testLoadContext: LoadContext returns the META and the entries from its
// Context.Seq on — none before, none at or past NextSeq — whether the
// context is short, longer than one read page, or holds split entries.
func testLoadContext(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	var all []agent.Item
	for i := int64(1); i <= 400; i++ {
		all = append(all, textItem(i, fmt.Sprint("entry ", i, " ", strings.Repeat("x", 200))))
	}
	create(t, s, task, all...)
	// No compaction yet: the whole history.
	got, items, err := s.LoadContext(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(task, got, opts); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all, items, opts); diff != "" {
		t.Errorf("whole history (-want +got):\n%s", diff)
	}
	cur := task
	for _, tc := range []struct {
		name  string
		start int64
		extra []agent.Item
	}{
		{"short context", 390, nil},
		{"context longer than a page", 100, nil},
		{"split entries at the start", 401, []agent.Item{bigItem(401, 1<<20), textItem(402, strings.Repeat("é✓", 120_000)), bigItem(403, 1<<20)}},
		{"start at the last entry", 403, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := next(cur)
			n.Context = agent.ContextStart{Seq: tc.start, Summary: tc.start}
			n.NextSeq = cur.NextSeq + int64(len(tc.extra))
			update(t, s, &agent.Write{Task: n, PrevVersion: cur.Version, Items: tc.extra})
			cur = n
			all = append(all, tc.extra...)
			// An entry past NextSeq stays invisible.
			if err := s.Write(ctx, &agent.Write{Task: next(cur), PrevVersion: cur.Version + 5, Items: []agent.Item{textItem(cur.NextSeq, "ghost")}}); !errors.Is(err, agent.ErrConflict) {
				t.Fatalf("stale write: %v", err)
			}
			got, items, err := s.LoadContext(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(cur, got, opts); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(all[tc.start-1:], items, opts); diff != "" {
				t.Errorf("context from %d (-want +got):\n%s", tc.start, diff)
			}
		})
	}
	if _, _, err := s.LoadContext(ctx, id()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("LoadContext of a missing task: %v", err)
	}
}
