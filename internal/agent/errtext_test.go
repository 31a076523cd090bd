package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// goTypeLeaks are what Go's encoding/json puts in its errors: never in a
// text a client or a model reads.
var goTypeLeaks = []string{"Go value", "Go struct", "struct {", "json:", "map[", "[]"}

// The decoders of outside input — an answer to an MCP form, an agent
// tool's input from the model — name what they want in words, never the
// Go types they decode into (issue: answering a form with a plain string
// showed `json: cannot unmarshal string into Go value of type struct {…}`).
func TestDecoderErrorsShowNoGoTypes(t *testing.T) {
	p := PendingCall{ToolCallID: "tooluse_1"}
	for _, bad := range []string{`"no"`, `7`, `[1]`, `true`, `{"action": 1}`, `{"action": "accept", "content": "x", "x": 1}`, `{"x": 1}`, `{"action": ["accept"]}`, `{`} {
		err := elicitAnswer(&Agent{}, 0, p, json.RawMessage(bad))
		if err == nil {
			t.Errorf("elicitAnswer(%s) accepted it", bad)
			continue
		}
		checkNoGoTypes(t, "elicitAnswer("+bad+")", err.Error())
	}
	for _, bad := range []string{`"hi"`, `7`, `[]`, `{"message": 1}`, `{"message": "x", "new_task": "yes"}`, `{"other": 1}`, `{"message": {"a": 1}}`} {
		_, err := parseAgentInput(json.RawMessage(bad))
		if err == nil {
			t.Errorf("parseAgentInput(%s) accepted it", bad)
			continue
		}
		checkNoGoTypes(t, "parseAgentInput("+bad+")", err.Error())
	}
}

func checkNoGoTypes(t *testing.T, what, msg string) {
	t.Helper()
	for _, leak := range goTypeLeaks {
		if strings.Contains(msg, leak) {
			t.Errorf("%s: the error shows %q: %s", what, leak, msg)
		}
	}
}

// A sub-agent's result is its text, then the JSON naming the child: in the
// tool_result event they stand apart (issue: `deleted old.log{"agent":…`).
func TestResultTextApartFromJSON(t *testing.T) {
	b := childResult("tooluse_1", ChildCall{Agent: "assistant", TaskID: "T", RequestID: "R"}, childOutcome{res: &RequestResult{Status: StatusCompleted, Output: "deleted old.log"}})
	out, _ := resultEvent("assistant", b)["output"].(string)
	if want := "deleted old.log\n{\"agent\":"; !strings.HasPrefix(out, want) {
		t.Errorf("output %q, want it to start %q", out, want)
	}
}
