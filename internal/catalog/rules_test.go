package catalog_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

const rulesHead = "apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 0.1\nspec:\n  agent:\n    model: m\n"

func TestApprovalRules(t *testing.T) {
	def := rulesHead + "    context: {max_input_tokens: 8000, keep_turns: 2}\n    tools:\n" +
		"      - builtin: files\n        config: {root: ./s}\n        requires_approval:\n" +
		"          - write_file\n" +
		"          - {tool: delete_file, when: {path: \"reports/**\"}}\n" +
		"          - {tool: delete_file, when: {path: \"*.log\"}}\n" +
		"          - {tool: append_file, when: {path: \"logs/*\", content: \"*secret*\"}}\n"
	a, err := loadOne(t, def, catalog.Env{Files: true, BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.ContextPolicy{MaxInputTokens: 8000, KeepTurns: 2}, a.Context); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
	rules := map[string][]string{}
	approval := map[string]bool{}
	for _, bt := range a.Tools {
		name := bt.Tool.Spec().Name
		approval[name] = bt.Policy.RequiresApproval
		for _, r := range bt.Policy.Rules {
			rules[name] = append(rules[name], r.Name())
		}
	}
	if diff := cmp.Diff(map[string][]string{
		"delete_file": {"delete_file when path=reports/**", "delete_file when path=*.log"},
		"append_file": {"append_file when content=*secret* and path=logs/*"},
	}, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"list_files": false, "read_file": false, "write_file": true, "append_file": true, "delete_file": true}, approval); diff != "" {
		t.Errorf("requires approval (-want +got):\n%s", diff)
	}
	del, _ := a.Tool("delete_file")
	app, _ := a.Tool("append_file")
	for _, tc := range []struct {
		rule  agent.ApprovalRule
		input string
		want  bool
	}{
		{del.Policy.Rules[0], `{"path":"reports/q1.csv"}`, true},
		{del.Policy.Rules[0], `{"path":"reports/2026/q1.csv"}`, true},
		{del.Policy.Rules[0], `{"path":"tmp/../reports/q1.csv"}`, true},
		{del.Policy.Rules[0], `{"path":"./reports/q1.csv"}`, true},
		{del.Policy.Rules[0], `{"path":"tmp/q1.csv"}`, false},
		{del.Policy.Rules[1], `{"path":"old.log"}`, true},
		{del.Policy.Rules[1], `{"path":"logs/old.log"}`, false},
		{app.Policy.Rules[0], `{"path":"logs/a","content":"my secret key"}`, true},
		{app.Policy.Rules[0], `{"path":"logs/a","content":"hello"}`, false},
		{app.Policy.Rules[0], `{"path":"notes/a","content":"secret"}`, false},
		{app.Policy.Rules[0], `{"path":"logs/a"}`, false},
	} {
		if got := tc.rule.Matches(json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("%s matches %s = %v, want %v", tc.rule.Name(), tc.input, got, tc.want)
		}
	}
}

func TestApprovalRuleErrors(t *testing.T) {
	files := "    tools:\n      - builtin: files\n        config: {root: ./s}\n        requires_approval:\n"
	lambda := "    tools:\n      - name: get_report\n        lambda: arn:aws:lambda:us-east-1:123456789012:function:report\n        description: Gets a report\n" +
		"        input_schema: {type: object, properties: {year: {type: integer}}}\n        requires_approval:\n"
	for _, tc := range []struct {
		name, def string
		want      []string
	}{
		{"unknown tool", files + "          - {tool: rm_rf, when: {path: x}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].tool: unknown tool "rm_rf": the group has list_files, read_file, write_file, append_file, delete_file`}},
		{"field not in the schema", files + "          - {tool: delete_file, when: {pth: \"reports/**\"}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when.pth: tool "delete_file" has no input field "pth" (its fields: path)`}},
		{"bad glob", files + "          - {tool: delete_file, when: {path: \"reports/[a\"}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when.path: bad glob: "reports/[a": the class at 8 is not closed`}},
		{"three stars", files + "          - {tool: delete_file, when: {path: \"***\"}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when.path: bad glob: "***": 3 stars in a row at 0; use * (within a segment) or ** (across /)`}},
		{"empty when", files + "          - {tool: delete_file, when: {}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when: must name at least one input field`}},
		{"glob not a string", files + "          - {tool: delete_file, when: {path: [a]}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when.path: must be a string, got a list`}},
		{"name and rule", files + "          - delete_file\n          - {tool: delete_file, when: {path: x}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[1]: "delete_file" is listed by name, so it always needs approval; a rule would change nothing`}},
		{"unknown rule key", files + "          - {tool: delete_file, when: {path: x}, unless: {path: y}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].unless: unknown field (known: tool, when, approvers, quorum, separate_from_requester)`}},
		{"lambda field not in the schema", lambda + "          - {tool: get_report, when: {month: \"1*\"}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0].when.month: tool "get_report" has no input field "month" (its fields: year)`}},
		{"context without max", "    context: {keep_turns: 2}\n",
			[]string{`agents/a.yaml: spec.agent.context.max_input_tokens: required: the estimated input tokens past which older turns are summarised`}},
		{"context keep 0", "    context: {max_input_tokens: 1000, keep_turns: 0}\n",
			[]string{`agents/a.yaml: spec.agent.context.keep_turns: must be between 1 and 100, got 0`}},
		{"context tiny", "    context: {max_input_tokens: 10}\n",
			[]string{`agents/a.yaml: spec.agent.context.max_input_tokens: must be between 100 and 2000000, got 10`}},
		{"context unknown", "    context: {max_input_tokens: 1000, strategy: drop}\n",
			[]string{`agents/a.yaml: spec.agent.context.strategy: unknown field (known: max_input_tokens, keep_turns)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakelambda.New(t)
			_, err := loadOne(t, rulesHead+tc.def, catalog.Env{Files: true, BaseDir: t.TempDir(), Lambda: fake.Client(t)})
			if err == nil {
				t.Fatalf("Load() error = nil, want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}
