package agenttest

import (
	"context"
	"strconv"

	"github.com/hitch-agents/hitch/internal/agent"
)

// QuickModel answers every call at once, without a script, for tests that
// make many calls (fuzz targets): when PauseTool is set and the last user
// message's text is "pause", with a call of PauseTool (input PauseInput);
// otherwise with the text "ok". It checks each request the way Bedrock
// does, and fails one it would refuse with code internal, so that the test
// sees a 500 rather than a plausible answer.
type QuickModel struct {
	PauseTool, PauseInput string
}

// Converse implements agent.Model.
func (m *QuickModel) Converse(_ context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	if err := CheckMessages(req.Messages); err != nil {
		return nil, &agent.Error{Code: agent.CodeInternal, Message: "the conversation is one Bedrock refuses: " + err.Error()}
	}
	last := req.Messages[len(req.Messages)-1]
	if m.PauseTool != "" && len(last.Content) == 1 && last.Content[0].Type == agent.BlockText && last.Content[0].Text == "pause" {
		// Unique within the conversation: one id per model turn.
		id := "g" + strconv.Itoa(len(req.Messages)/2+1)
		return &agent.ModelResponse{Content: []agent.Block{Use(id, m.PauseTool, m.PauseInput)}, StopReason: agent.StopToolUse,
			Usage: agent.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}, nil
	}
	on(agent.Delta{Kind: agent.DeltaAnswer, Text: "ok"})
	return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("ok")}, StopReason: agent.StopEndTurn,
		Usage: agent.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}, nil
}
