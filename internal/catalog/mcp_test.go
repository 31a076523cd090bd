package catalog_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/mcp/mcpexample"
)

// exampleServer serves the example MCP server (search_notes read-only,
// close_ticket destructive).
func exampleServer(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(mcpexample.New().Handler())
	tb.Cleanup(srv.Close)
	return srv.URL
}

// downURL is the URL of a server that is not there.
func downURL(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	return url
}

func mcpDef(entry string) string {
	return `apiVersion: tealagents/v1alpha1
kind: Agent
name: a
version: "1"
spec:
  agent:
    model: m
    tools:
      - builtin: clock
` + entry
}

func TestLoadMCP(t *testing.T) {
	url := exampleServer(t)
	t.Setenv("HITCH_TEST_MCP_TOKEN", "tok")
	mcpPolicy := func(approval, idem bool) agent.ToolPolicy {
		p := agent.ToolPolicy{RequiresApproval: approval, Idempotent: idem, Timeout: catalog.DefaultMCPTimeout}
		if approval {
			p.ApprovalTTL = catalog.DefaultApprovalTTL
		}
		return p
	}
	for _, tc := range []struct {
		name, entry string
		want        []toolView
	}{
		{"annotations decide", "      - mcp: " + url + "\n        name: tk\n        headers: {Authorization: env:HITCH_TEST_MCP_TOKEN}\n", []toolView{
			{"tk_close_ticket", mcpPolicy(true, false)},
			{"tk_reopen_ticket", mcpPolicy(false, true)},
			{"tk_search_notes", mcpPolicy(false, true)},
		}},
		{"the entry decides", "      - mcp: " + url + "\n        name: tk\n        requires_approval: [search_notes]\n        idempotent: [close_ticket]\n        timeout: 5s\n", []toolView{
			{"tk_close_ticket", func() agent.ToolPolicy { p := mcpPolicy(false, true); p.Timeout = 5 * time.Second; return p }()},
			{"tk_reopen_ticket", func() agent.ToolPolicy { p := mcpPolicy(false, false); p.Timeout = 5 * time.Second; return p }()},
			{"tk_search_notes", func() agent.ToolPolicy { p := mcpPolicy(true, false); p.Timeout = 5 * time.Second; return p }()},
		}},
		{"input_ttl", "      - mcp: " + url + "\n        name: tk\n        allow: [search_notes]\n        input_ttl: 30m\n", []toolView{
			{"tk_search_notes", func() agent.ToolPolicy { p := mcpPolicy(false, true); p.InputTTL = 30 * time.Minute; return p }()},
		}},
		{"allow", "      - mcp: " + url + "\n        name: tk\n        allow: [search_notes]\n        requires_approval: false\n", []toolView{
			{"tk_search_notes", mcpPolicy(false, true)},
		}},
		{"down but optional", "      - mcp: " + downURL(t) + "\n        name: tk\n        optional: true\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			env := catalog.Env{MCP: catalog.MCPEnv{Log: slog.New(slog.NewTextHandler(&logged, nil))}}
			a, err := loadOne(t, mcpDef(tc.entry), env)
			if err != nil {
				t.Fatal(err)
			}
			var got []toolView
			for _, b := range a.Tools {
				if name := b.Tool.Spec().Name; strings.HasPrefix(name, "tk_") {
					got = append(got, toolView{name, b.Policy})
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b toolView) bool { return a.Name < b.Name })); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if tc.want == nil && !strings.Contains(logged.String(), "optional") {
				t.Errorf("an optional server down is not logged: %q", logged.String())
			}
		})
	}
}

func TestLoadMCPRules(t *testing.T) {
	url := exampleServer(t)
	a, err := loadOne(t, mcpDef("      - mcp: "+url+"\n        name: tk\n        requires_approval: [{tool: close_ticket, when: {id: \"T-1*\"}}]\n"), catalog.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range a.Tools {
		if b.Tool.Spec().Name != "tk_close_ticket" {
			continue
		}
		if !b.Policy.RequiresApproval || len(b.Policy.Rules) != 1 || b.Policy.Rules[0].Tool != "tk_close_ticket" {
			t.Errorf("close_ticket policy %+v, want one rule", b.Policy)
		}
		return
	}
	t.Error("no tk_close_ticket")
}

func TestLoadMCPErrors(t *testing.T) {
	url := exampleServer(t)
	down := downURL(t)
	const at = "agents/a.yaml: spec.agent.tools[1]."
	for _, tc := range []struct {
		name, entry string
		want        []string
	}{
		{"down", "      - mcp: " + down + "\n        name: tk\n", []string{at + "mcp: MCP server tk at " + down + " is not reachable", "optional: true"}},
		{"bad url", "      - mcp: ftp://x\n        name: tk\n", []string{at + `mcp: "ftp://x" is not an http(s) URL`}},
		{"no name", "      - mcp: " + url + "\n", []string{at + "name: required"}},
		{"bad name", "      - mcp: " + url + "\n        name: t.k\n", []string{at + `name: "t.k" is not a tool name prefix`}},
		{"header not a ref", "      - mcp: " + url + "\n        name: tk\n        headers: {Authorization: Bearer abc}\n", []string{at + "headers.Authorization: ", "never the secret itself"}},
		{"header env unset", "      - mcp: " + url + "\n        name: tk\n        headers: {Authorization: env:HITCH_TEST_UNSET_XYZ}\n", []string{at + "headers.Authorization: env:HITCH_TEST_UNSET_XYZ: environment variable HITCH_TEST_UNSET_XYZ is not set"}},
		{"header ssm without client", "      - mcp: " + url + "\n        name: tk\n        headers: {Authorization: ssm:/x}\n", []string{at + "headers.Authorization: ssm:/x: no SSM client"}},
		{"unknown allow", "      - mcp: " + url + "\n        name: tk\n        allow: [search_notes, nope]\n", []string{at + `allow[1]: server tk at ` + url + ` has no tool "nope" (its tools: close_ticket, reopen_ticket, search_notes)`}},
		{"unknown requires_approval", "      - mcp: " + url + "\n        name: tk\n        requires_approval: [nope]\n", []string{at + `requires_approval[0]: unknown tool "nope"`}},
		{"unknown idempotent", "      - mcp: " + url + "\n        name: tk\n        idempotent: [nope]\n", []string{at + `idempotent[0]: unknown tool "nope"`}},
		{"outside allow", "      - mcp: " + url + "\n        name: tk\n        allow: [search_notes]\n        idempotent: [close_ticket]\n", []string{at + `idempotent[0]: unknown tool "close_ticket"`}},
		{"rule on unknown field", "      - mcp: " + url + "\n        name: tk\n        requires_approval: [{tool: close_ticket, when: {path: x}}]\n", []string{at + `requires_approval[0].when.path: tool "tk_close_ticket" has no input field "path"`}},
		{"mcp with lambda", "      - mcp: " + url + "\n        name: tk\n        lambda: fn\n", []string{at + "lambda: not allowed in an mcp entry"}},
		{"allow outside mcp", "      - builtin: files\n        config: {root: .}\n        allow: [read_file]\n", []string{at + "allow: not allowed here (only in an mcp entry)"}},
		{"bad optional", "      - mcp: " + url + "\n        name: tk\n        optional: perhaps\n", []string{at + "optional: "}},
		{"name clash", "      - mcp: " + url + "\n        name: tk\n      - mcp: " + url + "\n        name: tk\n", []string{`agents/a.yaml: spec.agent.tools[2].name: tool "tk_close_ticket" is already defined by spec.agent.tools[1]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, mcpDef(tc.entry), catalog.Env{})
			if err == nil {
				t.Fatal("loaded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// An agent whose MCP server is down at start-up is left out, said so in the
// log; the other agents load. An invalid definition still stops everything.
func TestMCPServerDownLeavesOneAgentOut(t *testing.T) {
	down := downURL(t)
	fine := strings.Replace(mcpDef(""), "name: a\n", "name: fine\n", 1)
	broken := strings.Replace(mcpDef("      - mcp: "+down+"\n        name: tk\n"), "name: a\n", "name: tickets\n", 1)
	var logged bytes.Buffer
	env := catalog.Env{MCP: catalog.MCPEnv{Log: slog.New(slog.NewTextHandler(&logged, nil))}}
	cat, err := catalog.Load(fstest.MapFS{"fine.yaml": {Data: []byte(fine)}, "tickets.yaml": {Data: []byte(broken)}}, ".", env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, ok := cat.Get("fine"); !ok {
		t.Error("the agent without MCP did not load")
	}
	if _, ok := cat.Get("tickets"); ok {
		t.Error("the agent whose MCP server is down loaded")
	}
	if !strings.Contains(logged.String(), "tickets.yaml") || !strings.Contains(logged.String(), down) {
		t.Errorf("the log does not name the file and server: %q", logged.String())
	}
	invalid := strings.Replace(mcpDef("      - mcp: not a url\n        name: tk\n"), "name: a\n", "name: bad\n", 1)
	_, err = catalog.Load(fstest.MapFS{"fine.yaml": {Data: []byte(fine)}, "bad.yaml": {Data: []byte(invalid)}}, ".", env)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml: spec.agent.tools[1].mcp") {
		t.Errorf("an invalid definition: %v, want a start-up error", err)
	}
}
