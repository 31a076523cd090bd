package enginetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// startBlocked starts a request whose model call blocks until its context
// ends; it returns the run's result channel and the recorder.
func (env *Env) startBlocked(t *testing.T, e *agent.Engine) (agent.Leg, <-chan *agent.RequestResult, *Recorder) {
	t.Helper()
	started := make(chan struct{})
	env.Model.Add(agenttest.Blocking(started))
	run, err := e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "long job"}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	done := make(chan *agent.RequestResult, 1)
	go func() { done <- run.Execute(context.Background(), rec) }()
	<-started
	return run, done, rec
}

func testCancelPaused(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Reason: "changed my mind"})
	if err != nil {
		t.Fatalf("cancel of a paused request: %v", err)
	}
	type reply struct {
		Pending   bool
		Status    agent.Status
		RequestID string
	}
	got := reply{Pending: out.Pending}
	if out.Result != nil {
		got.Status, got.RequestID = out.Result.Status, out.Result.RequestID
	}
	if diff := cmp.Diff(reply{false, agent.StatusCanceled, res.RequestID}, got); diff != "" {
		t.Fatalf("cancel of a paused request (-want +got):\n%s", diff)
	}
	v, _ := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	r := v.Requests[0]
	type canceledBy struct {
		Status     agent.Status
		By, Reason string
	}
	if diff := cmp.Diff(canceledBy{agent.StatusCanceled, "alice", "changed my mind"}, canceledBy{v.Status, strOf(r.CanceledBy), strOf(r.CancelReason)}); diff != "" {
		t.Fatalf("after cancel (-want +got):\n%s", diff)
	}
	last := v.Items[len(v.Items)-1]
	if last.Role != "tool" || len(last.Content) != 2 || !strings.Contains(last.Content[1]["content"].([]map[string]any)[0]["text"].(string), "canceled by alice") {
		t.Errorf("the calls were not closed: %+v", last)
	}
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeNotPaused {
		t.Errorf("resume after cancel: %v", err)
	}
	if _, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID}); Code(err) != agent.CodeNotRunning {
		t.Errorf("cancel of an idle task: %v", err)
	}
	if _, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "mallory", TaskID: res.TaskID}); Code(err) != agent.CodeNotOwner {
		t.Errorf("mallory's cancel: %v", err)
	}
	env.Model.Add(agenttest.Say("fine"))
	if next, _ := env.Invoke(t, res.TaskID, "something else"); next.Status != agent.StatusCompleted {
		t.Errorf("follow-on after cancel: %+v", next)
	}
}

func testCancelRunning(t *testing.T, env *Env) {
	run, done, rec := env.startBlocked(t, env.E)
	out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: run.TaskID(), Reason: "stop"})
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(out)); diff != "" {
		t.Fatalf("cancel (-want +got):\n%s", diff)
	}
	res := <-done
	if res.Status != agent.StatusCanceled {
		t.Fatalf("the run ended %+v", res)
	}
	names := rec.Names()
	if diff := cmp.Diff([]string{"request_started", "answer", "cancelled", "request_complete"}, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("next"))
	if next, _ := env.Invoke(t, run.TaskID(), "again"); next.Status != agent.StatusCompleted {
		t.Errorf("follow-on after cancel: %+v", next)
	}
	if err := agenttest.CheckMessages(env.Model.Call(1).Messages); err != nil {
		t.Error(err)
	}
}

func testCancelMidTool(t *testing.T, env *Env) {
	env.Safe.Block = make(chan struct{})
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "slow")))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	tid := run.TaskID()
	rec := &Recorder{}
	done := make(chan *agent.RequestResult, 1)
	go func() { done <- run.Execute(context.Background(), rec) }()
	// Wait until the call is recorded (it runs after its iteration write).
	waitFor(t, func() bool {
		_, items, _ := env.Store.LoadTask(context.Background(), tid)
		return len(items) >= 2
	})
	out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: tid})
	if err != nil || out.Result == nil || out.Result.Status != agent.StatusCanceled {
		t.Fatalf("cancel mid-tool: %+v %v", out, err)
	}
	<-done
	_, items, _ := env.Store.LoadTask(context.Background(), tid)
	last := items[len(items)-1]
	if last.Role != agent.RoleTool || last.Content[0].Status != agent.ResultError || !strings.Contains(last.Content[0].Content[0].Text, "canceled") {
		t.Errorf("the tool's result: %+v", last)
	}
}

func testCancelThroughStore(t *testing.T, env *Env) {
	// Another process: a second engine over the same store, without this
	// one's registry of running legs.
	e := env.E
	other := &agent.Engine{Store: e.Store, Model: e.Model, Agents: e.Agents, LegTimeout: e.LegTimeout, Log: e.Log, Now: e.Now}
	run, done, rec := env.startBlocked(t, env.E)
	start := time.Now()
	out, err := other.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: run.TaskID()})
	if err != nil || out.Result == nil || out.Result.Status != agent.StatusCanceled {
		t.Fatalf("cancel through the store: %+v %v", out, err)
	}
	res := <-done
	if res.Status != agent.StatusCanceled || rec.Names()[2] != "cancelled" {
		t.Fatalf("%+v %v", res, rec.Names())
	}
	t.Logf("canceled through the store in %v", time.Since(start))
}

func testCancelDeadRequest(t *testing.T, env *Env) {
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "lost"}}})
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(5 * time.Minute)
	out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: run.TaskID()})
	if err != nil {
		t.Fatalf("cancel of a dead request: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(out)); diff != "" {
		t.Fatalf("cancel of a dead request (-want +got):\n%s", diff)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testCancelRacesADecision: a cancel and an approval of the same paused
// request, sent at once, again and again. Whichever wins, the request
// ends once, with one outcome, and the webhook of that outcome is owed
// (an outbox item put once, never over another: the store's guard).
func testCancelRacesADecision(t *testing.T, env *Env) {
	ctx := context.Background()
	for i := range 12 {
		env.Model.Clear()
		res, _ := env.Pause(t)
		env.Model.Add(agenttest.Say("done"))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := env.E.Cancel(ctx, agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Reason: "race"}); err != nil && Code(err) != agent.CodeNotRunning {
				t.Errorf("round %d: cancel: %v", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, _, err := env.Resume(res, "alice", Approve()); err != nil && Code(err) != agent.CodeNotPaused {
				t.Errorf("round %d: approve: %v", i, err)
			}
		}()
		wg.Wait()
		v, err := env.E.GetTask(ctx, "acc", "alice", res.TaskID, agent.ViewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != agent.StatusCanceled && v.Status != agent.StatusCompleted {
			t.Errorf("round %d: the task is %s after the race", i, v.Status)
			continue
		}
		items, err := env.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		want := "request." + strings.ToLower(string(v.Status))
		owed := false
		for _, it := range items {
			owed = owed || (it.Kind == agent.OutboxWebhook && it.Event == want)
		}
		if !owed {
			t.Errorf("round %d: the request ended %s and no %s webhook is owed: %+v", i, v.Status, want, items)
		}
	}
}

// testUnansweredMessageStaysApart: a message whose request ended before the
// model answered it (canceled, failed) is not read as part of the next
// message. Merged, a canceled "long job" and a failed "delete X" would be
// instructions of the follow-on's turn, and the model would carry them out.
func testUnansweredMessageStaysApart(t *testing.T, env *Env) {
	run, done, _ := env.startBlocked(t, env.E)
	if out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: run.TaskID()}); err != nil || out.Result.Status != agent.StatusCanceled {
		t.Fatalf("cancel: %+v %v", out, err)
	}
	<-done
	env.Model.Add(agenttest.FailWith(errors.New("the model is down")))
	if failed, _ := env.Invoke(t, run.TaskID(), "delete X"); failed.Status != agent.StatusFailed {
		t.Fatalf("the failing turn: %+v", failed)
	}
	env.Model.Add(agenttest.Say("here"))
	if next, _ := env.Invoke(t, run.TaskID(), "list the files"); next.Status != agent.StatusCompleted {
		t.Fatalf("the follow-on: %+v", next)
	}
	const note = "(no answer: this request ended before the model answered it)"
	got := textsOf(env.Model.Call(env.Model.NCalls() - 1).Messages)
	want := []string{"user: long job", "assistant: " + note, "user: delete X", "assistant: " + note, "user: list the files"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the follow-on's messages (-want +got):\n%s", diff)
	}
}

// textsOf renders messages as "role: text", their text blocks joined by "|".
func textsOf(msgs []agent.Message) []string {
	var out []string
	for _, m := range msgs {
		var ts []string
		for _, b := range m.Content {
			if b.Type == agent.BlockText {
				ts = append(ts, b.Text)
			}
		}
		out = append(out, m.Role+": "+strings.Join(ts, "|"))
	}
	return out
}
