package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// newDirect is the invoke function's direct handler over the in-memory
// store, the embedded agents and a scripted model.
func newDirect(tb testing.TB) (lambdahttp.DirectFunc, *agenttest.ScriptModel) {
	tb.Helper()
	cat, err := catalog.Load(agents.FS, ".", catalog.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	model := &agenttest.ScriptModel{}
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
	return lambdafn.Direct(e), model
}

func call(tb testing.TB, direct lambdahttp.DirectFunc, payload string) (*agent.RequestResult, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := direct(ctx, json.RawMessage(payload))
	if err != nil {
		if out != nil {
			tb.Errorf("a refusal also returned %v", out)
		}
		return nil, err
	}
	res, ok := out.(*agent.RequestResult)
	if !ok {
		tb.Fatalf("direct returned %T, want *agent.RequestResult", out)
	}
	return res, nil
}

func wantRefusal(tb testing.TB, err error, errorType string) {
	tb.Helper()
	var fe *lambdahttp.FunctionError
	if !errors.As(err, &fe) {
		tb.Fatalf("err = %v, want a *lambdahttp.FunctionError %s", err, errorType)
	}
	if fe.Type != errorType {
		tb.Fatalf("errorType = %q (%s), want %q", fe.Type, fe.Message, errorType)
	}
}

func TestDirectRefusals(t *testing.T) {
	direct, model := newDirect(t)
	tests := []struct {
		name, payload, errorType string
	}{
		{"unknown field", `{"agent":"assistant","user_id":"u-1","items":[{"content":"hi"}],"prompt":"hi"}`, "Hitch.invalid_json"},
		{"not JSON", `{"agent":`, "Hitch.invalid_json"},
		{"not an object", `["assistant"]`, "Hitch.invalid_json"},
		{"no user", `{"agent":"assistant","items":[{"content":"hi"}]}`, "Hitch.unauthenticated"},
		{"unknown agent", `{"agent":"nobody","user_id":"u-1","items":[{"content":"hi"}]}`, "Hitch.agent_not_found"},
		{"no items", `{"agent":"assistant","user_id":"u-1","items":[]}`, "Hitch.invalid_items"},
		{"bad task id", `{"agent":"assistant","user_id":"u-1","task_id":"42","items":[{"content":"hi"}]}`, "Hitch.invalid_id"},
		{"unknown task", `{"agent":"assistant","user_id":"u-1","task_id":"0190f3a1-0000-7000-8000-00000000dead","items":[{"content":"hi"}]}`, "Hitch.task_not_found"},
		{"bad idempotency key", `{"agent":"assistant","user_id":"u-1","items":[{"content":"hi"}],"idempotency_key":"tab\there"}`, "Hitch.invalid_idempotency_key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, direct, tc.payload)
			wantRefusal(t, err, tc.errorType)
		})
	}
	if n := model.NCalls(); n != 0 {
		t.Errorf("refusals called the model %d times", n)
	}
}

func TestDirectCompleted(t *testing.T) {
	direct, model := newDirect(t)
	model.Add(agenttest.Say("echo:", " hi"))
	res, err := call(t, direct, `{"agent":"assistant","user_id":"u-1","items":[{"content_type":"text","content":"hi"}],
		"metadata":{"ticket":"ACME-42"},"idempotency_key":"arn:aws:states:eu-west-1:123456789012:execution:sm:run-1:Ask"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusCompleted || res.Output != "echo: hi" || res.StopReason != agent.StopEndTurn || res.Error != nil {
		t.Errorf("result = %+v, want Completed with output %q", res, "echo: hi")
	}
	if res.TaskID == "" || res.SessionID == "" || res.RequestID == "" {
		t.Errorf("result lacks its ids: %+v", res)
	}
	// The result is what the runtime sends back: JSON of the RequestResult.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"session_id", "task_id", "request_id", "status", "output", "usage", "source"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the JSON result has no %q: %s", k, b)
		}
	}

	// A follow-on on the same task continues it.
	model.Add(agenttest.Say("again"))
	next, err := call(t, direct, `{"agent":"assistant","user_id":"u-1","task_id":"`+res.TaskID+`","items":[{"content":"more"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{res.TaskID, res.SessionID, "Completed"}, []string{next.TaskID, next.SessionID, string(next.Status)}); diff != "" {
		t.Errorf("follow-on (-want +got):\n%s", diff)
	}
	// Someone else's task is not theirs to continue.
	_, err = call(t, direct, `{"agent":"assistant","user_id":"u-2","task_id":"`+res.TaskID+`","items":[{"content":"mine?"}]}`)
	wantRefusal(t, err, "Hitch.not_owner")
}

// A Failed request is an outcome, not a refusal: the state machine gets the
// RequestResult with its error object, and no function error.
func TestDirectFailedIsAResult(t *testing.T) {
	direct, model := newDirect(t)
	model.Add(agenttest.FailWith(&agent.Error{Code: agent.CodeThrottled, Message: "ThrottlingException: slow down"}))
	res, err := call(t, direct, `{"agent":"assistant","user_id":"u-1","items":[{"content":"hi"}]}`)
	if err != nil {
		t.Fatalf("a Failed outcome raised %v", err)
	}
	if res.Status != agent.StatusFailed || res.Error == nil || res.Error.Code != agent.CodeThrottled {
		t.Errorf("result = %+v (error %+v), want Failed throttled", res, res.Error)
	}
}

func TestDirectBusyTask(t *testing.T) {
	direct, model := newDirect(t)
	model.Add(agenttest.Say("first"))
	first, err := call(t, direct, `{"agent":"assistant","user_id":"u-1","items":[{"content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	model.Add(func(ctx context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "working"})
		close(started)
		<-release
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("done")}, StopReason: agent.StopEndTurn}, nil
	})
	running := make(chan error, 1)
	go func() {
		res, err := call(t, direct, `{"agent":"assistant","user_id":"u-1","task_id":"`+first.TaskID+`","items":[{"content":"slow"}]}`)
		if err == nil && res.Status != agent.StatusCompleted {
			err = errors.New("the slow request ended " + string(res.Status))
		}
		running <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request never reached the model")
	}
	_, err = call(t, direct, `{"agent":"assistant","user_id":"u-1","task_id":"`+first.TaskID+`","items":[{"content":"me too"}]}`)
	close(release)
	wantRefusal(t, err, "Hitch.task_busy")
	if err := <-running; err != nil {
		t.Error(err)
	}
}

func TestDirectIdempotencyKey(t *testing.T) {
	direct, model := newDirect(t)
	model.Add(agenttest.Say("paid"))
	payload := `{"agent":"assistant","user_id":"u1","items":[{"content":"pay invoice 7"}],"idempotency_key":"exec-1:Pay"}`
	first, err := call(t, direct, payload)
	if err != nil || first.Status != agent.StatusCompleted {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := call(t, direct, payload)
	if err != nil || again.RequestID != first.RequestID || again.Output != "paid" {
		t.Fatalf("retry: %+v %v, want the first request's outcome", again, err)
	}
	if n := model.NCalls(); n != 1 {
		t.Errorf("the model ran %d times", n)
	}
	_, err = call(t, direct, `{"agent":"assistant","user_id":"u1","items":[{"content":"pay invoice 8"}],"idempotency_key":"exec-1:Pay"}`)
	wantRefusal(t, err, "Hitch.idempotency_key_reused")
}
