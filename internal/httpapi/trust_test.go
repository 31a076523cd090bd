package httpapi_test

import (
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// TestRememberHTTP: "remember" over HTTP — refusals with the right code and
// nothing changed; an approve that remembers shows in GET task's trusted.
func TestRememberHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	res := e.pause(t)
	url := res["resume_url"].(string)
	taskURL := strings.TrimSuffix(url, "/requests/"+res["request_id"].(string)+"/resume")
	for _, tc := range []struct{ body, code string }{
		{`{"action":"approve","remember":"forever"}`, "invalid_action"},
		{`{"action":"reject","remember":"task"}`, "invalid_action"},
		{`{"decisions":[{"tool_call_id":"g1","action":"approve","remember":"session"}]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"g1","action":"reject","remember":"task"}]}`, "invalid_decisions"},
		{`{"remember":"task","decisions":[{"tool_call_id":"g1","action":"approve"}]}`, "invalid_decisions"},
	} {
		if r := e.do(t, "POST", url, "alice", tc.body); r.status != 400 || r.code() != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
	v := e.do(t, "GET", taskURL, "alice", "").json(t)
	if tr, ok := v["trusted"].([]any); !ok || len(tr) != 0 || v["status"] != "Paused" {
		t.Fatalf("before: trusted %v, status %v", v["trusted"], v["status"])
	}
	e.model.Add(agenttest.Say("done"))
	if r := e.do(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"g1","action":"approve","remember":"task"}]}`); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	v = e.do(t, "GET", taskURL, "alice", "").json(t)
	tr := v["trusted"].([]any)
	if len(tr) != 1 {
		t.Fatalf("trusted %v", tr)
	}
	got := tr[0].(map[string]any)
	if got["tool"] != "guarded" || got["by"] != "alice" || got["request_id"] != res["request_id"] || got["at"] == nil {
		t.Errorf("trusted[0] = %v", got)
	}
	if _, has := got["rule"]; has {
		t.Errorf("a tool trusted whole has no rule: %v", got)
	}
	calls := v["requests"].([]any)[0].(map[string]any)["decisions"].([]any)[0].(map[string]any)["calls"].([]any)
	if c := calls[0].(map[string]any); c["remember"] != "task" {
		t.Errorf("decision call %v", c)
	}
	// The next call of guarded runs at once.
	e.model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g2", "guarded", "again")), agenttest.Say("ok"))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+res["task_id"].(string)+`","items":[{"content":"again"}]}`)
	if r.status != 200 || r.json(t)["status"] != "Completed" {
		t.Errorf("trusted call: %d %s", r.status, r.body)
	}
}
