package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/lambdahttp/fakeruntime"
)

// startFunction runs the built bootstrap of functions/<name> against a new
// fake Runtime API, with the environment template.yaml gives it pointed at
// the backend.
func startFunction(tb testing.TB, name string, be backend) *fakeruntime.Server {
	tb.Helper()
	bin := buildFunction(tb, name)
	fake := fakeruntime.New(tb)
	cmd := exec.Command(bin)
	cmd.Env = append(awsEnv(tb),
		"AWS_LAMBDA_RUNTIME_API="+fake.Addr(),
		"AWS_LAMBDA_FUNCTION_NAME=hitch-"+name,
		"HITCH_TABLE="+be.Table,
		"HITCH_RETENTION_DAYS=0",
		"HITCH_MAX_BODY_BYTES=1048576",
		"HITCH_DYNAMODB_ENDPOINT="+be.DynamoDBEndpoint,
		"HITCH_BEDROCK_ENDPOINT="+be.BedrockEndpoint,
		"HITCH_A2A_DEFAULT_AGENT=assistant", // the template's default
	)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if tb.Failed() {
			tb.Logf("functions/%s output:\n%s", name, logs.String())
		}
	})
	return fake
}

func waitInvocation(tb testing.TB, fake *fakeruntime.Server, id string) fakeruntime.Invocation {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inv, err := fake.Wait(ctx, id)
	if err != nil {
		tb.Fatalf("invocation %s: %v", id, err)
	}
	return inv
}

type prelude struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
}

// streamed checks an answer streamed as an HTTP integration response and
// returns its prelude and body.
func streamed(tb testing.TB, inv fakeruntime.Invocation) (prelude, []byte) {
	tb.Helper()
	if p := fakeruntime.StreamingProblems(inv); len(p) > 0 {
		tb.Fatalf("the response POST was not streamed: %v\n%s", p, inv.Body)
	}
	pre, body, err := fakeruntime.SplitFrame(inv.Body)
	if err != nil {
		tb.Fatal(err)
	}
	var p prelude
	if err := json.Unmarshal(pre, &p); err != nil {
		tb.Fatalf("prelude %q: %v", pre, err)
	}
	return p, body
}

// TestInvokeBinary runs the built invoke function against the fake Runtime
// API, DynamoDB Local and the local model: an SSE invoke streamed in
// streaming mode, a direct invocation's RequestResult, and a refusal as a
// function error a state machine can Catch.
func TestInvokeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs functions/invoke")
	}
	fake := startFunction(t, "invoke", newBackend(t))

	t.Run("SSE invoke", func(t *testing.T) {
		inv := waitInvocation(t, fake, fake.Enqueue(readFixture(t, "invoke-sse.json")))
		p, body := streamed(t, inv)
		want := prelude{200, map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("prelude (-want +got):\n%s", diff)
		}
		evs := parseSSE(t, body)
		var names []string
		for i, ev := range evs {
			names = append(names, ev.Event)
			if ev.ID != strconv.Itoa(i+1) {
				t.Errorf("event %d (%s) has id %q, want %d", i, ev.Event, ev.ID, i+1)
			}
			if !json.Valid([]byte(ev.Data)) {
				t.Errorf("event %d data %q is not JSON", i, ev.Data)
			}
		}
		for _, n := range []string{"request_started", "thinking", "tool_call", "tool_result", "answer", "request_complete"} {
			if !strings.Contains(strings.Join(names, " "), n) {
				t.Errorf("no %s event in %v", n, names)
			}
		}
		if len(evs) == 0 || names[0] != "request_started" || names[len(names)-1] != "request_complete" {
			t.Fatalf("events %v: want request_started … request_complete", names)
		}
		var res agent.RequestResult
		if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &res); err != nil || res.Status != agent.StatusCompleted {
			t.Errorf("request_complete = %s (%v), want a Completed RequestResult", evs[len(evs)-1].Data, err)
		}
		checkChunks(t, inv, len(evs))
	})

	t.Run("direct invocation", func(t *testing.T) {
		inv := waitInvocation(t, fake, fake.Enqueue(readFixture(t, "direct-invoke.json")))
		if inv.Kind != "response" {
			t.Fatalf("answered %s: %s", inv.Kind, inv.Body)
		}
		var res agent.RequestResult
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("body %q: %v", inv.Body, err)
		}
		if res.Status != agent.StatusCompleted || res.SessionID != fixtureSession || res.Output != "echo: Summarise ticket ACME-42 in one sentence." {
			t.Errorf("result = %+v", res)
		}
	})

	t.Run("refusal", func(t *testing.T) {
		inv := waitInvocation(t, fake, fake.Enqueue([]byte(`{"agent":"nobody","user_id":"u-1","items":[{"content":"hi"}]}`)))
		if inv.Kind != "error" {
			t.Fatalf("answered %s: %s, want a function error", inv.Kind, inv.Body)
		}
		if got := inv.Header.Get("Lambda-Runtime-Function-Error-Type"); got != "Hitch.agent_not_found" {
			t.Errorf("Lambda-Runtime-Function-Error-Type = %q", got)
		}
		var e struct{ ErrorType, ErrorMessage string }
		if err := json.Unmarshal(inv.Body, &e); err != nil || e.ErrorType != "Hitch.agent_not_found" || e.ErrorMessage == "" {
			t.Errorf("error body %s (%v)", inv.Body, err)
		}
	})
}

// checkChunks checks how the stream reached the Runtime API: in several
// chunks, each ending at an event's end, the first event well before the
// last. (A fast producer's chunks can be read together, so one chunk per
// event is not asserted; the gate test of internal/lambdahttp shows that an
// event is sent before the next is produced.)
func checkChunks(t *testing.T, inv fakeruntime.Invocation, events int) {
	t.Helper()
	var withEvents []fakeruntime.Chunk
	for _, c := range inv.Chunks {
		if bytes.Contains(c.Data, []byte("event: ")) {
			withEvents = append(withEvents, c)
		}
	}
	for i, c := range withEvents {
		if !bytes.HasSuffix(c.Data, []byte("\n\n")) {
			t.Errorf("chunk %d ends inside an event: %q", i, c.Data)
		}
	}
	if len(withEvents) < 2 {
		t.Fatalf("the %d events arrived in %d chunk(s): not streamed", events, len(withEvents))
	}
	first, last := withEvents[0], withEvents[len(withEvents)-1]
	if bytes.Contains(first.Data, []byte("event: request_complete")) || !bytes.Contains(last.Data, []byte("event: request_complete")) {
		t.Errorf("request_complete arrived with the first events")
	}
	t.Logf("%d events in %d chunks over %v", events, len(withEvents), last.At.Sub(first.At))
}

// TestGetTaskBinary runs the built gettask function: /health and GET /agents.
func TestGetTaskBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs functions/gettask")
	}
	fake := startFunction(t, "gettask", newBackend(t))

	p, body := streamed(t, waitInvocation(t, fake, fake.Enqueue(readFixture(t, "health.json"))))
	if p.StatusCode != 200 || !strings.HasPrefix(p.Headers["Content-Type"], "application/json") {
		t.Errorf("health prelude = %+v", p)
	}
	if strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Errorf("health body = %q", body)
	}

	p, body = streamed(t, waitInvocation(t, fake, fake.Enqueue(readFixture(t, "agents.json"))))
	var got struct {
		Agents []struct {
			Name  string
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal(body, &got); err != nil || p.StatusCode != 200 {
		t.Fatalf("agents: %d %q (%v)", p.StatusCode, body, err)
	}
	if len(got.Agents) != 2 || got.Agents[0].Name != "assistant" || len(got.Agents[0].Tools) == 0 || got.Agents[1].Name != "desk" {
		t.Errorf("agents = %+v", got)
	}

	// gettask serves reads only: invoke's route is not one of its routes.
	p, _ = streamed(t, waitInvocation(t, fake, fake.Enqueue(readFixture(t, "invoke.json"))))
	if p.StatusCode != 404 {
		t.Errorf("POST invoke on gettask answered %d, want 404 route_not_found", p.StatusCode)
	}
}
