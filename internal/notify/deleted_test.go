package notify_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// TestTokenOfDeletedTask: a task deleted after its request ended but
// before the token's answer went out (Step Functions failing meanwhile)
// still answers the token, once, with the request's outcome: the delete
// keeps the record the owed answer is for (docs/api.md, Delete a task) —
// not silence, which left the state machine waiting until its own
// timeout, nor a task_not_found that hid how the request ended.
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
	time.Sleep(100 * time.Millisecond) // a second answer would come now
	var answers []string
	for _, c := range a.sfn.Calls() {
		if c.Op != "SendTaskHeartbeat" && c.Status == 200 {
			var got agent.RequestResult
			_ = json.Unmarshal([]byte(c.Output), &got)
			answers = append(answers, c.Op+" "+c.Error+string(got.Status)+" "+got.Output)
		}
	}
	if len(answers) != 1 || answers[0] != "SendTaskSuccess Completed done" {
		t.Errorf("accepted answers: %q; want one SendTaskSuccess of the Completed result", answers)
	}
}
