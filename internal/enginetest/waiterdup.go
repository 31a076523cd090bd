package enginetest

import (
	"context"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// testDuplicateInFlightBindsItsWaiter: a decision sent again while its
// leg runs (a duplicate that waits) binds its task token to the request
// (docs/guide/notifications.md, "Direct operations, task tokens and
// callbacks": every direct call bound to the request puts its token), and the leg's later writes keep
// it: the end owes that token its answer. Before, the end answered only
// the claim's waiters (the torture test's invariant 7, seed 811358580).
func testDuplicateInFlightBindsItsWaiter(t *testing.T, env *Env) {
	ctx := context.Background()
	res, _ := env.Pause(t)
	started, release := make(chan struct{}), make(chan struct{})
	env.Model.Add(func(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		close(started)
		<-release
		return agenttest.Say("deleted")(ctx, req, on)
	})
	resume := func(w *agent.Waiter) agent.Leg {
		run, err := env.E.StartResume(ctx, agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve(), Waiter: w})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	first := make(chan *agent.RequestResult, 1)
	go func() { first <- resume(nil).Execute(ctx, nil) }()
	<-started
	dup := &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-dup", OnPause: agent.OnPauseWait}
	second := make(chan *agent.RequestResult, 1)
	run := resume(dup)
	go func() { second <- run.Execute(ctx, nil) }()
	close(release)
	for name, ch := range map[string]chan *agent.RequestResult{"the claim": first, "the duplicate": second} {
		if got := <-ch; got.Status != agent.StatusCompleted {
			t.Errorf("%s answered %s %+v", name, got.Status, got.Error)
		}
	}
	items, err := env.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	hash := dup.Ref().Hash
	answered := false
	for _, it := range items {
		if it.Kind == agent.OutboxTaskToken && it.Hash == hash && it.Event == agent.EventRequestCompleted {
			answered = true
		}
	}
	if !answered {
		t.Errorf("the end owes the duplicate's token no answer; outbox: %+v", items)
	}
	if tok, err := env.Store.GetToken(ctx, res.TaskID, res.RequestID, hash); err != nil || tok.ID != "tok-dup" {
		t.Errorf("the duplicate's token: %+v %v", tok, err)
	}
}
