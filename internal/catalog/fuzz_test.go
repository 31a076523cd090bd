package catalog_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hitch-agents/hitch/internal/catalog"
)

// FuzzAgentYAML: any file is either an agent or errors that name the file;
// never a panic. A loaded agent has a name usable in a URL, and tools with
// names Bedrock accepts, each once.
func FuzzAgentYAML(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, s := range []string{
		"apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 1\nspec:\n  agent:\n    model: m\n",
		"apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 1\nspec:\n  agent:\n    model: m\n    tools:\n      - builtin: clock\n      - builtin: clock\n",
		"apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 1\nspec:\n  agent:\n    model: m\n    tools:\n      - name: t\n        lambda: fn\n        input_schema: {type: object}\n",
		"apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 1\nspec:\n  agent:\n    model: m\n    reasoning: {budget_tokens: 1024}\n    temperature: 0.2\n    max_iterations: 1e3\n",
		"apiVersion: tealagents/v1alpha1\nkind: Agent\nname: A/B\nspec: {agent: {model: ''}}\n",
		"a: &a [*a, *a]\n",
		"x: &x\n  - *x\n",
		"---\n---\n",
		"---\n",
		"# only a comment\n",
		"[1, 2",
		"name: [unterminated",
		"",
		"\t",
		"!!binary AAAA",
		"? complex key\n: value\n",
	} {
		f.Add([]byte(s))
	}
	toolName := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	agentName := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := catalog.Load(fstest.MapFS{"agents/a.yaml": {Data: data}}, "agents", catalog.Env{})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "agents/a.yaml: ") {
					t.Fatalf("an error that does not name the file: %q", line)
				}
			}
			return
		}
		list := c.List()
		if len(list) != 1 || !agentName.MatchString(list[0].Name) {
			t.Fatalf("loaded %d agents, the first named %q", len(list), list[0].Name)
		}
		seen := map[string]bool{}
		for _, bt := range list[0].Tools {
			name := bt.Tool.Spec().Name
			if !toolName.MatchString(name) || seen[name] {
				t.Fatalf("tool %q: invalid or given twice (%s)", name, data)
			}
			seen[name] = true
		}
	})
}
