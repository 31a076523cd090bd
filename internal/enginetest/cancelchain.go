package enginetest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

// callResult is the result a task's history holds for the call of the
// sub-agent named name (nil when it has none).
func callResult(t *testing.T, o *Orch, taskID, name string) *agent.Block {
	t.Helper()
	_, items, err := o.Store.LoadTask(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, it := range items {
		for _, u := range it.ToolUses() {
			if u.Name == name {
				id = u.ID
			}
		}
	}
	if id == "" {
		t.Fatalf("task %s has no call of %s", taskID, name)
	}
	for _, it := range items {
		for i, b := range it.Content {
			if it.Role == agent.RoleTool && b.ToolUseID == id {
				return &it.Content[i]
			}
		}
	}
	return nil
}

func resultText(b *agent.Block) string {
	var s []string
	for _, c := range b.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, " ")
}

// testCancelAfterTheLeafEnded: desk waits on its leaf; the leaf is
// approved at its own URL and runs its append to the end (Completed); desk
// hears nothing yet (its continuation is not delivered); then desk is
// canceled. Desk's history gives the leaf's call the leaf's result — the
// call ran — never "not run" (docs/api.md, "Cancel").
func testCancelAfterTheLeafEnded(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "ended.txt")
	leaf, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve())
	if err != nil || leaf.Status != agent.StatusCompleted {
		t.Fatalf("approve at the leaf: %+v %v", leaf, err)
	}
	c, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, Reason: "stop"})
	if err != nil {
		t.Fatalf("cancel of desk: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(c)); diff != "" {
		t.Fatalf("cancel of desk (-want +got):\n%s", diff)
	}
	if got := o.Lines("ended.txt"); len(got) != 1 {
		t.Fatalf("ended.txt = %q, want the one approved line", got)
	}
	b := callResult(t, o, res.TaskID, "leaf")
	if b == nil {
		t.Fatal("desk ended Canceled with no result for its call of leaf")
	}
	if b.Status != agent.ResultSuccess || !strings.Contains(resultText(b), leaf.Output) {
		t.Errorf("desk's result for its call of leaf, which ran and completed: %s %q; want the leaf's result (success, %q)", b.Status, resultText(b), leaf.Output)
	}
}

// testCancelWhileTheLeafRuns: desk waits on its leaf; a decision at the
// leaf's own URL has claimed the leaf (its leg is about to run the
// approved append) when desk is canceled (202: a call below may still
// start). A continuation of desk delivered then finalises desk Canceled
// while the leaf's leg still holds it: desk's history says the call's
// outcome is unknown — the leaf may run, and does — never "not run".
func testCancelWhileTheLeafRuns(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "running.txt")
	defer func(d time.Duration) { agent.CancelWait = d }(agent.CancelWait)
	agent.CancelWait = 300 * time.Millisecond
	ctx := context.Background()
	leafRun, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "leaf", UserID: "alice", TaskID: p.TaskID, RequestID: p.RequestID, Body: Approve()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.E.Cancel(ctx, agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID})
	if err != nil || !c.Pending {
		t.Fatalf("cancel of desk while its leaf is claimed: %+v %v, want 202", c, err)
	}
	// A continuation of desk (the leaf's pause's, delivered late) finds
	// desk flagged: it finalises it, the leaf's leg still holding the leaf.
	if err := o.E.ContinueCaller(ctx, res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	if v := o.View(t, "desk", res.TaskID); v.Status != agent.StatusCanceled {
		t.Fatalf("desk after its continuation: %s", v.Status)
	}
	leafRun.Execute(ctx, agent.Discard)
	b := callResult(t, o, res.TaskID, "leaf")
	if b == nil {
		t.Fatal("desk ended Canceled with no result for its call of leaf")
	}
	if txt := resultText(b); b.Status != agent.ResultError || !strings.HasPrefix(txt, agent.CodeOutcomeUnknown) {
		t.Errorf("desk's result for its call of leaf, whose leg ran when desk was finalised: %s %q; want %s", b.Status, txt, agent.CodeOutcomeUnknown)
	}
	if got := o.Lines("running.txt"); len(got) != 1 {
		t.Errorf("running.txt = %q: the leaf's leg, claimed before the flag, ran its append", got)
	}
}

// testCancelOwesOnlyItsOwn: desk waits on its leaf; each one's pause is
// delivered to its webhook (a receiver answering 2xx), then desk is
// canceled. The cancel's writes owe the cancel's notifications only: the
// pauses' items, delivered and deleted, are never put again — a webhook
// is delivered once to a receiver that answers 2xx (docs/architecture.md,
// "The outbox and the notifier").
func testCancelOwesOnlyItsOwn(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "owed.txt")
	ctx := context.Background()
	hooks := &notifytest.Hooks{}
	d := &notify.Dispatcher{Engine: o.E, Webhooks: hooks, Log: slog.New(slog.DiscardHandler)}
	deliver := func() {
		t.Helper()
		for _, r := range [][2]string{{res.TaskID, res.RequestID}, {p.TaskID, p.RequestID}} {
			items, err := o.Store.ListRequestOutbox(ctx, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Kind != agent.OutboxWebhook {
					continue
				}
				if err := d.Deliver(ctx, it); err != nil {
					t.Fatalf("deliver %s: %v", it.SK(), err)
				}
			}
		}
	}
	deliver()
	if n := len(hooks.Delivered()); n != 2 {
		t.Fatalf("%d webhooks delivered after the pause, want 2 (desk's and the leaf's request.paused): %v", n, notifytest.Types(hooks.Delivered()))
	}
	c, err := o.E.Cancel(ctx, agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID})
	if err != nil {
		t.Fatalf("cancel of desk: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(c)); diff != "" {
		t.Fatalf("cancel of desk (-want +got):\n%s", diff)
	}
	deliver()
	got := hooks.Delivered()
	count := map[string]int{}
	for _, w := range got {
		count[w.ID]++
		if count[w.ID] > 1 {
			t.Errorf("webhook %s (%s of %s) delivered %d times, each time answered 2xx", w.ID, w.Type, w.Agent, count[w.ID])
		}
	}
	types := map[string]int{}
	for _, w := range got {
		types[w.Agent+" "+w.Type]++
	}
	for _, k := range []string{"desk " + agent.EventRequestPaused, "leaf " + agent.EventRequestPaused, "desk " + agent.EventRequestCanceled, "leaf " + agent.EventRequestCanceled} {
		if types[k] != 1 {
			t.Errorf("%s delivered %d times, want once (all: %v)", k, types[k], types)
		}
	}
}
