package lambdafn_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// TestDirectOrchestration: a direct invoke starts an orchestration (the
// cascading pause in its answer); a direct resume at the caller completes
// both; a direct resume at the leaf completes the leaf, and the resume
// function's op continue (what the notifier sends) completes the caller
// and deletes the continuation's item. Bad continue payloads are refused
// with Hitch.<code>.
func TestDirectOrchestration(t *testing.T) {
	store := memstore.New()
	o := enginetest.NewOrch(t, store)
	direct, cont := lambdafn.Direct(o.E), lambdafn.Continue(o.E)
	invoke := func() *agent.RequestResult {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"agent": "desk", "user_id": "alice",
			"items": []map[string]string{{"content": enginetest.CallAgent("leaf", enginetest.Append("direct.txt", "x"))}}})
		out, err := raw(t, direct, string(payload))
		if err != nil {
			t.Fatal(err)
		}
		res := out.(*agent.RequestResult)
		if res.Status != agent.StatusPaused || len(res.PendingApprovals) != 1 || res.PendingApprovals[0].Agent != "leaf" {
			t.Fatalf("invoke desk: %+v", res)
		}
		return res
	}
	res := invoke()
	out, err := raw(t, direct, `{"op":"resume","agent":"desk","user_id":"alice","task_id":"`+res.TaskID+`","request_id":"`+res.RequestID+`","action":"approve"}`)
	if err != nil || out.(*agent.RequestResult).Status != agent.StatusCompleted {
		t.Fatalf("resume at desk: %+v %v", out, err)
	}

	res = invoke()
	p := res.PendingApprovals[0]
	out, err = raw(t, direct, `{"op":"resume","agent":"leaf","user_id":"alice","task_id":"`+p.TaskID+`","request_id":"`+p.RequestID+`","action":"approve"}`)
	if err != nil || out.(*agent.RequestResult).Status != agent.StatusCompleted {
		t.Fatalf("resume at the leaf: %+v %v", out, err)
	}
	items, _ := store.ListOutbox(context.Background(), time.Now().Add(time.Hour), 0)
	var sk string
	for _, it := range items {
		if it.Kind == agent.OutboxContinue && it.TaskID == res.TaskID {
			sk = it.SK()
		}
	}
	if sk == "" {
		t.Fatalf("no continuation: %+v", items)
	}
	answer, err := raw(t, cont, `{"op":"continue","task_id":"`+res.TaskID+`","request_id":"`+res.RequestID+`","outbox":"`+sk+`"}`)
	if err != nil || asMap(t, answer)["status"] != "Completed" {
		t.Fatalf("continue: %v %v", answer, err)
	}
	if _, err := store.GetOutbox(context.Background(), res.TaskID, sk); err == nil {
		t.Error("the continuation's item is still there")
	}
	// Again: nothing to do, no status.
	if answer, err := raw(t, cont, `{"op":"continue","task_id":"`+res.TaskID+`","request_id":"`+res.RequestID+`","outbox":"`+sk+`"}`); err != nil || asMap(t, answer)["status"] != nil {
		t.Errorf("a second continue: %v %v", answer, err)
	}
	if got := o.Lines("direct.txt"); len(got) != 2 {
		t.Errorf("direct.txt = %q: want one line per approved call", got)
	}
	for payload, code := range map[string]string{
		`{"op":"invoke","task_id":"x"}`: "Hitch.invalid_json",
		`{"op":"continue","task_id":"` + res.TaskID + `","request_id":"nope","outbox":""}`: "Hitch.invalid_id",
		`{"op":"continue","task_id":"x","request_id":"y","extra":1}`:                       "Hitch.invalid_json",
		`[]`: "Hitch.invalid_json",
	} {
		_, err := raw(t, cont, payload)
		fe, ok := err.(*lambdahttp.FunctionError)
		if !ok || fe.Type != code {
			t.Errorf("continue %s: %v, want %s", payload, err, code)
		}
	}
}
