package bedrock

import (
	"slices"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Normalize makes messages acceptable to Bedrock (docs/architecture.md): tool entries
// are sent as user messages; consecutive messages of one role are merged,
// their blocks concatenated in order; a tool_use left without a result gets
// an error result ("not run: …") in the next user message, created if need
// be. It never reorders blocks or drops content, and does not modify msgs.
func Normalize(msgs []agent.Message) []agent.Message {
	var out []agent.Message
	for _, m := range msgs {
		role := m.Role
		if role == agent.RoleTool {
			role = agent.RoleUser
		}
		if len(m.Content) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, m.Content...)
			continue
		}
		out = append(out, agent.Message{Role: role, Content: slices.Clone(m.Content)})
	}
	for i := 0; i < len(out); i++ {
		if out[i].Role != agent.RoleAssistant {
			continue
		}
		var answered map[string]bool
		if i+1 < len(out) {
			answered = map[string]bool{}
			for _, b := range out[i+1].Content {
				if b.Type == agent.BlockToolResult {
					answered[b.ToolUseID] = true
				}
			}
		}
		var missing []agent.Block
		for _, b := range out[i].Content {
			if b.Type == agent.BlockToolUse && !answered[b.ID] {
				missing = append(missing, agent.ErrorResult(b.ID, "not run: no result was recorded"))
			}
		}
		if len(missing) == 0 {
			continue
		}
		if i+1 == len(out) {
			out = append(out, agent.Message{Role: agent.RoleUser})
		}
		// results first: Bedrock wants them ahead of any text
		out[i+1].Content = append(missing, out[i+1].Content...)
	}
	return out
}
