package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/durable"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
	"github.com/hitch-agents/hitch/internal/sfnfake"
	"github.com/hitch-agents/hitch/internal/stepfunctions"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// answering runs an engine on memory with a dispatcher answering task
// tokens on a Step Functions fake and callbacks on a Lambda fake.
type answering struct {
	env *enginetest.Env
	sfn *sfnfake.Server
	fn  *fakelambda.Server
}

func startAnswering(t *testing.T) *answering {
	t.Helper()
	store := memstore.New()
	env := enginetest.New(t, store)
	a := &answering{env: env, sfn: sfnfake.New(t), fn: fakelambda.New(t)}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: &notifytest.Hooks{}, Log: slog.New(slog.DiscardHandler),
		Answerers: map[string]notify.Answerer{
			agent.WaiterTaskToken: &stepfunctions.Client{API: a.sfn.Client()},
			agent.WaiterCallback:  &durable.Client{API: a.fn.Client(t)},
		}}
	r := &notify.Runner{D: d, Feed: store.Feed(), Backoff: func(int) time.Duration { return 5 * time.Millisecond }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

func (a *answering) invoke(t *testing.T, w *agent.Waiter, text string) *agent.RequestResult {
	t.Helper()
	run, err := a.env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: text}}, Waiter: w})
	if err != nil {
		t.Fatal(err)
	}
	return run.Execute(context.Background(), nil)
}

func ops(calls []sfnfake.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Op)
	}
	return out
}

// TestStepFunctionsPauseThenComplete: a token given with on_pause "wait":
// heartbeats at the pause and at the resume's claim, then exactly one
// SendTaskSuccess with the Completed RequestResult.
func TestStepFunctionsPauseThenComplete(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-1", OnPause: agent.OnPauseWait}, "do it")
	a.env.Model.Add(agenttest.Say("deleted"))
	if out, _, err := a.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "the success", func() bool { return len(a.sfn.Calls()) == 3 })
	time.Sleep(100 * time.Millisecond)
	calls := a.sfn.Calls()
	if diff := cmp.Diff([]string{"SendTaskHeartbeat", "SendTaskHeartbeat", "SendTaskSuccess"}, ops(calls)); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	var got agent.RequestResult
	if err := json.Unmarshal([]byte(calls[2].Output), &got); err != nil || got.Status != agent.StatusCompleted || got.Output != "deleted" || got.RequestID != res.RequestID {
		t.Errorf("the success's output: %s (%v)", calls[2].Output, err)
	}
}

// TestStepFunctionsFailed: a request that fails answers one SendTaskFailure
// with Hitch.<code>.
func TestStepFunctionsFailed(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.FailWith(errors.New("the model is down")))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-2"}, "hi")
	wait(t, "the failure", func() bool { return len(a.sfn.Calls()) == 1 })
	c := a.sfn.Calls()[0]
	if c.Op != "SendTaskFailure" || c.Error != "Hitch."+agent.CodeModelError || c.Cause == "" {
		t.Errorf("failure: %+v", c)
	}
}

// TestStepFunctionsReturnOnPause: on_pause "return" answers the pause with
// SendTaskSuccess of the Paused RequestResult, its pending call included.
func TestStepFunctionsReturnOnPause(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-3", OnPause: agent.OnPauseReturn}, "do it")
	wait(t, "the paused answer", func() bool { return len(a.sfn.Calls()) == 1 })
	c := a.sfn.Calls()[0]
	var got agent.RequestResult
	if err := json.Unmarshal([]byte(c.Output), &got); err != nil || c.Op != "SendTaskSuccess" || got.Status != agent.StatusPaused ||
		len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Name != "guarded" {
		t.Errorf("paused answer: %s %s (%v)", c.Op, c.Output, err)
	}
}

// TestStepFunctionsClientToolReturns: a waiter cannot carry out a client
// tool: a round holding one answers a token given with on_pause "wait" as
// "return" does, its pending inputs included; a round holding only a
// question heartbeats.
func TestStepFunctionsClientToolReturns(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("q1", "ask_user", `{"question":"Sure?"}`)))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-q", OnPause: agent.OnPauseWait}, "ask")
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("c1", "pick_region", `{"hint":"north"}`)))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token-c", OnPause: agent.OnPauseWait}, "pick")
	wait(t, "both answers", func() bool { return len(a.sfn.Calls()) == 2 })
	time.Sleep(100 * time.Millisecond)
	byToken := map[string]sfnfake.Call{}
	for _, c := range a.sfn.Calls() {
		byToken[c.Token] = c
	}
	if c := byToken["token-q"]; c.Op != "SendTaskHeartbeat" {
		t.Errorf("a question's pause: %+v", c)
	}
	c := byToken["token-c"]
	var got agent.RequestResult
	if err := json.Unmarshal([]byte(c.Output), &got); err != nil || c.Op != "SendTaskSuccess" || got.Status != agent.StatusPaused ||
		len(got.PendingInputs) != 1 || got.PendingInputs[0].Kind != agent.InputClient || got.PendingInputs[0].Name != "pick_region" {
		t.Errorf("a client tool's pause: %s %s (%v)", c.Op, c.Output, err)
	}
}

// TestStaleTokenRecordedNotRetried: a token Step Functions no longer knows
// is refused once; the delivery moves on.
func TestStaleTokenRecordedNotRetried(t *testing.T) {
	a := startAnswering(t)
	a.sfn.Refuse("stale", "TaskTimedOut")
	a.env.Model.Add(agenttest.Say("done"))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "stale"}, "hi")
	wait(t, "the refused call", func() bool { return len(a.sfn.Calls()) == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := len(a.sfn.Calls()); n != 1 {
		t.Errorf("a final refusal was retried: %d calls", n)
	}
}

// TestDurableCallbacks: a callback id: heartbeats while the request waits,
// one success with the Completed result; a rejected-then-failed request
// sends one failure with Hitch.<code>.
func TestDurableCallbacks(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-1"}, "do it")
	a.env.Model.Add(agenttest.Say("deleted"))
	if _, _, err := a.env.Resume(res, "alice", enginetest.Approve()); err != nil {
		t.Fatal(err)
	}
	wait(t, "the success", func() bool { return len(a.fn.Callbacks()) == 3 })
	var got []string
	for _, c := range a.fn.Callbacks() {
		got = append(got, c.Op+" "+c.ID)
	}
	if diff := cmp.Diff([]string{"heartbeat cb-1", "heartbeat cb-1", "succeed cb-1"}, got); diff != "" {
		t.Errorf("callbacks (-want +got):\n%s", diff)
	}
	if body := string(a.fn.Callbacks()[2].Body); !strings.Contains(body, `"status":"Completed"`) {
		t.Errorf("success result: %s", body)
	}

	a.env.Model.Add(agenttest.FailWith(errors.New("down")))
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-2"}, "again")
	wait(t, "the failure", func() bool { return len(a.fn.Callbacks()) == 4 })
	last := a.fn.Callbacks()[3]
	if last.Op != "fail" || !strings.Contains(string(last.Body), `"ErrorType":"Hitch.model_error"`) {
		t.Errorf("failure: %s %s", last.Op, last.Body)
	}
}

// TestDurableCanceled: a paused request canceled sends a heartbeat at the
// pause and then one failure, Hitch.canceled, with the Canceled
// RequestResult as its data.
func TestDurableCanceled(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-cancel"}, "do it")
	if res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %s", res.Status)
	}
	if _, err := a.env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	wait(t, "the failure", func() bool { return len(a.fn.Callbacks()) == 2 })
	time.Sleep(100 * time.Millisecond) // a second end would come now
	cbs := a.fn.Callbacks()
	if len(cbs) != 2 || cbs[0].Op != "heartbeat" || cbs[1].Op != "fail" {
		t.Fatalf("callbacks: %+v", cbs)
	}
	var e struct{ ErrorType, ErrorMessage, ErrorData string }
	if err := json.Unmarshal(cbs[1].Body, &e); err != nil {
		t.Fatal(err)
	}
	var data agent.RequestResult
	if err := json.Unmarshal([]byte(e.ErrorData), &data); err != nil || e.ErrorType != "Hitch.canceled" ||
		data.Status != agent.StatusCanceled || data.RequestID != res.RequestID {
		t.Errorf("failure: %s %q %s (%v)", e.ErrorType, e.ErrorMessage, e.ErrorData, err)
	}
}

// TestDurableReturnOnPause: on_pause "return" answers the pause with one
// success of the Paused RequestResult, and nothing later.
func TestDurableReturnOnPause(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-return", OnPause: agent.OnPauseReturn}, "do it")
	wait(t, "the paused answer", func() bool { return len(a.fn.Callbacks()) == 1 })
	a.env.Model.Add(agenttest.Say("deleted"))
	if out, _, err := a.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	time.Sleep(200 * time.Millisecond) // the answered callback gets nothing more
	cbs := a.fn.Callbacks()
	var got agent.RequestResult
	if len(cbs) != 1 || cbs[0].Op != "succeed" || json.Unmarshal(cbs[0].Body, &got) != nil ||
		got.Status != agent.StatusPaused || len(got.PendingApprovals) != 1 || got.PendingApprovals[0].Name != "guarded" {
		t.Errorf("callbacks: %+v", cbs)
	}
}

// TestDurableRefusedNotRetried: a callback the Lambda API refuses (timed
// out) is called once, not retried, and the request is untouched.
func TestDurableRefusedNotRetried(t *testing.T) {
	a := startAnswering(t)
	a.fn.Refuse("cb-late", "CallbackTimeoutException", 400)
	a.env.Model.Add(agenttest.Say("done"))
	res := a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-late"}, "hi")
	wait(t, "the refused call", func() bool { return len(a.fn.Callbacks()) == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := len(a.fn.Callbacks()); n != 1 {
		t.Errorf("a final refusal was retried: %d calls", n)
	}
	view, err := a.env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	if err != nil || view.Status != agent.StatusCompleted {
		t.Errorf("the task after the refusal: %+v %v", view, err)
	}
}

// TestDurableResultTruncated: an output past the Lambda API's 256 KB result
// limit is sent in the truncated form (docs/architecture.md: output null,
// output_truncated true; GET task has the output), never a failed delivery.
func TestDurableResultTruncated(t *testing.T) {
	a := startAnswering(t)
	a.env.Model.Add(agenttest.Say(strings.Repeat("long answer ", 30_000))) // 360 KB
	a.invoke(t, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-big"}, "write a lot")
	wait(t, "the success", func() bool { return len(a.fn.Callbacks()) == 1 })
	c := a.fn.Callbacks()[0]
	var got agent.RequestResult
	if err := json.Unmarshal(c.Body, &got); err != nil || c.Op != "succeed" {
		t.Fatalf("%s: %v", c.Op, err)
	}
	if len(c.Body) > notify.MaxResultBytes || !got.OutputTruncated || got.Status != agent.StatusCompleted || !strings.Contains(string(c.Body), `"output":null`) {
		t.Errorf("result of %d bytes, truncated %v, status %s", len(c.Body), got.OutputTruncated, got.Status)
	}
}

// sfnSucceeded is the request SendTaskSuccess answered token with, or nil.
func sfnSucceeded(t *testing.T, calls []sfnfake.Call, token string) *agent.RequestResult {
	t.Helper()
	for _, c := range calls {
		if c.Token == token && c.Op == "SendTaskSuccess" {
			var got agent.RequestResult
			if err := json.Unmarshal([]byte(c.Output), &got); err != nil {
				t.Fatalf("the success of %s: %s (%v)", token, c.Output, err)
			}
			return &got
		}
	}
	return nil
}

// TestDuplicatesBindTheirWaiters: every direct call bound to a request
// puts its token, a duplicate that waits too (docs/guide/notifications.md,
// "Direct operations, task tokens and callbacks"): an invoke retried under its Idempotency-Key
// with a token of its own, while paused, is answered at the end; a
// decision of a round the request moved past, given with on_pause
// "return", is answered with the pause it is in; the same decision sent
// again once the request ended is answered its end at once.
func TestDuplicatesBindTheirWaiters(t *testing.T) {
	a := startAnswering(t)
	ctx := context.Background()
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "first")))
	idem := &agent.Idempotency{Key: "k-dup", BodyHash: "h-dup"}
	start := func(w *agent.Waiter) *agent.RequestResult {
		run, err := a.env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}}, Idem: idem, Waiter: w})
		if err != nil {
			t.Fatal(err)
		}
		return run.Execute(ctx, nil)
	}
	res := start(&agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-first", OnPause: agent.OnPauseWait})
	if again := start(&agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-retry", OnPause: agent.OnPauseWait}); again.Status != agent.StatusPaused || again.RequestID != res.RequestID {
		t.Fatalf("the retried invoke: %+v", again)
	}
	resume := func(body agent.ResumeRequest, w *agent.Waiter) *agent.RequestResult {
		run, err := a.env.E.StartResume(ctx, agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: body, Waiter: w})
		if err != nil {
			t.Fatal(err)
		}
		return run.Execute(ctx, nil)
	}
	a.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g2", "guarded", "second")))
	round1 := agent.ResumeRequest{Action: agent.ActionApprove, Round: enginetest.Round(1)}
	if out := resume(round1, nil); out.Status != agent.StatusPaused || out.Round != 2 {
		t.Fatalf("round 1: %+v", out)
	}
	if out := resume(round1, &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-past", OnPause: agent.OnPauseReturn}); out.Status != agent.StatusPaused {
		t.Fatalf("round 1 again: %+v", out)
	}
	wait(t, "the pause answered to the decision sent again", func() bool { return sfnSucceeded(t, a.sfn.Calls(), "tok-past") != nil })
	if got := sfnSucceeded(t, a.sfn.Calls(), "tok-past"); got.Status != agent.StatusPaused || got.Round != 2 {
		t.Errorf("tok-past was answered %s round %d, want Paused round 2", got.Status, got.Round)
	}

	a.env.Model.Add(agenttest.Say("deleted"))
	round2 := agent.ResumeRequest{Action: agent.ActionApprove, Round: enginetest.Round(2)}
	if out := resume(round2, nil); out.Status != agent.StatusCompleted {
		t.Fatalf("round 2: %+v", out)
	}
	if out := resume(round2, &agent.Waiter{Kind: agent.WaiterCallback, ID: "cb-after-end", OnPause: agent.OnPauseReturn}); out.Status != agent.StatusCompleted {
		t.Fatalf("round 2 again: %+v", out)
	}
	for _, tok := range []string{"tok-first", "tok-retry"} {
		wait(t, tok+"'s success", func() bool { return sfnSucceeded(t, a.sfn.Calls(), tok) != nil })
		if got := sfnSucceeded(t, a.sfn.Calls(), tok); got.Status != agent.StatusCompleted || got.Output != "deleted" {
			t.Errorf("%s was answered %s %q, want Completed", tok, got.Status, got.Output)
		}
	}
	wait(t, "the callback of the decision sent after the end", func() bool {
		return slices.ContainsFunc(a.fn.Callbacks(), func(c fakelambda.Callback) bool { return c.ID == "cb-after-end" && c.Op == "succeed" })
	})
	time.Sleep(100 * time.Millisecond) // a second answer would come now
	n := map[string]int{}
	for _, c := range a.sfn.Calls() {
		if c.Op != "SendTaskHeartbeat" {
			n[c.Token]++
		}
	}
	for _, c := range a.fn.Callbacks() {
		if c.Op != "heartbeat" {
			n[c.ID]++
		}
	}
	if diff := cmp.Diff(map[string]int{"tok-first": 1, "tok-retry": 1, "tok-past": 1, "cb-after-end": 1}, n); diff != "" {
		t.Errorf("answers per waiter (-want +got):\n%s", diff)
	}
}
