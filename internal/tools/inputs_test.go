package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// TestAskUserAnswers: what an answer to ask_user must be (docs/api.md,
// "Pauses for input"): a string, one of the choices, or a value valid
// against the question's schema.
func TestAskUserAnswers(t *testing.T) {
	const plain = `{"question":"Name?"}`
	const choice = `{"question":"Size?","choices":["S","M"]}`
	const typed = `{"question":"How many?","schema":{"type":"integer","minimum":1}}`
	for _, tc := range []struct {
		input, result string
		ok            bool
	}{
		{plain, `"Ada"`, true},
		{plain, `""`, false},
		{plain, `{"name":"Ada"}`, false},
		{choice, `"M"`, true},
		{choice, `"L"`, false},
		{typed, `3`, true},
		{typed, `0`, false},
		{typed, `"3"`, false},
	} {
		err := tools.AskUser{}.CheckResult(json.RawMessage(tc.input), json.RawMessage(tc.result))
		if (err == nil) != tc.ok {
			t.Errorf("%s answered %s: %v, want ok %v", tc.input, tc.result, err, tc.ok)
		}
		if err != nil && agent.CodeOf(err) != agent.CodeInvalidInput {
			t.Errorf("%s answered %s: code %s", tc.input, tc.result, agent.CodeOf(err))
		}
	}
	for _, bad := range []string{`{}`, `{"question":""}`, `{"question":"x","choices":[]}`, `{"question":"x","schema":{"type":7}}`, `{"question":"x","extra":1}`} {
		if err := (tools.AskUser{}).ValidateInput(json.RawMessage(bad)); err == nil {
			t.Errorf("ask_user input %s was accepted", bad)
		}
	}
	ask := tools.AskUser{}.Asked(json.RawMessage(choice))
	if ask.Question != "Size?" || len(ask.Choices) != 2 {
		t.Errorf("Asked = %+v", ask)
	}
}
