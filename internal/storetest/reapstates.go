package storetest

import (
	"context"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

// testReapStatesTwice: the reaper may name one task twice in a batch — two
// dead children of one caller name it each (the torture test's duo, whose
// sweep then failed on every tick and left the chain Running), or a stale
// index entry beside a live one. The store answers it once, never refuses
// the batch.
func testReapStatesTwice(t *testing.T, s agent.Store) {
	a, b := newTask("u1", "duo", id()), newTask("u1", "leaf", id())
	create(t, s, a)
	create(t, s, b)
	got, err := s.ReapStates(context.Background(), []string{a.ID, b.ID, a.ID, a.ID})
	if err != nil {
		t.Fatalf("ReapStates with a task named twice: %v", err)
	}
	for _, tk := range []*agent.Task{a, b} {
		if rs, ok := got[tk.ID]; !ok || rs.RequestID != tk.Active.ID {
			t.Errorf("ReapStates[%s] = %+v, %v; want its active request %s", tk.ID, rs, ok, tk.Active.ID)
		}
	}
}
