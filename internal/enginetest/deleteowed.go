package enginetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// testDeleteKeepsOwedNotifications: a task deleted right after its
// request ended, before the notifier got to the outbox, still owes that
// end's notifications — the webhook and the task token's answer, with the
// token — (docs/api.md, Delete a task): the delete takes the task, not the
// outbox items a committed end wrote nor the token they answer (the
// torture test's invariant 7, a deleted request's end), nor the records
// of the requests those items are for, which are their payload.
func testDeleteKeepsOwedNotifications(t *testing.T, env *Env) {
	ctx := context.Background()
	env.Model.Add(agenttest.Say("done"))
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "hi"}},
		Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-deleted", OnPause: agent.OnPauseWait}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(ctx, nil)
	if res.Status != agent.StatusCompleted {
		t.Fatalf("invoke: %+v", res)
	}
	hash := ""
	owed := func() map[string]bool {
		items, err := env.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, it := range items {
			if it.Kind == agent.OutboxWebhook && it.Event == "request.completed" {
				m["webhook"] = true
			}
			if it.Kind == agent.OutboxTaskToken && it.Event == "request.completed" {
				m["token"], hash = true, it.Hash
			}
		}
		return m
	}
	if got := owed(); !got["webhook"] || !got["token"] {
		t.Fatalf("before the delete, owed: %v; want the webhook and the token's answer", got)
	}
	if err := env.E.DeleteTask(ctx, "acc", "alice", res.TaskID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.E.GetTask(ctx, "acc", "alice", res.TaskID, agent.ViewOptions{}); Code(err) != agent.CodeTaskNotFound {
		t.Errorf("GET after the delete: %v", err)
	}
	if got := owed(); !got["webhook"] || !got["token"] {
		t.Errorf("after the delete, owed: %v; want the webhook and the token's answer still", got)
	}
	if _, err := env.Store.GetToken(ctx, res.TaskID, res.RequestID, hash); err != nil {
		t.Errorf("the token after the delete: %v", err)
	}
	// What the items tell still resolves: the request's outcome, from the
	// record the delete keeps for them.
	items, err := env.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		got, err := env.E.OutboxResult(ctx, it)
		if err != nil {
			t.Errorf("the %s item after the delete: %v, want the Completed result", it.Kind, err)
			continue
		}
		type result struct {
			Status            agent.Status
			Output, RequestID string
		}
		if diff := cmp.Diff(result{agent.StatusCompleted, "done", res.RequestID}, result{got.Status, got.Output, got.RequestID}); diff != "" {
			t.Errorf("the %s item after the delete resolves to another result (-want +got):\n%s", it.Kind, diff)
		}
	}
}
