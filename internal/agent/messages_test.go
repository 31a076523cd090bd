package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

func item(seq int64, role string, content ...agent.Block) agent.Item {
	return agent.Item{Seq: seq, Role: role, Content: content}
}

func reqItem(rid string, seq int64, role string, content ...agent.Block) agent.Item {
	return agent.Item{Seq: seq, RequestID: rid, Role: role, Content: content}
}

func result(id, status, text string) agent.Block {
	return agent.Block{Type: agent.BlockToolResult, ToolUseID: id, Status: status, Content: []agent.Block{agent.TextBlock(text)}}
}

// shape renders messages as role: block summaries.
func shape(msgs []agent.Message) []string {
	var out []string
	for _, m := range msgs {
		s := m.Role + ":"
		for _, b := range m.Content {
			switch b.Type {
			case agent.BlockText:
				s += " text(" + b.Text + ")"
			case agent.BlockToolUse:
				s += " use(" + b.ID + ")"
			case agent.BlockToolResult:
				s += " result(" + b.ToolUseID + "," + b.Status + ")"
			default:
				s += " " + b.Type
			}
		}
		out = append(out, s)
	}
	return out
}

// unansweredText is the note that follows a message its request never
// answered.
const unansweredText = "(no answer: this request ended before the model answered it)"

func TestBuildMessages(t *testing.T) {
	use := func(id string) agent.Block {
		return agent.Block{Type: agent.BlockToolUse, ID: id, Name: "echo", Input: json.RawMessage(`{}`)}
	}
	for _, tc := range []struct {
		name  string
		task  *agent.Task
		items []agent.Item
		want  []string
	}{
		{"plain", nil, []agent.Item{item(1, "user", agent.TextBlock("hi")), item(2, "assistant", agent.TextBlock("yo")), item(3, "user", agent.TextBlock("again"))},
			[]string{"user: text(hi)", "assistant: text(yo)", "user: text(again)"}},
		{"a message whose request ended unanswered is not merged with the next request's", nil, []agent.Item{
			reqItem("r1", 1, "user", agent.TextBlock("delete X")), reqItem("r2", 2, "user", agent.TextBlock("list"))},
			[]string{"user: text(delete X)", "assistant: text(" + unansweredText + ")", "user: text(list)"}},
		{"an answered request needs no note", nil, []agent.Item{
			reqItem("r1", 1, "user", agent.TextBlock("a")), reqItem("r1", 2, "assistant", agent.TextBlock("  ")), reqItem("r1", 3, "assistant", agent.TextBlock("yo")), reqItem("r2", 4, "user", agent.TextBlock("b"))},
			[]string{"user: text(a)", "assistant: text(yo)", "user: text(b)"}},
		{"a blank answer is no answer", nil, []agent.Item{
			reqItem("r1", 1, "user", agent.TextBlock("a")), reqItem("r1", 2, "assistant", agent.TextBlock("  ")), reqItem("r2", 3, "user", agent.TextBlock("b"))},
			[]string{"user: text(a)", "assistant: text(" + unansweredText + ")", "user: text(b)"}},
		{"a compacted context's summary is no request", &agent.Task{Context: agent.ContextStart{Seq: 3, Summary: 3}}, []agent.Item{
			reqItem("r1", 1, "user", agent.TextBlock("a")), reqItem("r1", 2, "assistant", agent.TextBlock("yo")), reqItem("r1", 3, "summary", agent.TextBlock("S")), reqItem("r2", 4, "user", agent.TextBlock("b"))},
			[]string{"user: text(Summary of the earlier conversation:\nS) text(b)"}},
		{"tool results are user messages, merged with the next text", nil, []agent.Item{
			item(1, "user", agent.TextBlock("go")), item(2, "assistant", use("t1")), item(3, "tool", result("t1", "success", "ok")), item(4, "user", agent.TextBlock("next"))},
			[]string{"user: text(go)", "assistant: use(t1)", "user: result(t1,success) text(next)"}},
		{"a call without its result gets one", nil, []agent.Item{
			item(1, "user", agent.TextBlock("go")), item(2, "assistant", use("t1"), use("t2")), item(3, "tool", result("t1", "success", "ok")), item(4, "user", agent.TextBlock("next"))},
			[]string{"user: text(go)", "assistant: use(t1) use(t2)", "user: result(t1,success) result(t2,error) text(next)"}},
		{"a stray result is dropped", nil, []agent.Item{
			item(1, "user", agent.TextBlock("go")), item(2, "tool", result("zz", "success", "ok"))},
			[]string{"user: text(go)"}},
		{"blank text and empty messages are dropped; it ends with the user", nil, []agent.Item{
			item(1, "user", agent.TextBlock("go")), item(2, "assistant", agent.TextBlock("  ")), item(3, "assistant", agent.TextBlock("answer"))},
			[]string{"user: text(go)", "assistant: text(answer)", "user: text((continue))"}},
		{"superseded entries are left out", &agent.Task{Superseded: []agent.SeqRange{{From: 2, To: 4, SupersededBy: "r2"}}}, []agent.Item{
			item(1, "user", agent.TextBlock("a")), item(2, "assistant", agent.TextBlock("old")), item(3, "user", agent.TextBlock("b")), item(4, "user", agent.TextBlock("b2"))},
			[]string{"user: text(a) text(b2)"}},
		{"it starts with the user", nil, []agent.Item{item(1, "assistant", agent.TextBlock("hello")), item(2, "user", agent.TextBlock("hi"))},
			[]string{"user: text((the conversation continues))", "assistant: text(hello)", "user: text(hi)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := agent.BuildMessages(tc.task, tc.items)
			if diff := cmp.Diff(tc.want, shape(msgs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if err := agenttest.CheckMessages(msgs); err != nil {
				t.Errorf("Bedrock would refuse: %v", err)
			}
		})
	}
}
