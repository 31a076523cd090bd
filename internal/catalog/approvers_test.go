package catalog_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
)

// TestApprovers reads the policies of docs/guide/configuration.md's
// example: an entry's, rules' own, a rule without when, answerers.
func TestApprovers(t *testing.T) {
	def := rulesHead + "    tools:\n" +
		"      - builtin: files\n        config: {root: ./s}\n" +
		"        approvers: [owner, {group: sre}]\n" +
		"        requires_approval:\n" +
		"          - write_file\n" +
		"          - {tool: delete_file, when: {path: \"prod/**\"}, quorum: 2, approvers: [{group: sre}, {user: bob}], separate_from_requester: true}\n" +
		"          - {tool: append_file}\n" +
		"      - builtin: ask_user\n        answerers: [owner, {group: oncall}]\n"
	a, err := loadOne(t, def, catalog.Env{Files: true, BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	entry := &agent.ApproverPolicy{Approvers: []string{"owner", "group:sre"}, Quorum: 1}
	type rule struct {
		Name   string
		Policy *agent.ApproverPolicy
	}
	type got struct {
		Needs     bool
		Policy    *agent.ApproverPolicy
		Rules     []rule
		Answerers []string
	}
	want := map[string]got{
		"list_files":  {Policy: entry},
		"read_file":   {Policy: entry},
		"write_file":  {Needs: true, Policy: entry},
		"append_file": {Needs: true, Policy: entry, Rules: []rule{{Name: "append_file"}}},
		"delete_file": {Needs: true, Policy: entry, Rules: []rule{{Name: "delete_file when path=prod/**",
			Policy: &agent.ApproverPolicy{Approvers: []string{"group:sre", "user:bob"}, Quorum: 2, FourEyes: true}}}},
		"ask_user": {Answerers: []string{"owner", "group:oncall"}},
	}
	have := map[string]got{}
	for _, bt := range a.Tools {
		g := got{Needs: bt.Policy.RequiresApproval, Policy: bt.Policy.Approvers, Answerers: bt.Policy.Answerers}
		for _, r := range bt.Policy.Rules {
			g.Rules = append(g.Rules, rule{Name: r.Name(), Policy: r.Approvers})
		}
		have[bt.Tool.Spec().Name] = g
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
}

func TestApproverErrors(t *testing.T) {
	files := "    tools:\n      - builtin: files\n        config: {root: ./s}\n"
	del := files + "        requires_approval:\n          - {tool: delete_file, when: {path: \"prod/**\"}, "
	for _, tc := range []struct {
		name, def string
		want      string
	}{
		{"quorum over 5", del + "approvers: [{group: sre}], quorum: 6}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].quorum: must be between 1 and 5, got 6`},
		{"quorum over the people named", del + "approvers: [owner], quorum: 2}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].quorum: 2 is more than the 1 people approvers names (a group may name more)`},
		{"owner with four eyes", del + "approvers: [owner, {group: sre}], separate_from_requester: true}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers: owner is the requester, whom separate_from_requester never counts: name the others who decide`},
		{"empty approvers", del + "approvers: []}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers: must be a list of 1 to 10 of owner, {user: ID} and {group: NAME}, got a list`},
		{"repeated entry", del + "approvers: [{group: sre}, {group: sre}]}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers[1]: group:sre is listed twice`},
		{"user and group in one entry", del + "approvers: [{group: sre, user: bob}]}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers[0]: must be one of {user: ID} or {group: NAME}`},
		{"unknown principal key", del + "approvers: [{role: sre}]}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers[0].role: unknown field (known: user, group)`},
		{"quorum without approvers", del + "quorum: 2}\n",
			`agents/a.yaml: spec.agent.tools[0].requires_approval[0].approvers: required with quorum or separate_from_requester: who counts toward the call (owner, {user: ID}, {group: NAME})`},
		{"policy on tools that never need approval", files + "        requires_approval: false\n        approvers: [{group: sre}]\n",
			`agents/a.yaml: spec.agent.tools[0].approvers: no tool of this entry needs approval (requires_approval), so nobody approves its calls`},
		{"answerers on a tool that needs approval", files + "        requires_approval: true\n        answerers: [owner]\n",
			`agents/a.yaml: spec.agent.tools[0].answerers: only for an input tool (builtin: ask_user, or client: NAME); a tool that needs approval names approvers`},
		{"approvers on an input tool", "    tools:\n      - builtin: ask_user\n        approvers: [{group: sre}]\n",
			`agents/a.yaml: spec.agent.tools[0].approvers: an input tool's calls are answered, not approved: answerers names who may answer (any one of them)`},
		{"answerers with a quorum", "    tools:\n      - builtin: ask_user\n        answerers: [{group: sre}]\n        quorum: 2\n",
			`agents/a.yaml: spec.agent.tools[0].quorum: an input tool's calls are answered, not approved: answerers names who may answer (any one of them)`},
		{"rules past five approvals", files + "        requires_approval:\n" +
			"          - {tool: delete_file, when: {path: \"a/**\"}, approvers: [{group: a}], quorum: 3}\n" +
			"          - {tool: delete_file, when: {path: \"*/b\"}, approvers: [{group: b}], quorum: 3}\n",
			`agents/a.yaml: spec.agent.tools: tool "delete_file": a call matching all its rules would need 6 approvals, more than 5`},
		{"over 16 principals", files + "        requires_approval: [delete_file]\n        approvers: [{group: g1}, {group: g2}, {group: g3}, {group: g4}, {group: g5}, {group: g6}, {group: g7}, {group: g8}, {group: g9}]\n" +
			"      - builtin: ask_user\n        answerers: [{user: u1}, {user: u2}, {user: u3}, {user: u4}, {user: u5}, {user: u6}, {user: u7}, {user: u8}]\n",
			`agents/a.yaml: spec.agent.tools: the agent's approvers and answerers name 17 principals, more than 16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, rulesHead+tc.def, catalog.Env{Files: true, BaseDir: t.TempDir()})
			if err == nil {
				t.Fatalf("Load() error = nil, want %q", tc.want)
			}
			if diff := cmp.Diff([]string{tc.want}, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}
