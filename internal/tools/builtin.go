package tools

import (
	"encoding/json"
	"fmt"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Builtin is a tool of a built-in group, with whether it may be re-run when
// its first run's outcome is unknown.
type Builtin struct {
	Tool       agent.Tool
	Idempotent bool
}

// Built-in group names.
const (
	GroupClock = "clock"
	GroupFiles = "files"
)

// Groups lists the built-in groups.
func Groups() []string { return []string{GroupArtifacts, GroupAskUser, GroupClock, GroupFiles} }

// decodeInput validates input against schema and decodes it into v.
func decodeInput(schema *Schema, input json.RawMessage, v any) error {
	if err := schema.Validate(input); err != nil {
		return err
	}
	if len(input) == 0 {
		return nil
	}
	if err := json.Unmarshal(input, v); err != nil {
		return fmt.Errorf("decode input: %v", err)
	}
	return nil
}

// text is a result of one text block.
func text(s string) agent.ToolOutput {
	return agent.ToolOutput{Content: []agent.Block{agent.TextBlock(s)}}
}
