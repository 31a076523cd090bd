package localmodel_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

func TestLocalModelSummarises(t *testing.T) {
	m := startModel(t)
	msgs := []agent.Message{
		{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("Earlier summary: summary: hello"),
			agent.TextBlock("please delete old.log and the reports of last year")}},
		{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("done")}},
		{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("what time is it")}},
		{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("noon")}},
		{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("(End of the conversation to summarise.)")}},
	}
	var deltas []agent.Delta
	resp, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: "local", System: agent.CompactionPrompt, Messages: msgs, MaxTokens: 256},
		func(d agent.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	want := "summary: Earlier summary: summary: hello / please delete old.log and the reports / done / what time is it / noon"
	if len(resp.Content) != 1 || resp.Content[0].Text != want || resp.StopReason != agent.StopEndTurn {
		t.Errorf("summary = %+v, want %q", resp, want)
	}
	// Without the compaction prompt the same message is echoed.
	resp, _ = converse(t, m, msgs)
	if resp.Content[0].Text == want {
		t.Errorf("an ordinary call was answered as a summarising one")
	}
}
