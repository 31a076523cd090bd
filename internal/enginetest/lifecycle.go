package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// follow reads a request's events after an id, as GET …/events does.
func (env *Env) follow(t *testing.T, res *agent.RequestResult, after int64) []agent.Event {
	t.Helper()
	f, err := env.E.OpenEvents(context.Background(), "acc", "alice", res.TaskID, res.RequestID, after)
	if err != nil {
		t.Fatalf("OpenEvents(after %d): %v", after, err)
	}
	rec := &Recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f.Stream(ctx, rec)
	return rec.Events
}

func sig(evs []agent.Event) []string {
	var out []string
	for _, e := range evs {
		data, _ := json.Marshal(e.Data)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		delete(m, "usage")
		data, _ = json.Marshal(m)
		out = append(out, fmt.Sprintf("%d %s %s", e.ID, e.Name, data))
	}
	return out
}

// testReconnectEverywhere cuts the stream of a request that pauses and
// resumes at every event index: a reconnect with that Last-Event-ID gets the
// events after it, exactly once and in order, up to the leg's end.
func testReconnectEverywhere(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "a"), Call("g1", "guarded", "b")), agenttest.Say("x", "y", "z"))
	res, pauseRec := env.Invoke(t, "", "go")
	out, resumeRec, err := env.Resume(res, "alice", Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	live := append(append([]agent.Event(nil), pauseRec.Events...), resumeRec.Events...)
	for i, e := range live {
		if e.ID != int64(i+1) {
			t.Fatalf("live event %d has id %d", i, e.ID)
		}
	}
	pauseEnd := len(pauseRec.Events)
	for cut := 0; cut < len(live); cut++ {
		end := len(live)
		if cut < pauseEnd {
			end = pauseEnd
		}
		got := env.follow(t, res, int64(cut))
		if diff := cmp.Diff(sig(live[cut:end]), sig(got)); diff != "" {
			t.Fatalf("reconnect after %d (-want +got):\n%s", cut, diff)
		}
	}
	if got := env.follow(t, res, int64(len(live))); len(got) != 0 {
		t.Errorf("after the last event: %v", sig(got))
	}
}

// testFollowLive follows a request while it runs.
func testFollowLive(t *testing.T, env *Env) {
	env.Safe.Block = make(chan struct{})
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "slow")), agenttest.Say("finally"))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	res := &agent.RequestResult{TaskID: run.TaskID(), RequestID: run.RequestID()}
	liveRec := &Recorder{}
	done := make(chan struct{})
	go func() { run.Execute(context.Background(), liveRec); close(done) }()
	followed := make(chan []agent.Event, 1)
	go func() { followed <- env.follow(t, res, 0) }()
	time.Sleep(300 * time.Millisecond) // the follower reads while the tool runs
	close(env.Safe.Block)
	<-done
	got := <-followed
	if diff := cmp.Diff(sig(liveRec.Events), sig(got)); diff != "" {
		t.Errorf("followed live (-want +got):\n%s", diff)
	}
}

func testRequestLost(t *testing.T, env *Env) {
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "lost"}}})
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(5 * time.Minute)
	got := env.follow(t, &agent.RequestResult{TaskID: run.TaskID(), RequestID: run.RequestID()}, 0)
	type event struct{ Name, Code string }
	events := each(got, func(e agent.Event) event {
		data, _ := e.Data.(map[string]string)
		return event{e.Name, data["code"]}
	})
	if diff := cmp.Diff([]event{{agent.EventError, agent.CodeRequestLost}}, events); diff != "" {
		t.Fatalf("follower of a dead request (-want +got):\n%s", diff)
	}
}

func testEventsRefusals(t *testing.T, env *Env) {
	env.Model.Add(agenttest.Say("done"))
	res, _ := env.Invoke(t, "", "hi")
	ctx := context.Background()
	for _, tc := range []struct {
		user, task, req, code string
	}{
		{"alice", "x", res.RequestID, agent.CodeInvalidID},
		{"alice", res.TaskID, "y", agent.CodeInvalidID},
		{"alice", agent.NewID(), res.RequestID, agent.CodeTaskNotFound},
		{"alice", res.TaskID, agent.NewID(), agent.CodeRequestNotFound},
		{"mallory", res.TaskID, res.RequestID, agent.CodeNotOwner},
	} {
		if _, err := env.E.OpenEvents(ctx, "acc", tc.user, tc.task, tc.req, 0); Code(err) != tc.code {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	env.Advance(25 * time.Hour)
	if _, err := env.E.OpenEvents(ctx, "acc", "alice", res.TaskID, res.RequestID, 0); Code(err) != agent.CodeEventsExpired {
		t.Errorf("after the log's ttl: %v", err)
	}
	// A log whose first batch expired while a later one lives: 410 too.
	gap := []eventlog.Event{{ID: 9, Name: agent.EventAnswer, Data: json.RawMessage(`{"delta":"late"}`)}}
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.AppendEvents(ctx, run.TaskID(), run.RequestID(), gap, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := env.E.OpenEvents(ctx, "acc", "alice", run.TaskID(), run.RequestID(), 2); Code(err) != agent.CodeEventsExpired {
		t.Errorf("a log with a hole at its start: %v", err)
	}
}

func testIdempotentInvokes(t *testing.T, env *Env) {
	release := make(chan struct{})
	env.Model.Add(func(ctx context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "once"})
		<-release
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("once")}, StopReason: agent.StopEndTurn}, nil
	})
	body := []byte(`{"items":[{"content":"do it once"}]}`)
	idem := &agent.Idempotency{Key: "order-42", BodyHash: agent.BodyHash(nil, body)}
	first := sameOutcome(t, 20, func() { time.Sleep(200 * time.Millisecond); close(release) },
		func() (*agent.RequestResult, error) {
			run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it once"}}, Idem: idem})
			if err != nil {
				return nil, err
			}
			return run.Execute(context.Background(), agent.Discard), nil
		})
	if c := env.Model.NCalls(); c != 1 {
		t.Errorf("the model was called %d times", c)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "once"}, saidOf(first)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	// The same key with another body: 422, nothing runs.
	other := &agent.Idempotency{Key: "order-42", BodyHash: agent.BodyHash(nil, []byte(`{"items":[{"content":"something else"}]}`))}
	if _, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "something else"}}, Idem: other}); Code(err) != agent.CodeIdempotencyKeyReused {
		t.Errorf("another body: %v", err)
	}
	// Another user's key is another key.
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "bob", Items: []agent.InputItem{{Content: "something else"}}, Idem: other})
	if err != nil || run.RequestID() == first.RequestID {
		t.Fatalf("bob's key: %v", err)
	}
	env.Model.Add(agenttest.Say("bob"))
	run.Execute(context.Background(), nil)
	// A refusal binds nothing.
	bad := &agent.Idempotency{Key: "k2", BodyHash: "h"}
	if _, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: agent.NewID(), Items: []agent.InputItem{{Content: "x"}}, Idem: bad}); Code(err) != agent.CodeTaskNotFound {
		t.Fatalf("refusal: %v", err)
	}
	if _, err := env.Store.GetIdem(context.Background(), "k2"); err == nil {
		t.Error("a refusal bound its key")
	}
	if _, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "x"}}, Idem: &agent.Idempotency{Key: "bad\x01key"}}); Code(err) != agent.CodeInvalidIdempotencyKey {
		t.Errorf("bad key: %v", err)
	}
}

func testIdempotentResume(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "second")))
	idem := &agent.Idempotency{Key: "approve-1", BodyHash: "approve-all"}
	resume := func() (*agent.RequestResult, error) {
		run, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve(), Idem: idem})
		if err != nil {
			return nil, err
		}
		return run.Execute(context.Background(), nil), nil
	}
	first, err := resume()
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(first)); diff != "" {
		t.Fatalf("first (-want +got):\n%s", diff)
	}
	// The retry (no round in its body) still means round 1: it answers the
	// outcome of that leg instead of round_required.
	again, err := resume()
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
		t.Fatalf("retry (-want +got):\n%s", diff)
	}
	if n := len(env.Guarded.Runs()); n != 1 {
		t.Errorf("guarded ran %d times", n)
	}
}

func testDelete(t *testing.T, env *Env) {
	ctx := context.Background()
	env.Model.Add(agenttest.Say("bye"))
	res, _ := env.Invoke(t, "", "hi")
	if err := env.E.DeleteTask(ctx, "acc", "mallory", res.TaskID); Code(err) != agent.CodeNotOwner {
		t.Errorf("mallory's delete: %v", err)
	}
	if err := env.E.DeleteTask(ctx, "acc", "alice", res.TaskID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.E.GetTask(ctx, "acc", "alice", res.TaskID, agent.ViewOptions{}); Code(err) != agent.CodeTaskNotFound {
		t.Errorf("GET after delete: %v", err)
	}
	if err := env.E.DeleteTask(ctx, "acc", "alice", res.TaskID); Code(err) != agent.CodeTaskNotFound {
		t.Errorf("delete twice: %v", err)
	}
	list, _, _ := env.E.ListTasks(ctx, agent.ListQuery{Agent: "acc", UserID: "alice", Limit: 10})
	if len(list) != 0 {
		t.Errorf("the list still has it: %+v", list)
	}
	// A retry with the Idempotency-Key of a deleted task's request: 404.
	idem := &agent.Idempotency{Key: "k-del", BodyHash: "h"}
	env.Model.Add(agenttest.Say("keyed"))
	keyed, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "keyed"}}, Idem: idem})
	if err != nil {
		t.Fatal(err)
	}
	keyed.Execute(ctx, nil)
	if err := env.E.DeleteTask(ctx, "acc", "alice", keyed.TaskID()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "keyed"}}, Idem: idem}); Code(err) != agent.CodeTaskNotFound {
		t.Errorf("a keyed retry after the delete: %v", err)
	}
	paused, _ := env.Pause(t)
	if err := env.E.DeleteTask(ctx, "acc", "alice", paused.TaskID); Code(err) != agent.CodeTaskPaused {
		t.Errorf("delete of a paused task: %v", err)
	}
	run, _ := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "running"}}})
	if err := env.E.DeleteTask(ctx, "acc", "alice", run.TaskID()); Code(err) != agent.CodeTaskBusy {
		t.Errorf("delete of a running task: %v", err)
	}
}

func testRetention(t *testing.T, env *Env) {
	ctx := context.Background()
	env.E.RetentionDays = 3
	env.Model.Add(agenttest.Say("kept"))
	res, _ := env.Invoke(t, "", "hi")
	meta, err := env.Store.GetTask(ctx, res.TaskID)
	if want := time.Now().AddDate(0, 0, 3).Unix(); err != nil || meta.RetainUntil < want-5 || meta.RetainUntil > want {
		t.Fatalf("after the finish: RetainUntil %d, %v", meta.RetainUntil, err)
	}
	env.Model.Add(agenttest.Say("again"))
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Items: []agent.InputItem{{Content: "more"}}})
	if err != nil {
		t.Fatal(err)
	}
	if meta, _ := env.Store.GetTask(ctx, res.TaskID); meta.RetainUntil != 0 {
		t.Errorf("a running task keeps RetainUntil %d", meta.RetainUntil)
	}
	run.Execute(ctx, nil)
	if _, items, err := env.Store.LoadTask(ctx, res.TaskID); err != nil || len(items) != 4 {
		t.Errorf("history: %d items, %v", len(items), err)
	}
}

// testDeadLegEvents: a leg that died had logged events META never counted;
// the request recorded Failed lease_expired ends its log after them.
func testDeadLegEvents(t *testing.T, env *Env) {
	ctx := context.Background()
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "doomed"}}})
	if err != nil {
		t.Fatal(err)
	}
	var logged []eventlog.Event
	for id := int64(1); id <= 5; id++ {
		logged = append(logged, eventlog.Event{ID: id, Name: agent.EventAnswer, Data: json.RawMessage(`{"delta":"x"}`), Epoch: 1})
	}
	if err := env.Store.AppendEvents(ctx, run.TaskID(), run.RequestID(), logged, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	env.Advance(5 * time.Minute)
	env.Model.Add(agenttest.Say("next"))
	env.Invoke(t, run.TaskID(), "after the crash")
	dead := &agent.RequestResult{TaskID: run.TaskID(), RequestID: run.RequestID()}
	got := env.follow(t, dead, 5)
	type event struct {
		ID   int64
		Name string
	}
	events := each(got, func(e agent.Event) event { return event{e.ID, e.Name} })
	if diff := cmp.Diff([]event{{6, agent.EventError}}, events); diff != "" {
		t.Fatalf("after the dead leg's events (-want +got):\n%s", diff)
	}
	// What the dead leg logged after its last commit (here: all of it) is
	// cut off (docs/architecture.md): the log shows the error that ended it.
	ids := each(env.follow(t, dead, 0), func(e agent.Event) int64 { return e.ID })
	if diff := cmp.Diff([]int64{6}, ids); diff != "" {
		t.Errorf("the whole log's event ids (-want +got):\n%s", diff)
	}
}

// testLateFlushHidden: a resume's leg dies after logging two events; a
// duplicate takes it over and completes; then the dead holder (a process
// that was only stalled) flushes late events under its old epoch, with ids
// the taker used too. Readers see the taker's events, never the late ones,
// nor those the dead leg logged after its last commit.
func testLateFlushHidden(t *testing.T, env *Env) {
	ctx := context.Background()
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("r1", "retry", "sync")))
	res, _ := env.Invoke(t, "", "do it")
	paused := env.follow(t, res, 0)
	last := paused[len(paused)-1].ID
	if _, err := env.E.StartResume(ctx, agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()}); err != nil {
		t.Fatal(err)
	}
	meta, err := env.Store.GetTask(ctx, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	epoch := meta.Active.Epoch
	stored := func(from, to int64, tag string) []eventlog.Event {
		var out []eventlog.Event
		for id := from; id <= to; id++ {
			out = append(out, eventlog.Event{ID: id, Name: agent.EventAnswer, Data: json.RawMessage(`{"delta":"` + tag + `"}`), Epoch: epoch})
		}
		return out
	}
	if err := env.Store.AppendEvents(ctx, res.TaskID, res.RequestID, stored(last+1, last+2, "dead"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	env.Advance(5 * time.Minute)
	env.Model.Add(agenttest.Say("recovered"))
	out, _, err := env.Resume(res, "alice", Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("takeover: %+v %v", out, err)
	}
	if err := env.Store.AppendEvents(ctx, res.TaskID, res.RequestID, stored(last+3, last+6, "late"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got := env.follow(t, res, last)
	if len(got) == 0 || got[0].ID != last+3 || got[0].Name != agent.EventRequestStarted || got[len(got)-1].Name != agent.EventRequestComplete {
		t.Fatalf("the resume's events: %v", sig(got))
	}
	for _, s := range sig(got) {
		if strings.Contains(s, `"dead"`) || strings.Contains(s, `"late"`) {
			t.Errorf("a dead holder's event is visible: %s", s)
		}
	}
}
