package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

type namedTool string

func (n namedTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: string(n), InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (n namedTool) Run(context.Context, agent.ToolCall) (agent.ToolOutput, error) {
	return agent.ToolOutput{}, nil
}

// The tools reach the model sorted by name, whatever order the definition
// (or an MCP server) lists them in: the prefix the cache reuses stays the
// same.
func TestToolSpecsSorted(t *testing.T) {
	a := &agent.Agent{Tools: []agent.BoundTool{{Tool: namedTool("write_file")}, {Tool: namedTool("get_time")}, {Tool: namedTool("list_files")}}}
	var got []string
	for _, s := range a.ToolSpecs() {
		got = append(got, s.Name)
	}
	if diff := cmp.Diff([]string{"get_time", "list_files", "write_file"}, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// The agent's cache TTL goes with every model call, and the calls' cache
// reads and writes add up in the result and the request_complete event.
func TestCacheTTLAndUsage(t *testing.T) {
	f := newFixture(t, nil)
	ag, _ := f.e.Agents.Get("acc")
	ag.CacheTTL = time.Hour
	usage := func(turn agenttest.Turn, u agent.Usage) agenttest.Turn {
		return func(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
			resp, err := turn(ctx, req, on)
			if resp != nil {
				resp.Usage = u
			}
			return resp, err
		}
	}
	f.model.Add(
		usage(agenttest.CallTools(agent.StopToolUse, agenttest.Use("t1", "echo", `{"text":"one"}`)),
			agent.Usage{InputTokens: 3, OutputTokens: 2, CacheWriteInputTokens: 1500, TotalTokens: 1505}),
		usage(agenttest.Say("done"), agent.Usage{InputTokens: 1, OutputTokens: 4, CacheReadInputTokens: 1500, CacheWriteInputTokens: 40, TotalTokens: 1545}))
	res, rec := f.invoke(t, agent.InvokeInput{Items: text("go")})
	if res.Status != agent.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	for i := range 2 {
		if got := f.model.Call(i).CacheTTL; got != time.Hour {
			t.Errorf("call %d: CacheTTL = %v, want 1h", i, got)
		}
	}
	want := agent.Usage{InputTokens: 4, OutputTokens: 6, CacheReadInputTokens: 1500, CacheWriteInputTokens: 1540, TotalTokens: 3050}
	if diff := cmp.Diff(want, res.Usage); diff != "" {
		t.Errorf("result usage (-want +got):\n%s", diff)
	}
	last := rec.events[len(rec.events)-1]
	raw, _ := json.Marshal(last.Data)
	var ev struct {
		Usage map[string]int64 `json:"usage"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || last.Name != agent.EventRequestComplete {
		t.Fatalf("last event %s %s: %v", last.Name, raw, err)
	}
	wantJSON := map[string]int64{"input_tokens": 4, "output_tokens": 6, "total_tokens": 3050, "cache_read_input_tokens": 1500, "cache_write_input_tokens": 1540}
	if diff := cmp.Diff(wantJSON, ev.Usage); diff != "" {
		t.Errorf("request_complete usage (-want +got):\n%s", diff)
	}
}
