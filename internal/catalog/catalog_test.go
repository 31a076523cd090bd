package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// toolView is a bound tool as the tests compare it.
type toolView struct {
	Name   string
	Policy agent.ToolPolicy
}

// agentView is an agent as the tests compare it.
type agentView struct {
	Name, Version, Description    string
	ModelID, SystemPrompt         string
	Temperature                   *float64
	MaxTokens, MaxIterations      int
	MaxToolResultBytes, Reasoning int
	Tools                         []toolView
}

func view(a *agent.Agent) agentView {
	v := agentView{
		Name: a.Name, Version: a.Version, Description: a.Description,
		ModelID: a.ModelID, SystemPrompt: a.SystemPrompt, Temperature: a.Temperature,
		MaxTokens: a.MaxTokens, MaxIterations: a.MaxIterations,
		MaxToolResultBytes: a.MaxToolResultBytes, Reasoning: a.ReasoningBudget,
	}
	for _, t := range a.Tools {
		v.Tools = append(v.Tools, toolView{Name: t.Tool.Spec().Name, Policy: t.Policy})
	}
	return v
}

// policy builds a ToolPolicy with the default timeout.
func policy(approval bool, ttl time.Duration, idempotent bool) agent.ToolPolicy {
	return agent.ToolPolicy{RequiresApproval: approval, ApprovalTTL: ttl, Idempotent: idempotent, Timeout: catalog.DefaultToolTimeout}
}

func loadOne(tb testing.TB, def string, env catalog.Env) (*agent.Agent, error) {
	tb.Helper()
	c, err := catalog.Load(fstest.MapFS{"agents/a.yaml": {Data: []byte(def)}}, "agents", env)
	if err != nil {
		return nil, err
	}
	list := c.List()
	if len(list) != 1 {
		tb.Fatalf("List() has %d agents, want 1", len(list))
	}
	return list[0], nil
}

func runTool(tb testing.TB, a *agent.Agent, name, input string) (agent.ToolOutput, error) {
	tb.Helper()
	bt, ok := a.Tool(name)
	if !ok {
		tb.Fatalf("agent %s has no tool %s", a.Name, name)
	}
	return bt.Tool.Run(context.Background(), agent.ToolCall{ID: "tooluse_1", Name: name, Input: json.RawMessage(input), RequestID: "req-1", IdempotencyKey: "req-1#tooluse_1"})
}

func TestLoadExampleAgent(t *testing.T) {
	base := t.TempDir()
	c, err := catalog.Load(agents.FS, ".", catalog.Env{Files: true, BaseDir: base})
	if err != nil {
		t.Fatalf("Load(agents.FS) error = %v", err)
	}
	a, ok := c.Get("assistant")
	if !ok {
		t.Fatal(`Get("assistant") not found`)
	}
	got := view(a)
	got.SystemPrompt = ""
	// delete_file's rules: every delete the owner's; one under prod/ also
	// another of sre's (four eyes). Compared by name and policy (a rule's
	// glob is a func).
	type rule struct {
		Name   string
		Policy *agent.ApproverPolicy
	}
	var rules []rule
	for i, tv := range got.Tools {
		for _, r := range tv.Policy.Rules {
			rules = append(rules, rule{r.Name(), r.Approvers})
		}
		got.Tools[i].Policy.Rules = nil
	}
	if diff := cmp.Diff([]rule{{"delete_file", nil}, {"delete_file when path=prod/**", &agent.ApproverPolicy{Approvers: []string{"group:sre"}, Quorum: 1, FourEyes: true}}}, rules); diff != "" {
		t.Errorf("the assistant's approval rules (-want +got):\n%s", diff)
	}
	want := agentView{
		Name: "assistant", Version: "0.1",
		Description:        "Tells the time and keeps files in a sandbox; asks before changing them; saves artifacts to download.",
		ModelID:            "us.anthropic.claude-sonnet-4-20250514-v1:0",
		MaxTokens:          2048,
		MaxIterations:      10,
		MaxToolResultBytes: 65536,
		Tools: []toolView{
			{"get_time", policy(false, 0, true)},
			{"save_artifact", policy(false, 0, false)},
			{"read_artifact", policy(false, 0, true)},
			{"ask_user", agent.ToolPolicy{InputTTL: 24 * time.Hour}},
			{"list_files", policy(false, 0, true)},
			{"read_file", policy(false, 0, true)},
			{"write_file", policy(true, time.Hour, true)},
			{"append_file", policy(true, time.Hour, false)},
			{"delete_file", policy(true, time.Hour, true)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assistant (-want +got):\n%s", diff)
	}
	if a.SystemPrompt == "" || a.Source() != "assistant:0.1" {
		t.Errorf("SystemPrompt = %q, Source() = %q", a.SystemPrompt, a.Source())
	}
	// config.root is relative to the agent file's directory: BaseDir here.
	if _, err := runTool(t, a, "write_file", `{"path":"note.txt","content":"hi"}`); err != nil {
		t.Fatalf("write_file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(base, "sandbox", "note.txt")); err != nil || string(b) != "hi" {
		t.Errorf("sandbox/note.txt = %q, %v; want \"hi\"", b, err)
	}
}

func TestLoadExampleAgentOnLambda(t *testing.T) {
	base := t.TempDir()
	c, err := catalog.Load(agents.FS, ".", catalog.Env{BaseDir: base})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	a, _ := c.Get("assistant")
	if _, err := runTool(t, a, "read_file", `{"path":"x"}`); !errors.Is(err, tools.ErrFilesUnavailable) {
		t.Errorf("read_file on Lambda: error = %v, want ErrFilesUnavailable", err)
	}
	if _, err := runTool(t, a, "get_time", `{}`); err != nil {
		t.Errorf("get_time on Lambda: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "sandbox")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sandbox was created on Lambda (%v)", err)
	}
}

const minimal = `
apiVersion: tealagents/v1alpha1
kind: Agent
name: a
version: 1
spec:
  agent:
    model: m
`

func TestLoadDefaults(t *testing.T) {
	a, err := loadOne(t, minimal, catalog.Env{})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := agentView{Name: "a", Version: "1", ModelID: "m", MaxTokens: 2048, MaxIterations: 10, MaxToolResultBytes: 65536}
	if diff := cmp.Diff(want, view(a)); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
}

func TestLoadAllFields(t *testing.T) {
	def := `
apiVersion: tealagents/v1alpha1
kind: Agent
name: full_agent-2
version: 1.10
description: All of it
spec:
  agent:
    name: default
    model: us.anthropic.claude-sonnet-4-20250514-v1:0
    system_prompt: Be brief.
    temperature: 0.2
    max_tokens: 4096
    max_iterations: 5
    max_tool_result_bytes: 2048
    reasoning: {budget_tokens: 1024}
    default_requires_approval: true
    tools:
      - builtin: clock
        timeout: 5s
`
	a, err := loadOne(t, def, catalog.Env{})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	temp := 0.2
	want := agentView{
		Name: "full_agent-2", Version: "1.10", Description: "All of it",
		ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", SystemPrompt: "Be brief.", Temperature: &temp,
		MaxTokens: 4096, MaxIterations: 5, MaxToolResultBytes: 2048, Reasoning: 1024,
		Tools: []toolView{{"get_time", agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: catalog.DefaultApprovalTTL, Idempotent: true, Timeout: 5 * time.Second}}},
	}
	if diff := cmp.Diff(want, view(a)); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
}

func TestRequiresApproval(t *testing.T) {
	const files = "\n      - builtin: files\n        config: {root: ./sandbox}\n"
	tests := []struct {
		name string
		// default_requires_approval, and the lines added to the files entry
		def, entry string
		want       map[string]bool
	}{
		{name: "nothing said", want: map[string]bool{"list_files": false, "read_file": false, "write_file": false, "append_file": false, "delete_file": false}},
		{name: "default true", def: "true", want: map[string]bool{"list_files": true, "read_file": true, "write_file": true, "append_file": true, "delete_file": true}},
		{name: "true", entry: "requires_approval: true", want: map[string]bool{"list_files": true, "read_file": true, "write_file": true, "append_file": true, "delete_file": true}},
		{name: "false over default true", def: "true", entry: "requires_approval: false", want: map[string]bool{"list_files": false, "read_file": false, "write_file": false, "append_file": false, "delete_file": false}},
		{name: "list", entry: "requires_approval: [delete_file]", want: map[string]bool{"list_files": false, "read_file": false, "write_file": false, "append_file": false, "delete_file": true}},
		{name: "list over default true", def: "true", entry: "requires_approval: [write_file, delete_file]", want: map[string]bool{"list_files": false, "read_file": false, "write_file": true, "append_file": false, "delete_file": true}},
		{name: "empty list", def: "true", entry: "requires_approval: []", want: map[string]bool{"list_files": false, "read_file": false, "write_file": false, "append_file": false, "delete_file": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := minimal
			if tt.def != "" {
				def += "    default_requires_approval: " + tt.def + "\n"
			}
			def += "    tools:" + files
			if tt.entry != "" {
				def += "        " + tt.entry + "\n"
			}
			a, err := loadOne(t, def, catalog.Env{})
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			got := map[string]bool{}
			for _, bt := range a.Tools {
				got[bt.Tool.Spec().Name] = bt.Policy.RequiresApproval
				if bt.Policy.RequiresApproval != (bt.Policy.ApprovalTTL == catalog.DefaultApprovalTTL) {
					t.Errorf("%s: policy %+v: the TTL goes with the approval", bt.Tool.Spec().Name, bt.Policy)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requires approval (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	const head = "apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 0.1\n"
	const agentHead = head + "spec:\n  agent:\n    model: m\n"
	const filesEntry = "      - builtin: files\n        config: {root: ./s}\n"
	const lambdaEntry = "      - name: get_report\n        lambda: arn:aws:lambda:us-east-1:123456789012:function:report\n        description: Gets a report\n"
	tests := []struct {
		name, def string
		want      []string // the errors, in order
	}{
		{"empty file", "", []string{"agents/a.yaml: empty file; want an agent definition"}},
		{"not yaml", "name: [", []string{"agents/a.yaml: yaml: line 1: did not find expected node content"}},
		{"two documents", minimal + "---\n" + minimal, []string{"agents/a.yaml: more than one YAML document; one agent per file"}},
		{"not a mapping", "- a\n", []string{"agents/a.yaml: must be a mapping, got a list"}},
		{"all missing", "description: x\n", []string{
			"agents/a.yaml: apiVersion: required", "agents/a.yaml: kind: required", "agents/a.yaml: name: required",
			"agents/a.yaml: version: required", "agents/a.yaml: spec: required"}},
		{"apiVersion", strings.Replace(agentHead, "tealagents/v1alpha1", "skagents/v1", 1),
			[]string{`agents/a.yaml: apiVersion: must be tealagents/v1alpha1, got "skagents/v1"`}},
		{"kind", strings.Replace(agentHead, "kind: Agent", "kind: Sequential", 1),
			[]string{`agents/a.yaml: kind: must be Agent, got "Sequential"`}},
		{"name uppercase", strings.Replace(agentHead, "name: a", "name: My Agent", 1),
			[]string{`agents/a.yaml: name: "My Agent" is not usable in a URL path: want 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit`}},
		{"name slash", strings.Replace(agentHead, "name: a", "name: a/b", 1),
			[]string{`agents/a.yaml: name: "a/b" is not usable in a URL path: want 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit`}},
		{"name too long", strings.Replace(agentHead, "name: a", "name: "+strings.Repeat("a", 65), 1),
			[]string{`agents/a.yaml: name: "` + strings.Repeat("a", 65) + `" is not usable in a URL path: want 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit`}},
		{"name leading dash", strings.Replace(agentHead, "name: a", "name: -a", 1),
			[]string{`agents/a.yaml: name: "-a" is not usable in a URL path: want 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit`}},
		{"version empty", strings.Replace(agentHead, "version: 0.1", `version: ""`, 1),
			[]string{"agents/a.yaml: version: must not be empty"}},
		{"version null", strings.Replace(agentHead, "version: 0.1", `version:`, 1),
			[]string{"agents/a.yaml: version: required"}},
		{"version list", strings.Replace(agentHead, "version: 0.1", `version: [1]`, 1),
			[]string{"agents/a.yaml: version: must be a string, got a list"}},
		{"unknown top field", agentHead + "metadata: {}\n",
			[]string{"agents/a.yaml: metadata: unknown field (known: apiVersion, kind, name, version, description, spec)"}},
		{"duplicate key", agentHead + "name: b\n", []string{"agents/a.yaml: name: duplicate key"}},
		{"spec.agent missing", head + "spec: {}\n", []string{"agents/a.yaml: spec.agent: required"}},
		{"model missing", head + "spec:\n  agent:\n    system_prompt: x\n", []string{"agents/a.yaml: spec.agent.model: required"}},
		{"model empty", head + "spec:\n  agent:\n    model: ' '\n", []string{"agents/a.yaml: spec.agent.model: must not be empty"}},
		{"unknown agent field", agentHead + "    max_token: 10\n",
			[]string{"agents/a.yaml: spec.agent.max_token: unknown field (known: name, model, system_prompt, temperature, max_tokens, max_iterations, max_tool_result_bytes, reasoning, default_requires_approval, tools, context, cache)"}},
		{"cache ttl unknown", agentHead + "    cache: {ttl: 10m}\n",
			[]string{`agents/a.yaml: spec.agent.cache.ttl: must be 5m, 1h, off or auto, got "10m"`}},
		{"cache ttl missing", agentHead + "    cache: {}\n",
			[]string{"agents/a.yaml: spec.agent.cache.ttl: required: 5m, 1h, off or auto"}},
		{"cache not a mapping", agentHead + "    cache: 5m\n",
			[]string{"agents/a.yaml: spec.agent.cache: must be a mapping, got \"5m\""}},
		{"cache unknown field", agentHead + "    cache: {ttl: 5m, points: 4}\n",
			[]string{"agents/a.yaml: spec.agent.cache.points: unknown field (known: ttl)"}},
		{"temperature high", agentHead + "    temperature: 1.5\n", []string{"agents/a.yaml: spec.agent.temperature: must be between 0 and 1, got 1.5"}},
		{"temperature text", agentHead + "    temperature: warm\n", []string{`agents/a.yaml: spec.agent.temperature: must be a number, got "warm"`}},
		{"max_tokens zero", agentHead + "    max_tokens: 0\n", []string{"agents/a.yaml: spec.agent.max_tokens: must be between 1 and 200000, got 0"}},
		{"max_tokens float", agentHead + "    max_tokens: 10.5\n", []string{"agents/a.yaml: spec.agent.max_tokens: must be an integer, got a number"}},
		{"max_iterations", agentHead + "    max_iterations: 1000\n", []string{"agents/a.yaml: spec.agent.max_iterations: must be between 1 and 100, got 1000"}},
		{"max_tool_result_bytes", agentHead + "    max_tool_result_bytes: 10\n", []string{"agents/a.yaml: spec.agent.max_tool_result_bytes: must be between 1024 and 1048576, got 10"}},
		{"reasoning over max_tokens", agentHead + "    reasoning: {budget_tokens: 4096}\n",
			[]string{"agents/a.yaml: spec.agent.reasoning.budget_tokens: must be less than max_tokens (2048), got 4096"}},
		{"reasoning small", agentHead + "    reasoning: {budget_tokens: 10}\n",
			[]string{"agents/a.yaml: spec.agent.reasoning.budget_tokens: must be between 1024 and 200000, got 10"}},
		{"ask_user with requires_approval", agentHead + "    tools:\n      - builtin: ask_user\n        requires_approval: true\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].requires_approval: an input tool never needs approval: its calls pause for the user's answer"}},
		{"ask_user with config", agentHead + "    tools:\n      - builtin: ask_user\n        config: {x: 1}\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].config: not allowed in ask_user's entry (builtin, input_ttl, answerers)"}},
		{"client without description", agentHead + "    tools:\n      - client: pick\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].description: required: it tells the model what the client does"}},
		{"client bad name", agentHead + "    tools:\n      - client: pick region\n        description: d\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].client: "pick region" is not a tool name: want 1 to 64 of a-z, A-Z, 0-9, _ and -`}},
		{"client bad result_schema", agentHead + "    tools:\n      - client: pick\n        description: d\n        result_schema: {type: 7}\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].result_schema: not a valid JSON Schema: type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; type: got number, want array"}},
		{"client input_ttl", agentHead + "    tools:\n      - client: pick\n        description: d\n        input_ttl: soon\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].input_ttl: "soon" is not a Go duration`}},
		{"client with approval", agentHead + "    tools:\n      - client: pick\n        description: d\n        requires_approval: false\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].requires_approval: an input tool never needs approval: its calls pause for the user's answer"}},
		{"result_schema on a lambda", agentHead + "    tools:\n" + lambdaEntry + "        result_schema: {type: string}\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].result_schema: only for an input tool (builtin: ask_user, or client: NAME; input_ttl also for an a2a agent or an mcp server, whose questions wait that long)"}},
		{"default_requires_approval", agentHead + "    default_requires_approval: sometimes\n",
			[]string{`agents/a.yaml: spec.agent.default_requires_approval: must be true or false, got "sometimes"`}},
		{"tools not a list", agentHead + "    tools: {builtin: clock}\n", []string{"agents/a.yaml: spec.agent.tools: must be a list, got a mapping"}},
		{"unknown group", agentHead + "    tools:\n      - builtin: clock\n      - builtin: web\n",
			[]string{`agents/a.yaml: spec.agent.tools[1].builtin: unknown group "web" (known: artifacts, ask_user, clock, files)`}},
		{"entry neither", agentHead + "    tools:\n      - approval_ttl: 1h\n",
			[]string{"agents/a.yaml: spec.agent.tools[0]: needs builtin (a group: artifacts, ask_user, clock, files), lambda (a function ARN) or mcp (a server's URL)"}},
		{"entry both", agentHead + "    tools:\n      - builtin: clock\n        lambda: f\n",
			[]string{"agents/a.yaml: spec.agent.tools[0]: builtin and lambda are exclusive; one entry is a group or a function"}},
		{"unknown entry field", agentHead + "    tools:\n      - builtin: clock\n        approval: true\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].approval: unknown field (known: builtin, config, lambda, name, description, input_schema, requires_approval, idempotent, approval_ttl, timeout, mcp, headers, allow, optional, agent, a2a, artifacts_from, client, result_schema, input_ttl, approvers, quorum, separate_from_requester, answerers)"}},
		{"approval_ttl", agentHead + "    tools:\n      - builtin: clock\n" + filesEntry + "        approval_ttl: 1x\n",
			[]string{`agents/a.yaml: spec.agent.tools[1].approval_ttl: "1x" is not a Go duration`}},
		{"approval_ttl negative", agentHead + "    tools:\n      - builtin: clock\n        approval_ttl: -1h\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].approval_ttl: must be positive, got -1h`}},
		{"timeout", agentHead + "    tools:\n      - builtin: clock\n        timeout: soon\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].timeout: "soon" is not a Go duration`}},
		{"requires_approval unknown tool", agentHead + "    tools:\n" + filesEntry + "        requires_approval: [write_file, rm]\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[1]: unknown tool "rm": the group has list_files, read_file, write_file, append_file, delete_file`}},
		{"requires_approval twice", agentHead + "    tools:\n" + filesEntry + "        requires_approval: [write_file, write_file]\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[1]: "write_file" is listed twice`}},
		{"requires_approval text", agentHead + "    tools:\n" + filesEntry + "        requires_approval: write_file\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval: must be true or false, got "write_file"`}},
		{"requires_approval mapping", agentHead + "    tools:\n" + filesEntry + "        requires_approval: {write_file: true}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval: must be true, false or a list of the group's tools (names or rules {tool, when}), got a mapping`}},
		{"files without root", agentHead + "    tools:\n      - builtin: files\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].config.root: required: the directory the files tools work in (or s3: s3://bucket/prefix)"}},
		{"files config unknown", agentHead + "    tools:\n      - builtin: files\n        config: {root: ./s, mode: ro}\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].config.mode: unknown field (known: root, s3)"}},
		{"clock config", agentHead + "    tools:\n      - builtin: clock\n        config: {zone: UTC}\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].config: the clock group takes no config"}},
		{"builtin with name", agentHead + "    tools:\n      - builtin: clock\n        name: now\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].name: not allowed in a builtin entry (only in a lambda entry)"}},
		{"duplicate group", agentHead + "    tools:\n      - builtin: clock\n      - builtin: clock\n",
			[]string{`agents/a.yaml: spec.agent.tools[1].builtin: tool "get_time" is already defined by spec.agent.tools[0]`}},
		{"lambda shadows builtin", agentHead + "    tools:\n      - builtin: clock\n" + strings.Replace(lambdaEntry, "get_report", "get_time", 1),
			[]string{`agents/a.yaml: spec.agent.tools[1].name: tool "get_time" is already defined by spec.agent.tools[0]`}},
		{"duplicate lambda", agentHead + "    tools:\n" + lambdaEntry + lambdaEntry,
			[]string{`agents/a.yaml: spec.agent.tools[1].name: tool "get_report" is already defined by spec.agent.tools[0]`}},
		{"lambda without name", agentHead + "    tools:\n      - lambda: report\n        description: d\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].name: required: the tool's name for the model"}},
		{"lambda bad name", agentHead + "    tools:\n" + strings.Replace(lambdaEntry, "get_report", "get report", 1),
			[]string{`agents/a.yaml: spec.agent.tools[0].name: "get report" is not a tool name: want 1 to 64 of a-z, A-Z, 0-9, _ and -`}},
		{"lambda without description", agentHead + "    tools:\n      - name: x\n        lambda: report\n",
			[]string{"agents/a.yaml: spec.agent.tools[0].description: required: it tells the model what the tool does"}},
		{"lambda bad function", agentHead + "    tools:\n" + strings.Replace(lambdaEntry, "arn:aws:lambda:us-east-1:123456789012:function:report", "not a function!", 1),
			[]string{`agents/a.yaml: spec.agent.tools[0].lambda: "not a function!" is not a Lambda function name or ARN`}},
		{"lambda schema not JSON Schema", agentHead + "    tools:\n" + lambdaEntry + "        input_schema: {type: object, properties: {id: {type: strin}}}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].input_schema: not a valid JSON Schema: properties.id.type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; properties.id.type: got string, want array`}},
		{"lambda schema required", agentHead + "    tools:\n" + lambdaEntry + "        input_schema: {type: object, required: id}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].input_schema: not a valid JSON Schema: required: got string, want array`}},
		{"lambda schema not object", agentHead + "    tools:\n" + lambdaEntry + "        input_schema: {type: string}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].input_schema: must have type: object`}},
		{"lambda requires_approval list", agentHead + "    tools:\n" + lambdaEntry + "        requires_approval: [other]\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].requires_approval[0]: unknown tool "other": the group has get_report`}},
		{"lambda idempotent", agentHead + "    tools:\n" + lambdaEntry + "        idempotent: maybe\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].idempotent: must be true or false, got "maybe"`}},
		{"lambda with config", agentHead + "    tools:\n" + lambdaEntry + "        config: {root: x}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].config: not allowed in a lambda entry (only in a builtin entry)`}},
		{"artifacts with config", agentHead + "    tools:\n      - builtin: artifacts\n        config: {root: x}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].config: the artifacts group takes no config (save_artifact's from_path reads the files group's files)`}},
		{"artifacts_from on a builtin", agentHead + "    tools:\n      - builtin: clock\n        artifacts_from: s3://b/p/\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: only in a lambda entry`}},
		{"artifacts_from not s3", agentHead + "    tools:\n" + lambdaEntry + "        artifacts_from: https://b/p/\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: "https://b/p/" is not an S3 prefix like s3://bucket/prefix/`}},
		{"artifacts_from without S3", agentHead + "    tools:\n" + lambdaEntry + "        artifacts_from: s3://b/p/\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].artifacts_from: needs an S3 client, and none is configured here`}},
		{"files s3 not a URL", agentHead + "    tools:\n      - builtin: files\n        config: {root: x, s3: https://b/p}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].config.s3: "https://b/p" is not an s3:// URL (s3://bucket/prefix)`}},
		{"files s3 bad bucket", agentHead + "    tools:\n      - builtin: files\n        config: {s3: s3://Bad_Bucket/p}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].config.s3: "s3://Bad_Bucket/p": "Bad_Bucket" is not an S3 bucket name (3–63 lower-case letters, digits, dots and hyphens)`}},
		{"files s3 empty env", agentHead + "    tools:\n      - builtin: files\n        config: {root: x, s3: \"env:\"}\n",
			[]string{`agents/a.yaml: spec.agent.tools[0].config.s3: env: needs a variable name, e.g. env:HITCH_FILES_S3`}},
		{"several problems", head + "spec:\n  agent:\n    model: m\n    max_tokens: -1\n    tools:\n      - builtin: web\n", []string{
			"agents/a.yaml: spec.agent.max_tokens: must be between 1 and 200000, got -1",
			`agents/a.yaml: spec.agent.tools[0].builtin: unknown group "web" (known: artifacts, ask_user, clock, files)`}},
	}
	fake := fakelambda.New(t)
	env := catalog.Env{Files: true, BaseDir: t.TempDir(), Lambda: fake.Client(t)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadOne(t, tt.def, env)
			if err == nil {
				t.Fatalf("Load() error = nil, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
			var ce *catalog.Error
			if !errors.As(err, &ce) || ce.File != "agents/a.yaml" {
				t.Errorf("Load() error %#v is not a *catalog.Error of agents/a.yaml", err)
			}
		})
	}
}

func TestLoadLambdaWithoutClient(t *testing.T) {
	def := minimal + "    tools:\n      - name: get_report\n        lambda: report\n        description: d\n"
	_, err := loadOne(t, def, catalog.Env{})
	want := "agents/a.yaml: spec.agent.tools[0].lambda: lambda tools need a Lambda client, and none is configured here"
	if err == nil || err.Error() != want {
		t.Errorf("Load() error = %v, want %q", err, want)
	}
}

func TestLoadLambdaTool(t *testing.T) {
	fake := fakelambda.New(t)
	fake.Handle("report", func(payload []byte) fakelambda.Result {
		var p struct {
			Input struct{ ID string } `json:"input"`
		}
		json.Unmarshal(payload, &p)
		return fakelambda.JSON(map[string]string{"id": p.Input.ID, "status": "deleted"})
	})
	def := minimal + `    tools:
      - name: delete_report
        lambda: arn:aws:lambda:us-east-1:123456789012:function:report
        description: Deletes a report
        input_schema: {type: object, properties: {id: {type: string}}, required: [id]}
        requires_approval: true
        idempotent: true
        approval_ttl: 30m
      - name: ping
        lambda: report:live
        description: Pings
`
	a, err := loadOne(t, def, catalog.Env{Lambda: fake.Client(t)})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := []toolView{
		{"delete_report", policy(true, 30*time.Minute, true)},
		{"ping", policy(false, 0, false)},
	}
	if diff := cmp.Diff(want, view(a).Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	specs := a.ToolSpecs()
	if got, want := string(specs[0].InputSchema), `{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`; got != want {
		t.Errorf("delete_report schema = %s, want %s", got, want)
	}
	if got, want := string(specs[1].InputSchema), `{"type":"object","properties":{}}`; got != want {
		t.Errorf("ping schema = %s, want %s", got, want)
	}
	bt, _ := a.Tool("delete_report")
	if err := bt.Tool.(agent.InputValidator).ValidateInput(json.RawMessage(`{}`)); err == nil || err.Error() != "invalid_input: input.id: required" {
		t.Errorf("ValidateInput({}) = %v", err)
	}
	out, err := runTool(t, a, "delete_report", `{"id":"r1"}`)
	if err != nil {
		t.Fatalf("delete_report: %v", err)
	}
	wantOut := []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`{"id":"r1","status":"deleted"}`)}}
	if diff := cmp.Diff(wantOut, out.Content); diff != "" {
		t.Errorf("delete_report (-want +got):\n%s", diff)
	}
}

func TestLoadSeveralFiles(t *testing.T) {
	def := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(strings.Replace(minimal, "name: a", "name: "+name, 1))}
	}
	fsys := fstest.MapFS{
		"defs/zeta.yaml":  def("zeta"),
		"defs/alpha.yaml": def("alpha"),
		"defs/mid.yaml":   def("mid"),
		"defs/notes.txt":  {Data: []byte("not a definition")},
		"other/x.yaml":    def("x"),
	}
	c, err := catalog.Load(fsys, "defs", catalog.Env{})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	var names []string
	for _, a := range c.List() {
		names = append(names, a.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, names); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
	if _, ok := c.Get("x"); ok {
		t.Error(`Get("x") found an agent of another directory`)
	}

	fsys["defs/copy.yaml"] = def("mid")
	_, err = catalog.Load(fsys, "defs", catalog.Env{})
	want := `defs/mid.yaml: name: agent "mid" is already defined in defs/copy.yaml`
	if err == nil || err.Error() != want {
		t.Errorf("Load() with a duplicate: error = %v, want %q", err, want)
	}

	if _, err := catalog.Load(fsys, "empty", catalog.Env{}); err == nil || err.Error() != "catalog: no agent definitions (*.yaml) in empty" {
		t.Errorf("Load() of no definitions: error = %v", err)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	def := minimal + "    tools:\n      - builtin: files\n        config: {root: ./work/files}\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.LoadDir(dir, catalog.Env{Files: true})
	if err != nil {
		t.Fatalf("LoadDir() error = %v", err)
	}
	a, _ := c.Get("a")
	if _, err := runTool(t, a, "write_file", `{"path":"n.txt","content":"x"}`); err != nil {
		t.Fatalf("write_file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "files", "n.txt")); err != nil {
		t.Errorf("the file is not under the agent file's directory: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("kind: Agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = catalog.LoadDir(dir, catalog.Env{})
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "b.yaml")+": apiVersion: required") {
		t.Errorf("LoadDir() error = %v, want it to name %s", err, filepath.Join(dir, "b.yaml"))
	}
}

// Files go to S3 when config.s3 names a location and the environment reaches
// S3; else to the directory (hitch serve), else nowhere (Lambda without S3).
func TestFilesOnS3(t *testing.T) {
	const agentHead = "apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 0.1\nspec:\n  agent:\n    model: m\n"
	def := agentHead + "    tools:\n      - builtin: files\n        config: {root: ./sandbox, s3: env:HITCH_TEST_FILES_S3}\n"
	var gotBucket, gotPrefix string
	s3dir := t.TempDir() // stands in for the bucket: a store the factory returns
	env := catalog.Env{Files: true, BaseDir: t.TempDir(), S3Files: func(bucket, prefix string) tools.FileStore {
		gotBucket, gotPrefix = bucket, prefix
		return tools.Dir(s3dir)
	}}
	write := func(a *agent.Agent) string {
		t.Helper()
		bt, _ := a.Tool("write_file")
		out, err := bt.Tool.Run(context.Background(), agent.ToolCall{ID: "c", Input: json.RawMessage(`{"path":"f.txt","content":"x"}`)})
		if err != nil {
			return err.Error()
		}
		return out.Content[0].Text
	}
	// Unset: the directory.
	a, err := loadOne(t, def, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := write(a); got != "wrote 1 byte to f.txt" || gotBucket != "" {
		t.Fatalf("without HITCH_TEST_FILES_S3: %q, factory called with %q", got, gotBucket)
	}
	if _, err := os.Stat(filepath.Join(s3dir, "f.txt")); err == nil {
		t.Error("the file went to S3 though s3 was not configured")
	}
	// Set: S3.
	t.Setenv("HITCH_TEST_FILES_S3", "s3://files-bucket/agents/assistant")
	if a, err = loadOne(t, def, env); err != nil {
		t.Fatal(err)
	}
	if got := write(a); got != "wrote 1 byte to f.txt" || gotBucket != "files-bucket" || gotPrefix != "agents/assistant" {
		t.Fatalf("with HITCH_TEST_FILES_S3: %q, factory called with %q %q", got, gotBucket, gotPrefix)
	}
	if _, err := os.Stat(filepath.Join(s3dir, "f.txt")); err != nil {
		t.Errorf("the file did not go to S3: %v", err)
	}
	// Lambda without S3: unavailable.
	if a, err = loadOne(t, def, catalog.Env{Files: false, BaseDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if got := write(a); got != tools.ErrFilesUnavailable.Error() {
		t.Errorf("on Lambda without S3: %q", got)
	}
}

// TestInputTools: ask_user and client tools (docs/api.md, "Pauses for
// input") never need approval, default_requires_approval included.
func TestInputTools(t *testing.T) {
	def := minimal + `    default_requires_approval: true
    tools:
      - builtin: ask_user
      - client: pick_region
        description: Let the user pick a region
        input_schema: {type: object, properties: {hint: {type: string}}}
        result_schema: {type: object, properties: {region: {type: string}}, required: [region]}
        input_ttl: 2h
`
	a, err := loadOne(t, def, catalog.Env{})
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := []toolView{
		{"ask_user", agent.ToolPolicy{InputTTL: agent.DefaultInputTTL}},
		{"pick_region", agent.ToolPolicy{InputTTL: 2 * time.Hour}},
	}
	if diff := cmp.Diff(want, view(a).Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	pick, _ := a.Tool("pick_region")
	it, ok := pick.Tool.(agent.InputTool)
	if !ok || it.InputKind() != agent.InputClient {
		t.Fatalf("pick_region is not a client tool: %T", pick.Tool)
	}
	if err := it.CheckResult(nil, json.RawMessage(`{"region":"eu-west-1"}`)); err != nil {
		t.Errorf("a valid result: %v", err)
	}
	if err := it.CheckResult(nil, json.RawMessage(`{"zone":"a"}`)); err == nil || !strings.Contains(err.Error(), "result.region: required") {
		t.Errorf("an invalid result: %v", err)
	}
}
