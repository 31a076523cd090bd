package notify_test

import (
	"context"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// TestTokenOfDeletedTask: a task deleted after its request ended but
// before the token's answer went out (Step Functions failing meanwhile)
// still answers the token, once: SendTaskFailure Hitch.task_not_found, as
// the notifier answers a token whose task is gone — not silence, which
// left the state machine waiting until its own timeout (the delete took
// the token with the task).
func TestTokenOfDeletedTask(t *testing.T) {
	a := startAnswering(t)
	a.sfn.FailNext(1 << 20)
	a.env.Model.Add(agenttest.Say("done"))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-del"}, "hi")
	if res.Status != agent.StatusCompleted {
		t.Fatalf("invoke: %+v", res)
	}
	wait(t, "a refused answer", func() bool {
		for _, c := range a.sfn.Calls() {
			if c.Op == "SendTaskSuccess" {
				return true
			}
		}
		return false
	})
	if err := a.env.E.DeleteTask(context.Background(), "acc", "alice", res.TaskID); err != nil {
		t.Fatal(err)
	}
	// An attempt resolved before the delete may still be on its way:
	// once one resolved after it (a refused failure) has come, every
	// later one answers the deleted task.
	wait(t, "a refused answer after the delete", func() bool {
		for _, c := range a.sfn.Calls() {
			if c.Op == "SendTaskFailure" {
				return true
			}
		}
		return false
	})
	before := len(a.sfn.Calls())
	a.sfn.FailNext(0)
	wait(t, "the answer after the delete", func() bool {
		for _, c := range a.sfn.Calls()[before:] {
			if c.Op != "SendTaskHeartbeat" && c.Status == 200 {
				return true
			}
		}
		return false
	})
	var answers []string
	for _, c := range a.sfn.Calls() {
		if c.Op != "SendTaskHeartbeat" && c.Status == 200 {
			answers = append(answers, c.Op+" "+c.Error)
		}
	}
	if len(answers) != 1 || answers[0] != "SendTaskFailure Hitch."+agent.CodeTaskNotFound {
		t.Errorf("accepted answers: %q; want one SendTaskFailure Hitch.task_not_found", answers)
	}
}
