package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/mcp/mcpexample"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// definition is an agent with the tools of an MCP server.
func definition(url, extra string) string {
	return fmt.Sprintf(`apiVersion: tealagents/v1alpha1
kind: Agent
name: tickets
version: "1"
description: Works on tickets.
spec:
  agent:
    model: local
    tools:
      - mcp: %s
        name: tk
%s`, url, extra)
}

// api serves the engine over HTTP with the local model and the catalog of
// one definition.
type api struct {
	srv *httptest.Server
}

func newAPI(tb testing.TB, def string, opts ...func(*agent.Engine)) *api {
	tb.Helper()
	cat, err := catalog.Load(fstest.MapFS{"tickets.yaml": {Data: []byte(def)}}, ".", catalog.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	model, stop, err := localmodel.Start(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	log := slog.New(slog.DiscardHandler)
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, LegTimeout: time.Minute, Log: log}
	for _, o := range opts {
		o(e)
	}
	s := httptest.NewServer((&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: log, MaxBody: 1 << 20}).Handler())
	tb.Cleanup(s.Close)
	return &api{srv: s}
}

func (a *api) post(tb testing.TB, path string, body any) map[string]any {
	tb.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", a.srv.URL+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer alice")
	return a.do(tb, req)
}

func (a *api) get(tb testing.TB, path string) map[string]any {
	tb.Helper()
	req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer alice")
	return a.do(tb, req)
}

func (a *api) do(tb testing.TB, req *http.Request) map[string]any {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != 200 {
		tb.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return m
}

func say(text string) map[string]any {
	return map[string]any{"items": []any{map[string]any{"content": text}}}
}

// TestEngineApprovalAcrossRestart: the model calls a destructive MCP tool;
// the request pauses for approval; the server restarts; approval runs the
// tool exactly once and the model sees its result.
func TestEngineApprovalAcrossRestart(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	a := newAPI(t, definition(srv.URL, "        timeout: 2s\n"))

	res := a.post(t, "/agents/tickets/invoke", say(`/call tk_close_ticket {"id":"T-7"}`))
	if res["status"] != "Paused" {
		t.Fatalf("invoke: %v, want Paused", res)
	}
	pending := res["pending_approvals"].([]any)
	if len(pending) != 1 || pending[0].(map[string]any)["name"] != "tk_close_ticket" {
		t.Fatalf("pending approvals %v", pending)
	}
	if n := tt.Calls("close_ticket"); n != 0 {
		t.Fatalf("close_ticket ran %d times before approval", n)
	}

	srv.Stop()
	serveMCP(t, tt, srv.addr)

	res = a.post(t, res["resume_url"].(string), map[string]any{"action": "approve"})
	if res["status"] != "Completed" || !strings.Contains(res["output"].(string), "tk_close_ticket success: closed T-7") {
		t.Fatalf("resume: %v", res)
	}
	if n := tt.Calls("close_ticket"); n != 1 {
		t.Errorf("close_ticket ran %d times, want 1", n)
	}
	wantKey := res["request_id"].(string) + "#" + pending[0].(map[string]any)["tool_call_id"].(string)
	if got := tt.Key("close_ticket"); got != wantKey {
		t.Errorf("idempotency key %q, want %q", got, wantKey)
	}
}

// TestEngineResults: read-only tools run without approval; an error result,
// a timeout and structured content reach the model.
func TestEngineResults(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	a := newAPI(t, definition(srv.URL, "        timeout: 500ms\n"))
	res := a.post(t, "/agents/tickets/invoke", say("/call tk_echo {\"text\":\"hi\"}\n/call tk_weather {\"city\":\"Oslo\"}\n/call tk_fail {}\n/call tk_hang {}"))
	if res["status"] != "Completed" {
		t.Fatalf("invoke: %v", res)
	}
	out := res["output"].(string)
	for _, want := range []string{
		"tk_echo success: echo hi",
		`tk_weather success: {"city":"Oslo","temp_c":21.5}`,
		"tk_fail error: the database is read-only today",
		"tk_hang error: the tool timed out after 500ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

// TestAgentsListsMCPTools: GET /agents shows the MCP tools with their policy.
func TestAgentsListsMCPTools(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	a := newAPI(t, definition(srv.URL, "        allow: [echo, close_ticket]\n"))
	res := a.get(t, "/agents")
	raw, _ := json.Marshal(res)
	for _, want := range []string{`"name":"tk_echo"`, `"name":"tk_close_ticket"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("GET /agents %s lacks %s", raw, want)
		}
	}
	if strings.Contains(string(raw), "tk_weather") {
		t.Errorf("GET /agents %s lists a tool allow leaves out", raw)
	}
}

// TestEngineServerDiesMidCall: the server goes away while a call runs (and
// comes back at once); the model gets an error result, the request
// completes, and the call is not sent again.
func TestEngineServerDiesMidCall(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	a := newAPI(t, definition(srv.URL, "        timeout: 20s\n"))
	go func() {
		for tt.Calls("hang") == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		srv.Stop()
		serveMCP(t, tt, srv.addr)
	}()
	start := time.Now()
	res := a.post(t, "/agents/tickets/invoke", say("/call tk_hang {}"))
	out, _ := res["output"].(string)
	if res["status"] != "Completed" || !strings.Contains(out, "tk_hang error: MCP server tk at "+srv.URL) {
		t.Fatalf("invoke: %v, want an error result naming the server", res)
	}
	if n := tt.Calls("hang"); n != 1 {
		t.Errorf("hang ran %d times, want 1", n)
	}
	if strings.Contains(out, "timed out") {
		t.Errorf("output %q: the call waited for its timeout (%s) instead of failing when the server died", out, time.Since(start))
	}
}

// TestEngineResultsAsArtifacts: an MCP result's images, embedded resource
// and linked resource (read from the server) become artifacts of the task,
// named in the result; a model-type image still reaches the model; audio
// stays a note.
func TestEngineResultsAsArtifacts(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	bytesStore := memstore.NewBytes()
	a := newAPI(t, definition(srv.URL, ""), func(e *agent.Engine) { e.Artifacts = bytesStore })
	res := a.post(t, "/agents/tickets/invoke", say("/call tk_chart {}"))
	if res["status"] != "Completed" {
		t.Fatalf("invoke: %v", res)
	}
	out := res["output"].(string)
	for _, want := range []string{`Saved artifact "image-1.png"`, `Saved artifact "image-2"`, `[audio of type audio/wav`} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	task := a.get(t, "/agents/tickets/tasks/"+res["task_id"].(string))
	got := map[string]string{}
	for _, x := range task["artifacts"].([]any) {
		m := x.(map[string]any)
		rc, err := bytesStore.Open(t.Context(), res["task_id"].(string), m["artifact_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		got[m["name"].(string)] = m["media_type"].(string) + " " + string(b)
	}
	want := map[string]string{
		"image-1.png": "image/png " + string(pngBytes),
		"image-2":     "image/tiff tiff",
		"report":      "text/csv a,b\n1,2\n",
		"notes.txt":   "text/plain hidden",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	// The png still reaches the model as an image: the audio's note, the
	// image, a note per artifact (GET task shows the image as a text block).
	items := task["items"].([]any)
	tool := items[len(items)-2].(map[string]any)["content"].([]any)[0].(map[string]any)
	var texts []string
	for _, c := range tool["content"].([]any) {
		texts = append(texts, fmt.Sprint(c.(map[string]any)["text"]))
	}
	if len(texts) != 6 || !slices.Contains(texts, "") {
		t.Errorf("the tool result's blocks are %q; want the audio's note, the png and 4 notes", texts)
	}
}

// TestEngineElicitation: the example server's reopen_ticket asks why (an
// input_required form): the request pauses with the server's question and
// schema; the answer runs the call again once, with the server's state,
// and the model sees the server's result. A decline is the server's to
// answer too.
func TestEngineElicitation(t *testing.T) {
	ex := mcpexample.New()
	srv := serve(t, "127.0.0.1:0", ex.Handler())
	a := newAPI(t, definition(srv.URL, "        allow: [reopen_ticket]\n"))
	for _, tc := range []struct {
		id     string
		answer map[string]any
		want   string
	}{
		{"T-2", map[string]any{"action": "accept", "content": map[string]any{"reason": "it came back", "urgent": true}}, "tk_reopen_ticket success: reopened T-2: it came back (urgent)"},
		{"T-3", map[string]any{"action": "decline"}, "tk_reopen_ticket error: T-3 not reopened: the person chose decline"},
	} {
		res := a.post(t, "/agents/tickets/invoke", say(`/call tk_reopen_ticket {"id":"`+tc.id+`"}`))
		if res["status"] != "Paused" {
			t.Fatalf("invoke: %v, want Paused", res)
		}
		inputs, _ := res["pending_inputs"].([]any)
		if len(inputs) != 1 {
			t.Fatalf("pending inputs %v", res["pending_inputs"])
		}
		in := inputs[0].(map[string]any)
		schema, _ := json.Marshal(in["schema"])
		if in["kind"] != "elicitation" || in["server"] != "tk at "+srv.URL || !strings.Contains(fmt.Sprint(in["question"]), "Why reopen "+tc.id) || !strings.Contains(string(schema), `"reason"`) {
			t.Errorf("pending input %v", in)
		}
		res = a.post(t, res["resume_url"].(string), map[string]any{"decisions": []any{
			map[string]any{"tool_call_id": in["tool_call_id"], "action": "answer", "result": tc.answer},
		}})
		if res["status"] != "Completed" || !strings.Contains(fmt.Sprint(res["output"]), tc.want) {
			t.Errorf("resume: %v, want the output to hold %q", res, tc.want)
		}
	}
	if tk, _ := ex.Ticket("T-2"); !tk.Open || tk.Reason != "it came back" {
		t.Errorf("T-2 after the answer: %+v", tk)
	}
	if tk, _ := ex.Ticket("T-3"); tk.Reason != "" {
		t.Errorf("T-3 reopened after a decline: %+v", tk)
	}
}
