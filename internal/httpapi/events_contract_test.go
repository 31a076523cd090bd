package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// TestEveryEventHTTP drives a request through reasoning, a pause, an edited
// and a rejected call, so that the contract check (contract_test.go) sees
// each of those events, and the decisions in GET task, on the wire.
func TestEveryEventHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	e.model.Add(func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaThinking, Text: "let me see"})
		return &agent.ModelResponse{Content: []agent.Block{
			enginetest.Call("g1", "guarded", "one"), enginetest.Call("g2", "guarded", "two"),
		}, StopReason: agent.StopToolUse}, nil
	})
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"go"}]}`, "Accept", "text/event-stream")
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	want := []string{"request_started", "thinking", "tool_call", "tool_call", "approval_required", "request_complete"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("pause events (-want +got):\n%s", diff)
	}
	paused := evs[len(evs)-1].data
	url := paused["resume_url"].(string)

	e.model.Add(agenttest.Say("done"))
	r = e.do(t, "POST", url, "alice", `{"decisions":[
		{"tool_call_id":"g1","action":"edit","input":{"text":"uno"},"reason":"better"},
		{"tool_call_id":"g2","action":"reject","reason":"no"}]}`, "Accept", "text/event-stream")
	evs, _ = readSSE(t, strings.NewReader(string(r.body)))
	want = []string{"request_started", "approved", "rejected", "tool_result", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("resume events (-want +got):\n%s", diff)
	}
	if in, _ := evs[1].data["input"].(map[string]any); in["text"] != "uno" || evs[2].data["reason"] != "no" {
		t.Errorf("approved %v, rejected %v", evs[1].data, evs[2].data)
	}

	task := e.do(t, "GET", "/agents/acc/tasks/"+paused["task_id"].(string), "alice", "").json(t)
	decs := task["requests"].([]any)[0].(map[string]any)["decisions"].([]any)
	if len(decs) != 1 || len(decs[0].(map[string]any)["calls"].([]any)) != 2 {
		t.Errorf("decisions = %v", decs)
	}
}

func names(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.name)
	}
	return out
}
