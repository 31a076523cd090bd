package localmodel_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

func TestLocalModelSummarises(t *testing.T) {
	m := startModel(t)
	msgs := []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{
		agent.TextBlock("Earlier summary: summary: user: hello"),
		agent.TextBlock("user: please delete old.log and the reports of last year\nassistant: done"),
		agent.TextBlock("user: what time is it"),
	}}}
	var deltas []agent.Delta
	resp, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: "local", System: agent.CompactionPrompt, Messages: msgs, MaxTokens: 256},
		func(d agent.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	want := "summary: Earlier summary: summary: user: hello / user: please delete old.log and the / user: what time is it"
	if len(resp.Content) != 1 || resp.Content[0].Text != want || resp.StopReason != agent.StopEndTurn {
		t.Errorf("summary = %+v, want %q", resp, want)
	}
	// Without the compaction prompt the same message is echoed.
	resp, _ = converse(t, m, msgs)
	if resp.Content[0].Text == want {
		t.Errorf("an ordinary call was answered as a summarising one")
	}
}
