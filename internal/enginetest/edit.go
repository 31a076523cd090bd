package enginetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

func (env *Env) edit(t *testing.T, res *agent.RequestResult, text string) (*agent.RequestResult, error) {
	t.Helper()
	run, err := env.E.StartEdit(context.Background(), agent.EditInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Items: []agent.InputItem{{Content: text}}})
	if err != nil {
		return nil, err
	}
	return run.Execute(context.Background(), nil), nil
}

func texts(msgs []agent.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == agent.BlockText {
				out = append(out, m.Role+":"+b.Text)
			}
		}
	}
	return out
}

func testEditThenFollowOn(t *testing.T, env *Env) {
	env.Model.Add(agenttest.Say("A1"), agenttest.Say("B1"))
	first, _ := env.Invoke(t, "", "question A")
	second, _ := env.Invoke(t, first.TaskID, "question B")
	env.Model.Add(agenttest.Say("B2"))
	edited, err := env.edit(t, second, "question B, better")
	if err != nil {
		t.Fatalf("edit: %v", err)
	}
	type edit struct {
		Status     agent.Status
		NewRequest bool // not the edited one's id
	}
	if diff := cmp.Diff(edit{agent.StatusCompleted, true}, edit{edited.Status, edited.RequestID != second.RequestID}); diff != "" {
		t.Fatalf("edit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user:question A", "assistant:A1", "user:question B, better"}, texts(env.Model.Call(2).Messages)); diff != "" {
		t.Errorf("the edit's model call (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("C"))
	env.Invoke(t, first.TaskID, "question C")
	want := []string{"user:question A", "assistant:A1", "user:question B, better", "assistant:B2", "user:question C"}
	if diff := cmp.Diff(want, texts(env.Model.Call(3).Messages)); diff != "" {
		t.Errorf("the follow-on sees only the active branch (-want +got):\n%s", diff)
	}
	v, _ := env.E.GetTask(context.Background(), "acc", "alice", first.TaskID, agent.ViewOptions{})
	if n := len(v.Items); n != 6 {
		t.Errorf("GET task shows %d items, want 6 (superseded hidden)", n)
	}
	all, _ := env.E.GetTask(context.Background(), "acc", "alice", first.TaskID, agent.ViewOptions{IncludeSuperseded: true})
	if n := len(all.Items); n != 8 || all.Items[2].SupersededBy != edited.RequestID {
		t.Errorf("with superseded: %d items, item 3 superseded by %q", n, all.Items[2].SupersededBy)
	}
	var sup []string
	for _, r := range v.Requests {
		if r.SupersededBy != nil {
			sup = append(sup, r.RequestID+">"+*r.SupersededBy)
		}
	}
	if diff := cmp.Diff([]string{second.RequestID + ">" + edited.RequestID}, sup); diff != "" {
		t.Errorf("superseded requests (-want +got):\n%s", diff)
	}
	if _, err := env.edit(t, second, "again"); Code(err) != agent.CodeRequestSuperseded {
		t.Errorf("edit of a superseded request: %v", err)
	}
	// Editing the first request supersedes everything after it.
	env.Model.Add(agenttest.Say("A2"))
	if _, err := env.edit(t, first, "question A, again"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user:question A, again"}, texts(env.Model.Call(4).Messages)); diff != "" {
		t.Errorf("after editing the first request (-want +got):\n%s", diff)
	}
}

func testEditRefusals(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	if _, err := env.edit(t, res, "x"); Code(err) != agent.CodeTaskPaused {
		t.Errorf("edit of a paused task: %v", err)
	}
	unknown := *res
	unknown.RequestID = agent.NewID()
	if _, err := env.edit(t, &unknown, "x"); Code(err) != agent.CodeRequestNotFound {
		t.Errorf("edit of an unknown request: %v", err)
	}
	if _, err := env.E.StartEdit(context.Background(), agent.EditInput{Agent: "acc", UserID: "mallory", TaskID: res.TaskID, RequestID: res.RequestID, Items: []agent.InputItem{{Content: "x"}}}); Code(err) != agent.CodeNotOwner {
		t.Errorf("mallory's edit: %v", err)
	}
	started := make(chan struct{})
	env.Model.Add(agenttest.Blocking(started))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "busy"}}})
	if err != nil {
		t.Fatal(err)
	}
	busy := &agent.RequestResult{TaskID: run.TaskID(), RequestID: run.RequestID()}
	done := make(chan struct{})
	go func() { run.Execute(context.Background(), nil); close(done) }()
	<-started
	if _, err := env.edit(t, busy, "x"); Code(err) != agent.CodeTaskBusy {
		t.Errorf("edit of a busy task: %v", err)
	}
	if _, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: busy.TaskID}); err != nil {
		t.Fatal(err)
	}
	<-done
}
