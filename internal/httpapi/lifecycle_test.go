package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// hitlEnv serves the engine suite's agent (tools safe, guarded, retry).
func hitlEnv(t *testing.T) (*env, *enginetest.Env) {
	t.Helper()
	en := enginetest.New(t, memstore.New())
	en.E.Now = nil
	api := &httpapi.Server{Engine: en.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(contract.Check(t, api.Handler()))
	t.Cleanup(srv.Close)
	return &env{srv: srv, api: api, model: en.Model, store: en.Store}, en
}

func (e *env) pause(t *testing.T) map[string]any {
	t.Helper()
	e.model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("s1", "safe", "look"), enginetest.Call("g1", "guarded", "delete")))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"go"}]}`)
	res := r.json(t)
	if r.status != 200 || res["status"] != "Paused" {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	return res
}

func TestResumeHTTP(t *testing.T) {
	e, en := hitlEnv(t)
	res := e.pause(t)
	url := res["resume_url"].(string)
	if !strings.HasPrefix(url, "/agents/acc/tasks/") || !strings.HasSuffix(url, "/resume") {
		t.Fatalf("resume_url %q", url)
	}
	for _, tc := range []struct{ body, code string }{
		{`{"action":`, "invalid_json"},
		{`{"action":"approve","colour":1}`, "unknown_field"},
		{`{"action":"perhaps"}`, "invalid_action"},
		{`{"decisions":[{"tool_call_id":"nope","action":"approve"}]}`, "invalid_decisions"},
		{`{"decisions":[{"tool_call_id":"g1","action":"edit","input":{"nope":1}}]}`, "invalid_input"},
	} {
		if r := e.do(t, "POST", url, "alice", tc.body); r.status != 400 || r.code() != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
	if r := e.do(t, "POST", url, "mallory", `{"action":"approve"}`); r.status != 401 || r.code() != "not_owner" {
		t.Errorf("mallory: %d %s", r.status, r.body)
	}
	e.model.Add(agenttest.Say("done"))
	r := e.do(t, "POST", url, "alice", `{"action":"approve"}`, "Accept", "text/event-stream")
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	if r.status != 200 || evs[0].id != "6" || evs[0].name != "request_started" || evs[0].data["kind"] != "resume" || evs[1].name != "approved" {
		t.Fatalf("resume stream: %d %v", r.status, evs)
	}
	last := evs[len(evs)-1]
	if last.name != "request_complete" || last.data["status"] != "Completed" {
		t.Fatalf("last event %+v", last)
	}
	// The same decision again: 200, the stored outcome; SSE replays the leg.
	again := e.do(t, "POST", url, "alice", `{"action":"approve"}`)
	if again.status != 200 || again.json(t)["output"] != "done" {
		t.Errorf("repeat: %d %s", again.status, again.body)
	}
	replay := e.do(t, "POST", url, "alice", `{"action":"approve"}`, "Accept", "text/event-stream")
	revs, _ := readSSE(t, strings.NewReader(string(replay.body)))
	if len(revs) != len(evs) || revs[0].id != "6" || revs[len(revs)-1].name != "request_complete" {
		t.Errorf("replayed: %v, want the %d events of the leg", revs, len(evs))
	}
	if r := e.do(t, "POST", url, "alice", `{"action":"reject"}`); r.status != 409 || r.code() != "decision_conflict" {
		t.Errorf("another decision: %d %s", r.status, r.body)
	}
	if n := len(en.Guarded.Runs()); n != 1 {
		t.Errorf("guarded ran %d times", n)
	}
}

func TestCancelHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	res := e.pause(t)
	tid := res["task_id"].(string)
	if r := e.do(t, "POST", "/agents/acc/tasks/"+tid+"/cancel", "alice", `{"why":"x"}`); r.status != 400 || r.code() != "unknown_field" {
		t.Errorf("unknown field: %d %s", r.status, r.body)
	}
	r := e.do(t, "POST", "/agents/acc/tasks/"+tid+"/cancel", "alice", `{"reason":"no"}`)
	if r.status != 200 || r.json(t)["status"] != "Canceled" {
		t.Fatalf("cancel paused: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/agents/acc/tasks/"+tid+"/cancel", "alice", ""); r.status != 409 || r.code() != "not_running" {
		t.Errorf("cancel idle: %d %s", r.status, r.body)
	}
	// A running request: the stream gets cancelled then request_complete.
	started := make(chan struct{})
	e.model.Add(agenttest.Blocking(started))
	streamed := make(chan []sseEvent, 1)
	go func() {
		r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+tid+`","items":[{"content":"long"}]}`, "Accept", "text/event-stream")
		evs, _ := readSSE(t, strings.NewReader(string(r.body)))
		streamed <- evs
	}()
	<-started
	start := time.Now()
	r = e.do(t, "POST", "/agents/acc/tasks/"+tid+"/cancel", "alice", "")
	if r.status != 200 || r.json(t)["status"] != "Canceled" {
		t.Fatalf("cancel running: %d %s", r.status, r.body)
	}
	t.Logf("cancel answered in %v", time.Since(start))
	evs := <-streamed
	n := len(evs)
	if n < 2 || evs[n-2].name != "cancelled" || evs[n-1].name != "request_complete" || evs[n-1].data["status"] != "Canceled" {
		t.Errorf("stream: %v", evs)
	}
}

func TestEventsHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	e.model.Add(agenttest.Say("a", "b", "c"))
	res := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"go"}]}`).json(t)
	path := "/agents/acc/tasks/" + res["task_id"].(string) + "/requests/" + res["request_id"].(string) + "/events"
	r := e.do(t, "GET", path, "alice", "", "Last-Event-ID", "2")
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || len(evs) != 3 || evs[0].id != "3" || evs[2].name != "request_complete" {
		t.Fatalf("replay after 2: %d %v", r.status, evs)
	}
	if r := e.do(t, "GET", path+"?after=4", "alice", ""); !strings.Contains(string(r.body), "id: 5\nevent: request_complete") {
		t.Errorf("?after=4: %s", r.body)
	}
	for _, tc := range []struct{ path, user, hdr string }{
		{path + "?after=x", "alice", ""},
		{path, "alice", "-1"},
	} {
		var h []string
		if tc.hdr != "" {
			h = []string{"Last-Event-ID", tc.hdr}
		}
		if r := e.do(t, "GET", tc.path, tc.user, "", h...); r.status != 400 || r.code() != "invalid_last_event_id" {
			t.Errorf("%s %s: %d %s", tc.path, tc.hdr, r.status, r.body)
		}
	}
	if r := e.do(t, "GET", path, "mallory", ""); r.status != 401 || r.code() != "not_owner" {
		t.Errorf("mallory: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", strings.Replace(path, res["request_id"].(string), agent.NewID(), 1), "alice", ""); r.status != 404 || r.code() != "request_not_found" {
		t.Errorf("unknown request: %d %s", r.status, r.body)
	}
}

// TestReconnectHTTP drops the stream after its first events and resumes it
// with Last-Event-ID: every event arrives exactly once.
func TestReconnectHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	release := make(chan struct{})
	e.model.Add(func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "one"})
		<-release
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: " two"})
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("one two")}, StopReason: agent.StopEndTurn}, nil
	})
	req, _ := http.NewRequest("POST", e.srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"go"}]}`))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var ids []string
	var tid, rid string
	for sc.Scan() && len(ids) < 2 {
		line := sc.Text()
		if strings.HasPrefix(line, "id: ") {
			ids = append(ids, line[4:])
		}
		if strings.HasPrefix(line, "data: ") && tid == "" {
			var d map[string]any
			_ = json.Unmarshal([]byte(line[6:]), &d)
			tid, rid = d["task_id"].(string), d["request_id"].(string)
		}
	}
	resp.Body.Close() // cut after event 2
	close(release)
	r := e.do(t, "GET", "/agents/acc/tasks/"+tid+"/requests/"+rid+"/events", "dev", "", "Last-Event-ID", ids[len(ids)-1])
	if r.status != 200 {
		t.Fatalf("GET events: %d %s", r.status, r.body)
	}
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	for _, ev := range evs {
		ids = append(ids, ev.id)
	}
	if strings.Join(ids, ",") != "1,2,3,4" || evs[len(evs)-1].name != "request_complete" {
		t.Errorf("ids %v, events after the cut %v", ids, evs)
	}
}

func TestIdempotencyAndDeleteHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	e.model.Add(agenttest.Say("once"))
	body := `{"items":[{"content":"pay invoice 7"}]}`
	first := e.do(t, "POST", "/agents/acc/invoke", "alice", body, "Idempotency-Key", "pay-7")
	second := e.do(t, "POST", "/agents/acc/invoke", "alice", `{ "items": [ {"content": "pay invoice 7"} ] }`, "Idempotency-Key", "pay-7")
	if first.status != 200 || second.status != 200 || first.json(t)["request_id"] != second.json(t)["request_id"] {
		t.Fatalf("retry: %s / %s", first.body, second.body)
	}
	if r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"pay invoice 8"}]}`, "Idempotency-Key", "pay-7"); r.status != 422 || r.code() != "idempotency_key_reused" {
		t.Errorf("another body: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/agents/acc/invoke", "alice", body, "Idempotency-Key", strings.Repeat("k", 256)); r.status != 400 || r.code() != "invalid_idempotency_key" {
		t.Errorf("long key: %d %s", r.status, r.body)
	}
	tid := first.json(t)["task_id"].(string)
	if r := e.do(t, "DELETE", "/agents/acc/tasks/"+tid, "alice", ""); r.status != 204 || len(r.body) != 0 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", ""); r.status != 404 {
		t.Errorf("after delete: %d", r.status)
	}
	if r := e.do(t, "DELETE", "/agents/acc/tasks/"+tid, "alice", ""); r.status != 404 || r.code() != "task_not_found" {
		t.Errorf("delete twice: %d %s", r.status, r.body)
	}
}

func TestEditHTTP(t *testing.T) {
	e, _ := hitlEnv(t)
	e.model.Add(agenttest.Say("first"))
	res := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hello"}]}`).json(t)
	path := "/agents/acc/tasks/" + res["task_id"].(string) + "/requests/" + res["request_id"].(string) + "/edit"
	if r := e.do(t, "POST", path, "alice", `{"items":[{"content":"x"}],"task_id":"`+res["task_id"].(string)+`"}`); r.status != 400 || r.code() != "unknown_field" {
		t.Errorf("edit takes only items: %d %s", r.status, r.body)
	}
	e.model.Add(agenttest.Say("second"))
	r := e.do(t, "POST", path, "alice", `{"items":[{"content":"hello again"}]}`, "Accept", "text/event-stream")
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	if evs[0].data["kind"] != "edit" || evs[len(evs)-1].data["output"] != "second" {
		t.Fatalf("edit stream: %v", evs)
	}
	task := e.do(t, "GET", "/agents/acc/tasks/"+res["task_id"].(string), "alice", "").json(t)
	if n := len(task["items"].([]any)); n != 2 {
		t.Errorf("items after edit: %d, want 2", n)
	}
	if r := e.do(t, "POST", path, "alice", `{"items":[{"content":"again"}]}`); r.status != 409 || r.code() != "request_superseded" {
		t.Errorf("edit of a superseded request: %d %s", r.status, r.body)
	}
}
