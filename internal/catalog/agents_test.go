package catalog_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
)

// def is an agent definition with the given tool entries.
func def(name, description, tools string) string {
	return fmt.Sprintf("apiVersion: tealagents/v1alpha1\nkind: Agent\nname: %s\nversion: 1\ndescription: %s\nspec:\n  agent:\n    model: m\n    tools:\n%s", name, description, tools)
}

func agentEntry(sub string) string { return "      - agent: " + sub + "\n" }

func loadAll(files map[string]string) (*catalog.Catalog, error) {
	fsys := fstest.MapFS{}
	for name, d := range files {
		fsys["agents/"+name] = &fstest.MapFile{Data: []byte(d)}
	}
	return catalog.Load(fsys, "agents", catalog.Env{})
}

// TestAgentTools: `- agent: NAME` makes the agent a tool of its caller,
// named after it, described by its own description unless the entry gives
// one, taking {message, new_task?}; requires_approval approves the
// delegation itself.
func TestAgentTools(t *testing.T) {
	c, err := loadAll(map[string]string{
		"desk.yaml":  def("desk", "Runs errands", agentEntry("files")+"      - agent: clerk\n        description: Files things away\n        requires_approval: true\n"),
		"files.yaml": def("files", "Keeps files", "      - builtin: clock\n"),
		"clerk.yaml": def("clerk", "Clerks", "      - builtin: clock\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	desk, _ := c.Get("desk")
	got := map[string]string{}
	for _, bt := range desk.Tools {
		s := bt.Tool.Spec()
		got[s.Name] = fmt.Sprintf("%s|%v|%s", s.Description, bt.Policy.RequiresApproval, s.InputSchema)
		at, ok := bt.Tool.(*agent.AgentTool)
		if !ok || at.Agent != s.Name {
			t.Errorf("%s is not an agent tool: %T", s.Name, bt.Tool)
		}
		v, _ := bt.Tool.(agent.InputValidator)
		if err := v.ValidateInput([]byte(`{"message":"hi","new_task":true}`)); err != nil {
			t.Errorf("a good input: %v", err)
		}
		for _, bad := range []string{`{}`, `{"message":""}`, `{"message":"x","extra":1}`, `{"message":5}`, `{"message":"x","new_task":"yes"}`} {
			if v.ValidateInput([]byte(bad)) == nil {
				t.Errorf("%s accepted %s", s.Name, bad)
			}
		}
	}
	schema := `{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent: the whole task, in words it understands without this conversation."},"new_task":{"type":"boolean","description":"true starts a new task with the agent instead of continuing the one this task already has with it."}},"required":["message"],"additionalProperties":false}`
	want := map[string]string{"files": "Keeps files|false|" + schema, "clerk": "Files things away|true|" + schema}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("desk's tools (-want +got):\n%s", diff)
	}
}

// TestRemoteAgentTool: `- agent: NAME` with `a2a: URL` is a remote A2A
// agent as the tool NAME (no agent of that name is needed here), its
// description the entry's or a default, its headers resolved at load.
func TestRemoteAgentTool(t *testing.T) {
	t.Setenv("HITCH_TEST_A2A_TOKEN", "Bearer t")
	t.Setenv("HITCH_TEST_REMOTE", "127.0.0.1:9191")
	c, err := loadAll(map[string]string{
		"desk.yaml": def("desk", "Runs errands", "      - agent: billing\n        a2a: https://billing.example.com/prod/a2a/billing\n        headers: {Authorization: env:HITCH_TEST_A2A_TOKEN}\n        requires_approval: true\n"+
			"      - agent: ledger\n        a2a: http://127.0.0.1:9/a2a/ledger\n        description: Keeps the books\n"+
			"      - agent: assistant\n        a2a: http://${HITCH_TEST_REMOTE:-127.0.0.1:8080}/a2a/assistant\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	desk, _ := c.Get("desk")
	got := map[string]string{}
	for _, bt := range desk.Tools {
		at, ok := bt.Tool.(*agent.AgentTool)
		if !ok || at.Remote == nil {
			t.Fatalf("%s is not a remote agent tool: %T", bt.Tool.Spec().Name, bt.Tool)
		}
		got[at.Agent] = fmt.Sprintf("%s|%s|%v", at.Remote.URL(), bt.Tool.Spec().Description, bt.Policy.RequiresApproval)
	}
	want := map[string]string{
		"billing":   "https://billing.example.com/prod/a2a/billing|The remote agent billing (A2A).|true",
		"ledger":    "http://127.0.0.1:9/a2a/ledger|Keeps the books|false",
		"assistant": "http://127.0.0.1:9191/a2a/assistant|The remote agent assistant (A2A).|false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remote tools (-want +got):\n%s", diff)
	}
}

// TestAgentToolErrors: an unknown agent, a name clash, a cycle, a chain
// deeper than 5, a bad remote a2a entry: start-up errors naming the file
// and the field.
func TestAgentToolErrors(t *testing.T) {
	chain := func(n int) map[string]string {
		files := map[string]string{}
		for i := range n {
			tools := agentEntry(fmt.Sprintf("a%d", i+1))
			if i == n-1 {
				tools = "      - builtin: clock\n"
			}
			files[fmt.Sprintf("a%d.yaml", i)] = def(fmt.Sprintf("a%d", i), "x", tools)
		}
		return files
	}
	deep := chain(7) // a0 → a1 → … → a6: 6 levels below a0
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"unknown agent", map[string]string{"a.yaml": def("a", "x", "      - builtin: clock\n"+agentEntry("nobody"))},
			[]string{`agents/a.yaml: spec.agent.tools[1].agent: no agent is named "nobody" in this deployment`}},
		{"itself", map[string]string{"a.yaml": def("a", "x", agentEntry("a"))},
			[]string{`agents/a.yaml: spec.agent.tools[0].agent: agents call each other in a cycle: a → a`}},
		{"cycle", map[string]string{"a.yaml": def("a", "x", agentEntry("b")), "b.yaml": def("b", "x", agentEntry("c")), "c.yaml": def("c", "x", agentEntry("a"))},
			[]string{`agents/c.yaml: spec.agent.tools[0].agent: agents call each other in a cycle: a → b → c → a`}},
		{"too deep", deep,
			[]string{`agents/a0.yaml: spec.agent.tools[0].agent: calling a1 nests agents 6 deep; at most 5 levels of agents may be called below an agent`}},
		{"name clash", map[string]string{"a.yaml": def("a", "x", agentEntry("get_time")+"      - builtin: clock\n"), "get_time.yaml": def("get_time", "x", "      - builtin: files\n        config: {root: ./s}\n")},
			[]string{`agents/a.yaml: spec.agent.tools[1].builtin: tool "get_time" is already defined by spec.agent.tools[0]`}},
		{"a2a not a URL", map[string]string{"a.yaml": def("a", "x", "      - agent: billing\n        a2a: billing.example.com\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].a2a: "billing.example.com" is not an http(s) URL of an A2A agent (its JSON-RPC endpoint, e.g. https://host/a2a/billing)`}},
		{"a2a without a name", map[string]string{"a.yaml": def("a", "x", "      - a2a: https://billing.example.com/a2a/billing\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].agent: required with a2a: the tool's name (the remote agent as this agent calls it)`}},
		{"a2a secret in a header", map[string]string{"a.yaml": def("a", "x", "      - agent: billing\n        a2a: https://billing.example.com/a2a/billing\n        headers: {Authorization: Bearer abc}\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].headers.Authorization: "Bearer abc" is not a secret reference: want env:NAME or ssm:/path (a header's value is a reference, never the secret itself)`}},
		{"a2a unset secret", map[string]string{"a.yaml": def("a", "x", "      - agent: billing\n        a2a: https://billing.example.com/a2a/billing\n        headers: {Authorization: env:HITCH_TEST_UNSET_VARIABLE}\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].headers.Authorization: env:HITCH_TEST_UNSET_VARIABLE: environment variable HITCH_TEST_UNSET_VARIABLE is not set`}},
		{"headers on a local agent", map[string]string{"a.yaml": def("a", "x", "      - agent: b\n        headers: {X: env:HOME}\n"), "b.yaml": def("b", "x", "      - builtin: clock\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].headers: only for a remote agent (a2a: URL)`}},
		{"bad name", map[string]string{"a.yaml": def("a", "x", "      - agent: Not An Agent\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].agent: "Not An Agent" is not an agent name`}},
		{"foreign field", map[string]string{"a.yaml": def("a", "x", "      - agent: b\n        lambda: f\n"), "b.yaml": def("b", "x", "      - builtin: clock\n")},
			[]string{`agents/a.yaml: spec.agent.tools[0].lambda: not allowed in an agent entry (agent, a2a, headers, description, requires_approval, approval_ttl, approvers, quorum, separate_from_requester)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadAll(tt.files)
			if err == nil {
				t.Fatal("loaded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	// Five levels are fine.
	if _, err := loadAll(chain(6)); err != nil {
		t.Errorf("a chain 5 deep: %v", err)
	}
}
