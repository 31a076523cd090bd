package a2a_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// twoRounds serves an MCP tool (protocol 2026-07-28, stateless) that asks
// its name, then its colour, in one call.
func twoRounds(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "two-rounds", Version: "1"}, nil)
	ask := func(key, msg, state string) *sdk.CallToolResult {
		return &sdk.CallToolResult{RequestState: state, InputRequests: sdk.InputRequestMap{key: &sdk.ElicitParams{Message: msg,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{key: map[string]any{"type": "string"}}}}}}
	}
	srv.AddTool(&sdk.Tool{Name: "twostep", Description: "asks twice", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			switch req.Params.RequestState {
			case "":
				return ask("name", "Your name?", "two-1"), nil
			case "two-1":
				return ask("color", "Your colour?", "two-2"), nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A remote leaf's MCP call that asks again, its first round answered on
// the remote's own system: at the caller, a decision naming the call
// without its round is 400 round_required (docs/api.md, Resume), as at
// the leaf — a stale answer to round 1 never answers round 2.
func TestRemoteElicitAskedAgainNeedsItsRound(t *testing.T) {
	onBothStores(t, testRemoteElicitAskedAgainNeedsItsRound)
}

func testRemoteElicitAskedAgainNeedsItsRound(t *testing.T) {
	def := fmt.Sprintf(`apiVersion: tealagents/v1alpha1
kind: Agent
name: assistant
version: 0.1
description: Asks through its MCP tool.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - mcp: %s
        name: fq
        requires_approval: false
`, twoRounds(t))
	p := startPairYAML(t, def, true)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("/call fq_twostep {}"))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	in := paused["pending_inputs"].([]any)[0].(map[string]any)
	id := in["tool_call_id"].(string)
	answer := func(key, value string) string {
		return fmt.Sprintf(`{"decisions":[{"tool_call_id":%q,"action":"answer","result":{"action":"accept","content":{%q:%q}}}]}`, id, key, value)
	}
	code, out := httpCall(t, "POST", in["resume_url"].(string), "bob", answer("name", "Ada"))
	if code != 200 || out["status"] != "Paused" {
		t.Fatalf("round 1 answered at the remote: %d %v", code, out)
	}
	taskID := paused["task_id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	var round float64
	for {
		_, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+taskID, "alice", "")
		if ins, _ := v["pending_inputs"].([]any); len(ins) == 1 && ins[0].(map[string]any)["question"] == "Your colour?" {
			round, _ = v["round"].(float64)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("front never showed round 2: %v", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, out = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", answer("color", "teal"))
	if code != 400 || out["error"].(map[string]any)["code"] != "round_required" {
		t.Errorf("an answer at the caller without the round of a call asked again: %d %v, want 400 round_required", code, out)
	}
	named := strings.Replace(answer("color", "teal"), "{", fmt.Sprintf(`{"round":%d,`, int(round)), 1)
	code, out = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", named)
	if code != 200 || out["status"] != "Completed" || !strings.Contains(fmt.Sprint(out["output"]), "done") {
		t.Errorf("the answer naming its round %d at the caller: %d %v", int(round), code, out)
	}
}
