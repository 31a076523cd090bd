package mcp

import (
	"encoding/json"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

var _ agent.ContentChecker = (*Tool)(nil)

// CheckContent checks a person's answer to one of the server's forms
// against the schema the server sent, before anything is stored: the
// server checks it again in any case.
func (t *Tool) CheckContent(schema, content json.RawMessage) error {
	s, err := tools.CompileSchema(schema)
	if err != nil {
		// A schema this side cannot compile is the server's to check.
		return nil
	}
	return s.Validate(content)
}
