package stepfunctions_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/sfnfake"
	"github.com/hitch-agents/hitch/internal/stepfunctions"
)

func TestSucceed(t *testing.T) {
	fake := sfnfake.New(t)
	c := &stepfunctions.Client{API: fake.Client()}
	res := &agent.RequestResult{TaskID: "t1", RequestID: "r1", Status: agent.StatusCompleted, Output: "done", Source: "acc:1"}
	if err := c.Succeed(context.Background(), "tok", res); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0].Op != "SendTaskSuccess" || calls[0].Token != "tok" {
		t.Fatalf("calls: %+v", calls)
	}
	var got agent.RequestResult
	if err := json.Unmarshal([]byte(calls[0].Output), &got); err != nil || got.Output != "done" || got.Status != agent.StatusCompleted || got.OutputTruncated {
		t.Errorf("output %s (%v)", calls[0].Output, err)
	}
}

// TestSucceedTruncated: a result over 256 KiB goes without its output,
// marked output_truncated, under the limit.
func TestSucceedTruncated(t *testing.T) {
	fake := sfnfake.New(t)
	c := &stepfunctions.Client{API: fake.Client()}
	res := &agent.RequestResult{TaskID: "t1", RequestID: "r1", Status: agent.StatusCompleted, Output: strings.Repeat("x", 300_000)}
	if err := c.Succeed(context.Background(), "tok", res); err != nil {
		t.Fatal(err)
	}
	out := fake.Calls()[0].Output
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["output"]; !ok || v != nil || m["output_truncated"] != true || m["request_id"] != "r1" || len(out) > 256*1024 {
		t.Errorf("truncated result (%d bytes): %.200s", len(out), out)
	}
}

func TestFail(t *testing.T) {
	fake := sfnfake.New(t)
	c := &stepfunctions.Client{API: fake.Client()}
	long := strings.Repeat("é", 20_000) // 40,000 bytes
	res := &agent.RequestResult{RequestID: "r1", Status: agent.StatusFailed, Error: &agent.ErrorInfo{Code: agent.CodeApprovalExpired, Message: long}}
	if err := c.Fail(context.Background(), "tok", res); err != nil {
		t.Fatal(err)
	}
	call := fake.Calls()[0]
	if call.Op != "SendTaskFailure" || call.Error != "Hitch.approval_expired" || len(call.Cause) > 32768 || !strings.HasPrefix(long, call.Cause) {
		t.Errorf("failure: op %s error %s cause %d bytes", call.Op, call.Error, len(call.Cause))
	}
	canceled := &agent.RequestResult{RequestID: "r2", Status: agent.StatusCanceled}
	if err := c.Fail(context.Background(), "tok2", canceled); err != nil {
		t.Fatal(err)
	}
	if call := fake.Calls()[1]; call.Error != "Hitch.canceled" || !strings.Contains(call.Cause, "r2") {
		t.Errorf("canceled: %+v", call)
	}
}

// TestFinal: an unknown, timed-out or invalid token is final; a 500 is not.
func TestFinal(t *testing.T) {
	fake := sfnfake.New(t)
	c := &stepfunctions.Client{API: fake.Client()}
	for _, code := range []string{"TaskDoesNotExist", "TaskTimedOut", "InvalidToken"} {
		fake.Refuse(code, code)
		err := c.Heartbeat(context.Background(), code)
		if err == nil || !c.Final(err) {
			t.Errorf("%s: %v, final %v", code, err, c.Final(err))
		}
	}
	fake.FailNext(1)
	err := c.Heartbeat(context.Background(), "ok")
	if err == nil || c.Final(err) {
		t.Errorf("a 500: %v, final %v", err, c.Final(err))
	}
	if err := c.Heartbeat(context.Background(), "ok"); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
}

// TestAnsweredAgainIsFinal: a token's task closes at its first answer, as
// Step Functions does; the same answer sent again (a notifier that died
// after sending it, before deleting its outbox item) is TaskTimedOut, a
// refusal retrying cannot cure — the item is done, the token answered once.
func TestAnsweredAgainIsFinal(t *testing.T) {
	fake := sfnfake.New(t)
	c := &stepfunctions.Client{API: fake.Client()}
	res := &agent.RequestResult{TaskID: "t1", RequestID: "r1", Status: agent.StatusCompleted, Output: "done"}
	if err := c.Succeed(context.Background(), "tok", res); err != nil {
		t.Fatal(err)
	}
	err := c.Succeed(context.Background(), "tok", res)
	if err == nil || !strings.Contains(err.Error(), "TaskTimedOut") || !c.Final(err) {
		t.Errorf("the same answer again: %v (final: %v), want a final TaskTimedOut", err, err != nil && c.Final(err))
	}
	if calls := fake.Calls(); len(calls) != 2 || calls[0].Status != 200 || calls[1].Status != 400 {
		t.Errorf("the fake's calls: %+v", calls)
	}
}
