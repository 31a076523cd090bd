package lambdafn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// opsEnv is the direct handler over the test engine (agent acc, whose
// guarded tool needs approval and counts its runs).
func opsEnv(tb testing.TB) (*enginetest.Env, lambdahttp.DirectFunc) {
	tb.Helper()
	env := enginetest.New(tb, memstore.New())
	return env, lambdafn.Direct(env.E)
}

func raw(tb testing.TB, direct lambdahttp.DirectFunc, payload string) (any, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return direct(ctx, json.RawMessage(payload))
}

func asMap(tb testing.TB, v any) map[string]any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// TestDirectOps: a state machine's whole HITL flow without HTTP: invoke
// pauses, get shows the pause, resume approves (the tool runs once; the same
// resume again answers the same outcome), get shows it Completed; cancel of
// a paused task answers Canceled.
func TestDirectOps(t *testing.T) {
	env, direct := opsEnv(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	out, err := raw(t, direct, `{"op":"invoke","agent":"acc","user_id":"alice","items":[{"content":"delete it"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	paused := out.(*agent.RequestResult)
	if paused.Status != agent.StatusPaused || len(paused.PendingApprovals) != 1 {
		t.Fatalf("invoke: %+v", paused)
	}
	got, err := raw(t, direct, `{"op":"get","agent":"acc","user_id":"alice","task_id":"`+paused.TaskID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if v := asMap(t, got); v["status"] != "Paused" || len(v["pending_approvals"].([]any)) != 1 {
		t.Errorf("get of the paused task: %v", v)
	}
	env.Model.Add(agenttest.Say("deleted"))
	resume := `{"op":"resume","agent":"acc","user_id":"alice","task_id":"` + paused.TaskID + `","request_id":"` + paused.RequestID + `","action":"approve","reason":"ok"}`
	for i := range 2 {
		out, err := raw(t, direct, resume)
		if err != nil {
			t.Fatalf("resume %d: %v", i+1, err)
		}
		if res := out.(*agent.RequestResult); res.Status != agent.StatusCompleted || res.Output != "deleted" {
			t.Errorf("resume %d: %+v", i+1, res)
		}
	}
	if n := len(env.Guarded.Runs()); n != 1 {
		t.Errorf("the approved tool ran %d times", n)
	}
	got, _ = raw(t, direct, `{"op":"get","agent":"acc","user_id":"alice","task_id":"`+paused.TaskID+`"}`)
	if v := asMap(t, got); v["status"] != "Completed" {
		t.Errorf("get after the resume: %v", v["status"])
	}
	_, err = raw(t, direct, `{"op":"get","agent":"acc","user_id":"bob","task_id":"`+paused.TaskID+`"}`)
	wantRefusal(t, err, "Hitch.not_owner")

	// Cancel of a paused task.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g2", "guarded", "again")))
	out, _ = raw(t, direct, `{"agent":"acc","user_id":"alice","task_id":"`+paused.TaskID+`","items":[{"content":"again"}]}`)
	second := out.(*agent.RequestResult)
	out, err = raw(t, direct, `{"op":"cancel","agent":"acc","user_id":"alice","task_id":"`+paused.TaskID+`","reason":"not today"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := out.(*agent.RequestResult); !ok || res.Status != agent.StatusCanceled || res.RequestID != second.RequestID {
		t.Errorf("cancel: %#v", out)
	}
	_, err = raw(t, direct, `{"op":"resume","agent":"acc","user_id":"alice","task_id":"`+paused.TaskID+`","request_id":"`+second.RequestID+`","action":"approve"}`)
	wantRefusal(t, err, "Hitch.not_paused")
}

// TestDirectOpRefusals: each op's bad payloads are Hitch.invalid_json with
// what the op expects, and nothing is created.
func TestDirectOpRefusals(t *testing.T) {
	env, direct := opsEnv(t)
	const tid = "0190f3a1-0000-7000-8000-00000000dead"
	long := strings.Repeat("a", 1025)
	tests := []struct {
		name, payload, errorType, says string
	}{
		{"unknown op", `{"op":"delete","agent":"acc","user_id":"u","task_id":"` + tid + `"}`, "Hitch.invalid_json", `op "delete" is not one of invoke, resume, cancel, get`},
		{"op not a string", `{"op":1,"agent":"acc","user_id":"u"}`, "Hitch.invalid_json", "does not decode"},
		{"resume without ids", `{"op":"resume","agent":"acc","user_id":"u","action":"approve"}`, "Hitch.invalid_json", "op resume: task_id, request_id missing"},
		{"resume without a decision", `{"op":"resume","agent":"acc","user_id":"u","task_id":"` + tid + `","request_id":"` + tid + `"}`, "Hitch.invalid_json", "op resume needs action or decisions"},
		{"resume with items", `{"op":"resume","agent":"acc","user_id":"u","task_id":"` + tid + `","request_id":"` + tid + `","action":"approve","items":[]}`, "Hitch.invalid_json", "op resume does not take items"},
		{"cancel without a task", `{"op":"cancel","agent":"acc","user_id":"u"}`, "Hitch.invalid_json", "op cancel: task_id missing"},
		{"cancel with a token", `{"op":"cancel","agent":"acc","user_id":"u","task_id":"` + tid + `","task_token":"t"}`, "Hitch.invalid_json", "op cancel does not take task_token"},
		{"get with a decision", `{"op":"get","agent":"acc","user_id":"u","task_id":"` + tid + `","action":"approve"}`, "Hitch.invalid_json", "op get does not take action"},
		{"invoke without items", `{"agent":"acc","user_id":"u"}`, "Hitch.invalid_json", "op invoke: items missing"},
		{"token and callback", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"task_token":"t","callback_id":"c"}`, "Hitch.invalid_json", "exclusive"},
		{"empty token", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"task_token":""}`, "Hitch.invalid_json", "task_token must have 1 to 1024"},
		{"long token", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"task_token":"` + long + `"}`, "Hitch.invalid_json", "task_token must have 1 to 1024"},
		{"empty callback", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"callback_id":""}`, "Hitch.invalid_json", "callback_id must be"},
		{"long callback", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"callback_id":"` + long + `"}`, "Hitch.invalid_json", "callback_id must be"},
		{"callback off pattern", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"callback_id":"cb-1"}`, "Hitch.invalid_json", "callback_id must be"},
		{"on_pause alone", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"on_pause":"return"}`, "Hitch.invalid_json", "on_pause goes with"},
		{"on_pause unknown", `{"agent":"acc","user_id":"u","items":[{"content":"x"}],"task_token":"t","on_pause":"later"}`, "Hitch.invalid_json", `on_pause must be "wait" or "return"`},
		{"resume of an unknown task", `{"op":"resume","agent":"acc","user_id":"u","task_id":"` + tid + `","request_id":"` + tid + `","action":"approve"}`, "Hitch.task_not_found", ""},
		{"cancel of an unknown task", `{"op":"cancel","agent":"acc","user_id":"u","task_id":"` + tid + `"}`, "Hitch.task_not_found", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := raw(t, direct, tc.payload)
			wantRefusal(t, err, tc.errorType)
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("message %q does not say %q", err.Error(), tc.says)
			}
		})
	}
	tasks, _, err := env.Store.ListUserTasks(context.Background(), agent.ListQuery{UserID: "u", Agent: "acc", Limit: 10})
	if err != nil || len(tasks) != 0 {
		t.Errorf("refusals created tasks: %+v %v", tasks, err)
	}
	if n := env.Model.NCalls(); n != 0 {
		t.Errorf("refusals called the model %d times", n)
	}
}

// TestDirectWaiter: a task_token and on_pause reach the engine: the
// request's META names the waiter.
func TestDirectWaiter(t *testing.T) {
	env, direct := opsEnv(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	out, err := raw(t, direct, `{"agent":"acc","user_id":"alice","items":[{"content":"x"}],"callback_id":"ZXhlYy0xL29wLTI=","on_pause":"return"}`)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*agent.RequestResult)
	meta, err := env.Store.GetTask(context.Background(), res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	want := (&agent.Waiter{Kind: agent.WaiterCallback, ID: "ZXhlYy0xL29wLTI=", OnPause: agent.OnPauseReturn}).Ref()
	if a := meta.Active; a == nil || len(a.Waiters) != 1 || a.Waiters[0] != want {
		t.Errorf("META's waiters: %+v, want %+v", a, want)
	}
	tok, err := env.Store.GetToken(context.Background(), res.TaskID, res.RequestID, want.Hash)
	if err != nil || tok.ID != "ZXhlYy0xL29wLTI=" {
		t.Errorf("the token item: %+v %v", tok, err)
	}
}
