package durable_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/durable"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

func TestSucceed(t *testing.T) {
	fake := fakelambda.New(t)
	c := &durable.Client{API: fake.Client(t)}
	res := &agent.RequestResult{RequestID: "r1", Status: agent.StatusCompleted, Output: "done"}
	if err := c.Succeed(context.Background(), "cb/1+=", res); err != nil {
		t.Fatal(err)
	}
	cbs := fake.Callbacks()
	if len(cbs) != 1 || cbs[0].Op != "succeed" || cbs[0].ID != "cb/1+=" {
		t.Fatalf("callbacks: %+v", cbs)
	}
	var got agent.RequestResult
	if err := json.Unmarshal(cbs[0].Body, &got); err != nil || got.Output != "done" {
		t.Errorf("result %s (%v)", cbs[0].Body, err)
	}
	big := &agent.RequestResult{RequestID: "r2", Status: agent.StatusCompleted, Output: strings.Repeat("x", 300_000)}
	if err := c.Succeed(context.Background(), "cb2", big); err != nil {
		t.Fatal(err)
	}
	body := fake.Callbacks()[1].Body
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["output"] != nil || m["output_truncated"] != true || len(body) > 256*1024 {
		t.Errorf("truncated result (%d bytes): %.200s (%v)", len(body), body, err)
	}
}

func TestFail(t *testing.T) {
	fake := fakelambda.New(t)
	c := &durable.Client{API: fake.Client(t)}
	res := &agent.RequestResult{RequestID: "r1", Status: agent.StatusFailed, Error: &agent.ErrorInfo{Code: agent.CodeModelError, Message: "too many"}}
	if err := c.Fail(context.Background(), "cb", res); err != nil {
		t.Fatal(err)
	}
	var e struct {
		ErrorType, ErrorMessage, ErrorData string
	}
	body := fake.Callbacks()[0].Body
	if err := json.Unmarshal(body, &e); err != nil || e.ErrorType != "Hitch.model_error" || e.ErrorMessage != "too many" || !strings.Contains(e.ErrorData, `"request_id":"r1"`) {
		t.Errorf("failure body %s (%v)", body, err)
	}
}

// TestFinal: a timed-out or unknown callback is final; a 500 is not.
func TestFinal(t *testing.T) {
	fake := fakelambda.New(t)
	c := &durable.Client{API: fake.Client(t)}
	fake.Refuse("late", "CallbackTimeoutException", 400)
	fake.Refuse("gone", "ResourceNotFoundException", 404)
	for _, id := range []string{"late", "gone"} {
		if err := c.Heartbeat(context.Background(), id); err == nil || !c.Final(err) {
			t.Errorf("%s: %v, final %v", id, err, c.Final(err))
		}
	}
	fake.FailNext(1)
	if err := c.Heartbeat(context.Background(), "ok"); err == nil || c.Final(err) {
		t.Errorf("a 500: %v, final %v", err, c.Final(err))
	}
	if err := c.Heartbeat(context.Background(), "ok"); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	if cbs := fake.Callbacks(); cbs[len(cbs)-1].Op != "heartbeat" {
		t.Errorf("callbacks: %+v", cbs)
	}
}
