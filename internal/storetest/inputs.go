package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// pausedWithInputs is the successor of t paused on two MCP elicitations:
// "small" kept on META, "big" off it (its JINP# item, returned), as the
// engine writes a round whose inputs pass META's bound (docs/architecture.md,
// "Pauses for input").
func pausedWithInputs(t *agent.Task, state string) (*agent.Task, agent.PendingInput) {
	n := next(t)
	a := n.Active
	a.Status, a.ClaimToken, n.Status = agent.StatusPaused, "", agent.StatusPaused
	ask := func(key, st string) *agent.ElicitAsk {
		return &agent.ElicitAsk{Elicitation: agent.Elicitation{Key: key, Mode: agent.ElicitForm, Message: "How many?", Schema: []byte(`{"type":"object"}`)},
			Server: "https://mcp.example.com/mcp", State: st}
	}
	in := agent.PendingInput{RequestID: a.ID, ToolCallID: "big", Elicit: ask("party", state)}
	a.Pending = []agent.PendingCall{
		{ToolCallID: "small", Name: "book", Kind: agent.InputElicitation, InputHash: "h", ItemSeq: 1, ExpiresAt: base.Add(time.Hour), Round: 1, Elicit: ask("party", "s")},
		{ToolCallID: "big", Name: "book", Kind: agent.InputElicitation, InputHash: "h", ItemSeq: 1, ExpiresAt: base.Add(time.Hour), Round: 1, Off: true},
	}
	n.InputRefs = []agent.InputRef{{Key: in.Key(), Sum: "1"}}
	return n, in
}

// bigState is what the off-META input's state reads back as, "" when its
// item is absent.
func bigState(tb testing.TB, tk *agent.Task) string {
	tb.Helper()
	for _, p := range tk.Active.Pending {
		if p.ToolCallID == "big" && p.Elicit != nil {
			return p.Elicit.State
		}
	}
	return ""
}

// testInputs: a round's JINP# items are written with the META that refers
// to them, read back into its pending calls by every read of the task
// (LoadTask, LoadContext, GetTask), and deleted by the write that names
// them gone (a settled, canceled or expired round) or with the task; a
// write over their bounds is ErrTooLarge and changes nothing.
func testInputs(t *testing.T, s agent.Store) {
	ctx := context.Background()
	task := newTask("u1", "acc", id())
	create(t, s, task, textItem(1, "book"))
	state := strings.Repeat("s", 100<<10)
	paused, in := pausedWithInputs(task, state)

	// Over the bounds: nothing changes.
	huge := in
	huge.Elicit = &agent.ElicitAsk{State: strings.Repeat("x", agent.MaxInputItemBytes)}
	if err := s.Write(ctx, &agent.Write{Task: paused, PrevVersion: 1, Inputs: []agent.PendingInput{huge}}); !errors.Is(err, agent.ErrTooLarge) {
		t.Errorf("a JINP# item over %d bytes: %v, want ErrTooLarge", agent.MaxInputItemBytes, err)
	}
	var many []agent.PendingInput
	for i := range agent.MaxWriteInputs + 1 {
		many = append(many, agent.PendingInput{RequestID: in.RequestID, ToolCallID: "c" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)})
	}
	if err := s.Write(ctx, &agent.Write{Task: paused, PrevVersion: 1, Inputs: many}); !errors.Is(err, agent.ErrTooLarge) {
		t.Errorf("%d JINP# items in one write: %v, want ErrTooLarge", len(many), err)
	}
	if got, err := s.GetTask(ctx, task.ID); err != nil || got.Version != 1 {
		t.Fatalf("after refused writes: %v, version %d", err, got.Version)
	}

	update(t, s, &agent.Write{Task: paused, PrevVersion: 1, Inputs: []agent.PendingInput{in}})
	for name, read := range map[string]func() (*agent.Task, error){
		"LoadTask":    func() (*agent.Task, error) { tk, _, err := s.LoadTask(ctx, task.ID); return tk, err },
		"LoadContext": func() (*agent.Task, error) { tk, _, err := s.LoadContext(ctx, task.ID); return tk, err },
		"GetTask":     func() (*agent.Task, error) { return s.GetTask(ctx, task.ID) },
	} {
		tk, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := bigState(t, tk); got != state {
			t.Errorf("%s: the off-META input's state reads back as %d bytes, want %d", name, len(got), len(state))
		}
		if p := tk.Active.Pending[0]; p.Elicit == nil || p.Elicit.State != "s" {
			t.Errorf("%s: the input kept on META: %+v", name, p.Elicit)
		}
	}

	// The round settles: its item is deleted with the META that drops it.
	settled := next(paused)
	settled.Active.Pending, settled.InputRefs = nil, nil
	settled.Active.Status, settled.Status = agent.StatusRunning, agent.StatusRunning
	update(t, s, &agent.Write{Task: settled, PrevVersion: paused.Version, InputsGone: []string{agent.InputSK(in.Key())}})
	// A META that referred to it again finds nothing.
	again, _ := pausedWithInputs(settled, state)
	again.Active.Pending[1].ToolCallID = "big"
	again.InputRefs = []agent.InputRef{{Key: in.Key(), Sum: "1"}}
	update(t, s, &agent.Write{Task: again, PrevVersion: settled.Version})
	if tk, _ := mustLoad(t, s, task.ID); bigState(t, tk) != "" {
		t.Errorf("the JINP# item outlived the write that deleted it")
	}

	// Deleted with the task.
	third, in3 := pausedWithInputs(again, "third")
	update(t, s, &agent.Write{Task: third, PrevVersion: again.Version, Inputs: []agent.PendingInput{in3}})
	if tk, _ := mustLoad(t, s, task.ID); bigState(t, tk) != "third" {
		t.Fatalf("the JINP# item of the third pause is not read back")
	}
	if err := s.DeleteTask(ctx, third); err != nil {
		t.Fatal(err)
	}
	reborn := third.Clone()
	reborn.Version, reborn.WriteID = 1, id()
	create(t, s, reborn, textItem(1, "book"))
	if tk, _ := mustLoad(t, s, task.ID); bigState(t, tk) != "" {
		t.Errorf("the JINP# item outlived its task")
	}
}
