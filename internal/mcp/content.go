package mcp

import (
	"encoding/json"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

var _ agent.ContentChecker = (*Tool)(nil)

// CheckContent checks a person's answer to one of the server's forms
// against the schema the server sent, before anything is stored: the
// server checks it again in any case. A form whose schema does not compile
// never pauses (elicitation); one stored before that rule is refused here.
func (t *Tool) CheckContent(schema, content json.RawMessage) error {
	s, err := tools.CompileValueSchema(schema)
	if err != nil {
		return agent.Errorf(agent.CodeInvalidInput, "the form's schema is refused: %v", err)
	}
	return s.Validate(content)
}
