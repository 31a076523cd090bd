package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/tools"
)

// TestInputsHTTP: a question and a client tool pause the request
// (docs/api.md, "Pauses for input"); answers are resumes, refused with a
// 400 that changes nothing when they do not fit; every body and event
// matches docs/openapi.yaml (contract.Check).
func TestInputsHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	e.model.Add(agenttest.CallTools(agent.StopToolUse,
		agenttest.Use("q1", "ask_user", `{"question":"Which size?","choices":["S","M"]}`),
		agenttest.Use("c1", "pick_region", `{"hint":"north"}`)))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"go"}]}`, "Accept", "text/event-stream")
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	if r.status != 200 || !slices.Contains(names, "input_required") || slices.Contains(names, "approval_required") {
		t.Fatalf("the pause: %d %v", r.status, names)
	}
	res := evs[len(evs)-1].data
	ins, _ := res["pending_inputs"].([]any)
	if len(ins) != 2 || ins[0].(map[string]any)["kind"] != "question" || ins[0].(map[string]any)["question"] != "Which size?" ||
		ins[1].(map[string]any)["kind"] != "client" || ins[1].(map[string]any)["schema"] == nil {
		t.Fatalf("pending inputs: %v", res["pending_inputs"])
	}
	url := res["resume_url"].(string)
	task := e.do(t, "GET", "/agents/acc/tasks/"+res["task_id"].(string), "alice", "").json(t)
	if got, _ := task["pending_inputs"].([]any); len(got) != 2 {
		t.Fatalf("GET task's pending inputs: %v", task["pending_inputs"])
	}
	const region = `{"tool_call_id":"c1","action":"answer","result":{"region":"eu-west-1"}}`
	for _, tc := range []struct{ body, code string }{
		{`{"action":"approve"}`, "invalid_action"},
		{`{"decisions":[{"tool_call_id":"q1","action":"approve"},` + region + `]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"q1","action":"answer"},` + region + `]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"q1","action":"reject","result":"S"},` + region + `]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"q1","action":"answer","result":"XL"},` + region + `]}`, "invalid_input"},
		{`{"decisions":[{"tool_call_id":"q1","action":"answer","result":"S"},{"tool_call_id":"c1","action":"answer","result":["x"]}]}`, "invalid_input"},
		{`{"decisions":[{"tool_call_id":"q1","action":"answer","result":"S","colour":1},` + region + `]}`, "unknown_field"},
	} {
		if r := e.do(t, "POST", url, "alice", tc.body); r.status != 400 || r.code() != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
	e.model.Add(agenttest.Say("size S in eu-west-1"))
	good := `{"decisions":[{"tool_call_id":"q1","action":"answer","result":"S"},` + region + `]}`
	r = e.do(t, "POST", url, "alice", good, "Accept", "text/event-stream")
	evs, _ = readSSE(t, strings.NewReader(string(r.body)))
	names = nil
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	want := []string{"request_started", "answered", "answered", "tool_result", "tool_result", "answer", "request_complete"}
	if r.status != 200 || !slices.Equal(names, want) {
		t.Fatalf("the answer's stream: %d %v", r.status, names)
	}
	if out := evs[4].data["output"]; out.(map[string]any)["region"] != "eu-west-1" {
		t.Errorf("the client tool's result: %v", evs[4].data)
	}
	if again := e.do(t, "POST", url, "alice", good); again.status != 200 || again.json(t)["output"] != "size S in eu-west-1" {
		t.Errorf("the same answer again: %d %s", again.status, again.body)
	}
	other := `{"decisions":[{"tool_call_id":"q1","action":"answer","result":"M"},` + region + `]}`
	if r := e.do(t, "POST", url, "alice", other); r.status != 409 || r.code() != "decision_conflict" {
		t.Errorf("another answer: %d %s", r.status, r.body)
	}
}

// TestAgentsToolKinds: GET /agents shows each tool's kind, a client
// tool's result schema and an input tool's input_ttl.
func TestAgentsToolKinds(t *testing.T) {
	pick, err := tools.NewClient(tools.ClientConfig{Name: "pick", Description: "Pick a region",
		InputSchema: tools.MustCompileSchema(`{"type":"object"}`)})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := tools.CompileValueSchema(json.RawMessage(`{"type":"string"}`))
	if err != nil {
		t.Fatal(err)
	}
	pickTyped, _ := tools.NewClient(tools.ClientConfig{Name: "pick_typed", Description: "Pick", InputSchema: tools.MustCompileSchema(`{"type":"object"}`), ResultSchema: rs})
	ag := &agent.Agent{Name: "acc", Version: "1", ModelID: "m", Tools: []agent.BoundTool{
		{Tool: tools.AskUser{}, Policy: agent.ToolPolicy{InputTTL: time.Hour}},
		{Tool: pick},
		{Tool: pickTyped},
		{Tool: &agent.AgentTool{Agent: "other", Description: "another agent"}},
		{Tool: tools.Clock(time.Now)[0].Tool},
	}}
	e := &agent.Engine{Store: memstore.New(), Model: &agenttest.ScriptModel{}, Agents: agentSet{"acc": ag}, Log: slog.New(slog.DiscardHandler)}
	api := &httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(contract.Check(t, api.Handler()))
	t.Cleanup(srv.Close)
	env := &env{srv: srv, api: api}
	a := env.do(t, "GET", "/agents", "alice", "").json(t)
	var got []string
	for _, tv := range a["agents"].([]any)[0].(map[string]any)["tools"].([]any) {
		m := tv.(map[string]any)
		s := m["name"].(string) + ":" + m["kind"].(string)
		if ttl, ok := m["input_ttl"]; ok {
			s += ":" + ttl.(string)
		}
		if rs, ok := m["result_schema"]; ok {
			b, _ := json.Marshal(rs)
			s += ":" + string(b)
		}
		got = append(got, s)
	}
	want := []string{"ask_user:question:1h0m0s", "pick:client:24h0m0s", `pick_typed:client:24h0m0s:{"type":"string"}`, "other:agent", "get_time:tool"}
	if !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
}

// TestElicitationHTTP: an MCP server's requests for input (a URL and a
// form) are pending inputs with their url, server and schema; a URL
// answered with content is a 400; the answers run the call again. Every
// body and event matches docs/openapi.yaml (contract.Check).
func TestElicitationHTTP(t *testing.T) {
	e, en := hitlEnv(t)
	en.Booker.Asks = [][]agent.Elicitation{{
		{Key: "login", Mode: agent.ElicitURL, Message: "Sign in first", URL: "https://book.example.com/login"},
		enginetest.PartyForm,
	}}
	e.model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("b1", "book_table", `{"day":"friday"}`)))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"book"}]}`)
	res := r.json(t)
	ins, _ := res["pending_inputs"].([]any)
	if r.status != 200 || len(ins) != 2 {
		t.Fatalf("the pause: %d %s", r.status, r.body)
	}
	login, party := ins[0].(map[string]any), ins[1].(map[string]any)
	if login["tool_call_id"] != "b1#login" || login["kind"] != "elicitation" || login["url"] != "https://book.example.com/login" ||
		login["server"] != "https://mcp.example.com/mcp" || login["question"] != "Sign in first" {
		t.Errorf("the URL input: %v", login)
	}
	if party["tool_call_id"] != "b1#party" || party["schema"] == nil || party["url"] != nil {
		t.Errorf("the form input: %v", party)
	}
	url := res["resume_url"].(string)
	const form = `{"tool_call_id":"b1#party","action":"answer","result":{"action":"accept","content":{"size":2}}}`
	for _, tc := range []struct{ body, code string }{
		{`{"decisions":[{"tool_call_id":"b1#login","action":"answer","result":{"action":"accept","content":{"x":1}}},` + form + `]}`, "invalid_input"},
		{`{"decisions":[{"tool_call_id":"b1#login","action":"approve"},` + form + `]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"b1","action":"answer","result":{"action":"accept"}},` + form + `]}`, "invalid_decisions"},
	} {
		if r := e.do(t, "POST", url, "alice", tc.body); r.status != 400 || r.code() != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
	e.model.Add(agenttest.Say("booked for two"))
	good := `{"decisions":[{"tool_call_id":"b1#login","action":"answer","result":{"action":"accept"}},` + form + `]}`
	if r := e.do(t, "POST", url, "alice", good); r.status != 200 || r.json(t)["output"] != "booked for two" {
		t.Fatalf("the answers: %d %s", r.status, r.body)
	}
	if runs := en.Booker.Runs(); len(runs) != 2 || runs[1].Reply == nil || len(runs[1].Reply.Responses) != 2 {
		t.Errorf("the tool's runs: %+v", runs)
	}
	task := e.do(t, "GET", "/agents/acc/tasks/"+res["task_id"].(string), "alice", "")
	if task.status != 200 || !strings.Contains(string(task.body), `"kind":"elicitation"`) || strings.Contains(string(task.body), "round-0") {
		t.Errorf("GET task shows the decision's kind, never the server's state: %d %s", task.status, task.body)
	}
}
