package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/tools"
)

// withArtifacts gives the agent the artifacts group, the engine bytes kept
// in memory and a per-user quota of quota bytes.
func (env *Env) withArtifacts(quota int64) {
	ag := env.E.Agents.(agentSet)["acc"]
	for _, b := range tools.Artifacts() {
		ag.Tools = append(ag.Tools, agent.BoundTool{Tool: b.Tool})
	}
	env.E.Artifacts = memstore.NewBytes()
	env.E.ArtifactQuota = quota
}

// SaveTurn answers a message "save <name> <n>" with a save_artifact call of
// n bytes, and the call's result with the result's text: a turn any number
// of concurrent requests can share.
func SaveTurn(_ context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if b := last.Content[0]; b.Type == agent.BlockToolResult {
		text := b.Status + ": " + b.Content[0].Text
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: text})
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock(text)}, StopReason: agent.StopEndTurn}, nil
	}
	var name string
	var n int
	if _, err := fmt.Sscanf(last.Content[0].Text, "save %s %d", &name, &n); err != nil {
		return nil, err
	}
	in, _ := json.Marshal(map[string]string{"name": name, "content": strings.Repeat("x", n)})
	return agenttest.CallTools(agent.StopToolUse, agenttest.Use("save-"+name, "save_artifact", string(in)))(context.Background(), req, on)
}

// A user's artifacts hold at most the engine's ArtifactQuota bytes, over all
// their tasks (docs/api.md, "Artifacts"): the save past it is the call's
// error result quota_exceeded and keeps nothing; concurrent saves never
// pass it together; deleting a task gives its bytes back; another user has
// a quota of their own.
func testArtifactQuota(t *testing.T, env *Env) {
	ctx := context.Background()
	env.withArtifacts(100)
	for range 100 {
		env.Model.Add(SaveTurn)
	}
	save := func(user, taskID, name string, n int) *agent.RequestResult {
		t.Helper()
		run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: user, TaskID: taskID,
			Items: []agent.InputItem{{Content: fmt.Sprintf("save %s %d", name, n)}}})
		if err != nil {
			t.Fatalf("save %s: %v", name, err)
		}
		res := run.Execute(ctx, nil)
		if res.Status != agent.StatusCompleted {
			t.Fatalf("save %s: %+v", name, res)
		}
		return res
	}
	first := save("alice", "", "a.txt", 60)
	if !strings.HasPrefix(first.Output, "success: Saved artifact") {
		t.Fatalf("the first save: %q", first.Output)
	}
	// A second task of the same user: 60 + 50 is past 100.
	over := save("alice", "", "b.txt", 50)
	if !strings.HasPrefix(over.Output, "error: ") || !strings.Contains(over.Output, agent.CodeQuotaExceeded) {
		t.Errorf("the save past the quota: %q, want an error result naming %s", over.Output, agent.CodeQuotaExceeded)
	}
	if arts, err := env.E.ListArtifacts(ctx, "acc", "alice", over.TaskID, true); err != nil || len(arts) != 0 {
		t.Errorf("the refused save's task lists %v, %v; want nothing", arts, err)
	}
	if n := (env.E.Artifacts.(*memstore.Bytes).Len(over.TaskID)); n != 0 {
		t.Errorf("the refused save left %d artifacts' bytes", n)
	}
	if ok := save("alice", over.TaskID, "c.txt", 40); !strings.HasPrefix(ok.Output, "success: ") {
		t.Errorf("a save up to the quota: %q", ok.Output)
	}
	if other := save("bob", "", "d.txt", 90); !strings.HasPrefix(other.Output, "success: ") {
		t.Errorf("another user's save: %q", other.Output)
	}
	// Deleting the first task gives its 60 bytes back; twelve concurrent
	// saves of 20 bytes then fit three times, never more.
	if err := env.E.DeleteTask(ctx, "acc", "alice", first.TaskID); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	saved, refused := 0, 0
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			res := save("alice", "", fmt.Sprintf("p%d.txt", i), 20)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.HasPrefix(res.Output, "success: "):
				saved++
			case strings.Contains(res.Output, agent.CodeQuotaExceeded):
				refused++
			default:
				t.Errorf("a concurrent save: %q", res.Output)
			}
		})
	}
	wg.Wait()
	if saved != 3 || refused != 9 {
		t.Errorf("%d concurrent saves of 20 bytes kept, %d refused; want 3 and 9 (60 bytes left of 100)", saved, refused)
	}
}
