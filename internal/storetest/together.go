package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// testWriteTogether: a write with With changes several tasks in one
// transaction (a decision at a caller claiming its leaves, a chain's
// expiry; docs/architecture.md): every META and what it carries lands, or
// nothing does. One stale version refuses the whole write with a
// *ConflictError carrying that task's META; a retry of a write that landed
// answers nil and changes nothing.
func testWriteTogether(t *testing.T, s agent.Store) {
	ctx := context.Background()
	caller, leafA, leafB := newTask("u1", "front", id()), newTask("u1", "alpha", id()), newTask("u1", "beta", id())
	for _, tk := range []*agent.Task{caller, leafA, leafB} {
		create(t, s, tk)
	}
	dec := func(tk *agent.Task) []agent.RequestDecision {
		return []agent.RequestDecision{{RequestID: tk.Active.ID, Decision: agent.Decision{Round: 1, Approver: "u1", DecidedAt: base, Action: "approve",
			Calls: []agent.CallDecision{{ToolCallID: "c-" + tk.Agent, Action: "approve", InputHash: "h"}}}}}
	}
	together := func(c, a, b *agent.Task) *agent.Write {
		w := &agent.Write{Task: next(c), PrevVersion: c.Version, Decisions: dec(c), Items: []agent.Item{textItem(c.NextSeq, "caller")},
			With: []*agent.Write{
				{Task: next(a), PrevVersion: a.Version, Decisions: dec(a), Items: []agent.Item{textItem(a.NextSeq, "alpha")}},
				{Task: next(b), PrevVersion: b.Version, Decisions: dec(b)},
			}}
		w.Task.NextSeq++
		w.With[0].Task.NextSeq++
		return w
	}

	// One leaf moved meanwhile (a decision at its own URL): nothing lands.
	moved := next(leafB)
	update(t, s, &agent.Write{Task: moved, PrevVersion: leafB.Version})
	stale := together(caller, leafA, leafB)
	wantConflict(t, s.Write(ctx, stale), moved)
	for _, tk := range []*agent.Task{caller, leafA} {
		got, items := mustLoad(t, s, tk.ID)
		if got.Version != tk.Version || len(items) != 0 {
			t.Errorf("%s after a refused write together: version %d, %d items; want version %d, none", tk.Agent, got.Version, len(items), tk.Version)
		}
		if ds, err := s.ListDecisions(ctx, tk.ID, ""); err != nil || len(ds) != 0 {
			t.Errorf("%s's decisions after a refused write together: %+v %v, want none", tk.Agent, ds, err)
		}
	}

	// At the versions as they are: everything lands.
	w := together(caller, leafA, moved)
	if err := s.Write(ctx, w); err != nil {
		t.Fatalf("write together: %v", err)
	}
	for _, x := range append([]*agent.Write{w}, w.With...) {
		got, items := mustLoad(t, s, x.Task.ID)
		if diff := cmp.Diff(x.Task, got, opts); diff != "" {
			t.Errorf("%s after the write together (-want +got):\n%s", x.Task.Agent, diff)
		}
		if len(items) != len(x.Items) {
			t.Errorf("%s has %d items, want %d", x.Task.Agent, len(items), len(x.Items))
		}
		if ds, err := s.ListDecisions(ctx, x.Task.ID, ""); err != nil || len(ds) != 1 {
			t.Errorf("%s's decisions: %+v %v, want one", x.Task.Agent, ds, err)
		}
	}
	// Retried after it landed (an ambiguous success): nil, nothing changes.
	if err := s.Write(ctx, w); err != nil {
		t.Errorf("the write together retried after it landed: %v, want nil", err)
	}
	for _, x := range append([]*agent.Write{w}, w.With...) {
		if got, _ := mustLoad(t, s, x.Task.ID); got.Version != x.Task.Version {
			t.Errorf("%s after the retry: version %d, want %d", x.Task.Agent, got.Version, x.Task.Version)
		}
	}
}

// testWriteTogetherTooLarge: a write together must fit one transaction
// (agent.MaxWriteItems items): beyond, ErrTooLarge and nothing lands — it
// is never split, as a single task's write may be.
func testWriteTogetherTooLarge(t *testing.T, s agent.Store) {
	ctx := context.Background()
	var tasks []*agent.Task
	w := &agent.Write{}
	for i := range 60 {
		tk := newTask("u1", "leaf", id())
		create(t, s, tk)
		tasks = append(tasks, tk)
		x := &agent.Write{Task: next(tk), PrevVersion: tk.Version, Decisions: []agent.RequestDecision{{RequestID: tk.Active.ID,
			Decision: agent.Decision{Round: 1, Approver: "u1", DecidedAt: base, Action: "approve"}}}}
		if i == 0 {
			*w = *x
			continue
		}
		w.With = append(w.With, x)
	}
	if n := w.ItemCount(); n != 120 {
		t.Fatalf("ItemCount = %d, want 120 (a META and a decision each)", n)
	}
	if err := s.Write(ctx, w); !errors.Is(err, agent.ErrTooLarge) {
		t.Fatalf("a write together of 120 items: %v, want ErrTooLarge", err)
	}
	for _, tk := range tasks {
		if got, _ := mustLoad(t, s, tk.ID); got.Version != tk.Version {
			t.Fatalf("%s changed by a write refused for size: version %d", tk.ID, got.Version)
		}
	}
	// At the limit, it lands.
	w.With = w.With[:agent.MaxWriteItems/2-1]
	if err := s.Write(ctx, w); err != nil {
		t.Fatalf("a write together of %d items: %v", w.ItemCount(), err)
	}
}
