package torture

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/mcp"
)

// The form tool through Hitch's own MCP client: protocol 2026-07-28's
// input_required, a form then a URL, each answer recorded as the server
// got it, one run, and a result made of the answers.
func TestLedgerForm(t *testing.T) {
	l := &Ledger{}
	srv := httptest.NewServer(l.MCPHandler(ProcA))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, remotes, err := mcp.Connect(ctx, mcp.Config{URL: srv.URL + "/mcp/A/form", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(remotes) != 1 || remotes[0].Name != ToolForm {
		t.Fatalf("tools %+v, want form", remotes)
	}
	tool := mcp.NewTool(s, remotes[0], FormTool)
	run := func(reply *agent.InputReply) agent.ToolOutput {
		t.Helper()
		out, err := tool.Run(ctx, agent.ToolCall{ID: "c1", Name: FormTool, Input: json.RawMessage(`{"tag":"t1","v":"x","rounds":"fu"}`),
			RequestID: "r1", IdempotencyKey: "r1#c1", Reply: reply})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := run(nil)
	if n := out.NeedsInput; n == nil || len(n.Requests) != 1 || n.Requests[0].Key != "r1" || n.Requests[0].Mode != agent.ElicitForm || n.Requests[0].Message != "t1 round 1: pick a value" {
		t.Fatalf("round 1: %+v", out.NeedsInput)
	}
	out = run(&agent.InputReply{State: out.NeedsInput.State, Responses: []agent.ElicitResponse{{Key: "r1", Action: agent.ElicitAccept, Content: json.RawMessage(`{"round":1,"pick":"p"}`)}}})
	if n := out.NeedsInput; n == nil || len(n.Requests) != 1 || n.Requests[0].Key != "r2" || n.Requests[0].Mode != agent.ElicitURL {
		t.Fatalf("round 2: %+v", out.NeedsInput)
	}
	out = run(&agent.InputReply{State: out.NeedsInput.State, Responses: []agent.ElicitResponse{{Key: "r2", Action: agent.ElicitAccept}}})
	if len(out.Content) != 1 || out.Content[0].Text != Marker(1)+` form t1 r1=accept{"pick":"p","round":1} r2=accept` {
		t.Fatalf("result %+v", out.Content)
	}
	want := []Answer{
		{N: 1, Key: "r1#c1", RequestID: "r1", ToolCallID: "c1", Process: ProcA, Tag: "t1", Round: 1, Input: "r1", Action: "accept", Content: `{"pick":"p","round":1}`},
		{N: 2, Key: "r1#c1", RequestID: "r1", ToolCallID: "c1", Process: ProcA, Tag: "t1", Round: 2, Input: "r2", Action: "accept"},
	}
	if diff := cmp.Diff(want, l.Answers(), cmpopts.IgnoreFields(Answer{}, "At")); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if es := l.Executions(); len(es) != 1 || es[0].Tool != ToolForm || es[0].Key != "r1#c1" || es[0].Tag != "t1" {
		t.Errorf("executions %+v, want one run of form", es)
	}
	// Another call's state is refused, and recorded as such.
	st := l.issue(formState{Key: "r9#c9", Tag: "t9", Rounds: "f", Round: 1})
	if _, err := tool.Run(ctx, agent.ToolCall{ID: "c1", Name: FormTool, Input: json.RawMessage(`{"tag":"t1","v":"x","rounds":"fu"}`),
		RequestID: "r1", IdempotencyKey: "r1#c1", Reply: &agent.InputReply{State: st, Responses: []agent.ElicitResponse{{Key: "r1", Action: agent.ElicitDecline}}}}); err == nil {
		t.Error("another call's state: the call did not fail")
	}
	if as := l.Answers(); len(as) != 3 || as[2].Problem == "" || len(l.Executions()) != 1 {
		t.Errorf("another call's state: answers %+v", as)
	}
}
