package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
	"github.com/hitch-agents/hitch/internal/memstore"
)

type agentSet map[string]*agent.Agent

func (s agentSet) Get(n string) (*agent.Agent, bool) { a, ok := s[n]; return a, ok }
func (s agentSet) List() []*agent.Agent {
	var out []*agent.Agent
	for _, a := range s {
		out = append(out, a)
	}
	return out
}

type env struct {
	srv   *httptest.Server
	api   *httpapi.Server
	model *agenttest.ScriptModel
	store agent.Store
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	model := &agenttest.ScriptModel{}
	store := memstore.New()
	ag := &agent.Agent{Name: "acc", Version: "0.1", Description: "test agent", ModelID: "m", MaxIterations: 4}
	e := &agent.Engine{Store: store, Model: model, Agents: agentSet{"acc": ag, "other": {Name: "other", Version: "1"}},
		LegTimeout: time.Minute, Log: slog.New(slog.DiscardHandler)}
	api := &httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler), MaxBody: 4096}
	srv := httptest.NewServer(contract.Check(tb, api.Handler()))
	tb.Cleanup(srv.Close)
	return &env{srv: srv, api: api, model: model, store: store}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	return m
}

func (r reply) code() string {
	var b struct{ Error struct{ Code string } }
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func (e *env) do(tb testing.TB, method, path, user, body string, hdr ...string) reply {
	tb.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

func (e *env) invoke(tb testing.TB, user, body string) map[string]any {
	tb.Helper()
	e.model.Add(agenttest.Say("echo:", " hi"))
	r := e.do(tb, "POST", "/agents/acc/invoke", user, body)
	if r.status != 200 {
		tb.Fatalf("invoke: %d %s", r.status, r.body)
	}
	return r.json(tb)
}

func TestInvokeJSON(t *testing.T) {
	e := newEnv(t)
	res := e.invoke(t, "alice", `{"items":[{"content_type":"text","content":"hi"}],"metadata":{"ticket":"A-1"}}`)
	if res["status"] != "Completed" || res["output"] != "echo: hi" || res["stop_reason"] != "end_turn" || res["source"] != "acc:0.1" {
		t.Fatalf("result = %v", res)
	}
	for _, k := range []string{"session_id", "task_id", "request_id"} {
		if _, err := agent.ParseID(k, res[k].(string)); err != nil {
			t.Errorf("%s = %v", k, res[k])
		}
	}
	// Follow-on in the same task: the model sees the history.
	e.model.Add(agenttest.Say("second"))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+res["task_id"].(string)+`","items":[{"content":"again"}],"metadata":{"more":"x"}}`)
	if r.status != 200 || r.json(t)["task_id"] != res["task_id"] {
		t.Fatalf("follow-on: %d %s", r.status, r.body)
	}
	if n := len(e.model.Call(1).Messages); n != 3 {
		t.Errorf("the follow-on sent %d messages, want 3", n)
	}
	task := e.do(t, "GET", "/agents/acc/tasks/"+res["task_id"].(string), "alice", "").json(t)
	if md := task["metadata"].(map[string]any); md["ticket"] != "A-1" || md["more"] != "x" {
		t.Errorf("metadata not merged: %v", md)
	}
	if items := task["items"].([]any); len(items) != 4 || task["next_after_seq"] != nil {
		t.Errorf("items = %v", items)
	}
}

type sseEvent struct {
	id, name string
	data     map[string]any
}

func readSSE(tb testing.TB, r io.Reader) ([]sseEvent, []string) {
	tb.Helper()
	var evs []sseEvent
	var comments []string
	sc := bufio.NewScanner(r)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.data); err != nil {
				tb.Fatalf("data %q: %v", line, err)
			}
		}
	}
	return evs, comments
}

func TestInvokeSSE(t *testing.T) {
	e := newEnv(t)
	e.model.Add(agenttest.Say("echo:", " hi"))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hi"}]}`, "Accept", "text/event-stream")
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := r.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	var got []string
	for _, ev := range evs {
		got = append(got, ev.id+" "+ev.name)
	}
	want := []string{"1 request_started", "2 answer", "3 answer", "4 request_complete"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if evs[1].data["delta"] != "echo:" || evs[3].data["status"] != "Completed" || evs[0].data["kind"] != "invoke" {
		t.Errorf("event data: %v", evs)
	}
}

func TestFailedOutcomeStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{&agent.Error{Code: agent.CodeThrottled, Message: "slow down", RetryAfter: 7}, 429, "throttled"},
		{&agent.Error{Code: agent.CodeModelError, Message: "bad"}, 502, "model_error"},
		{&agent.Error{Code: agent.CodeContextWindowExceeded, Message: "big"}, 502, "context_window_exceeded"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			e := newEnv(t)
			e.model.Add(agenttest.FailWith(tc.err))
			r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hi"}]}`)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			body := r.json(t)
			if body["status"] != "Failed" || r.code() != tc.code {
				t.Errorf("body = %s", r.body)
			}
			if tc.code == "throttled" && r.header.Get("Retry-After") != "7" {
				t.Errorf("Retry-After = %q, want the model's 7", r.header.Get("Retry-After"))
			}
			// SSE: the leg ends with an error event.
			e.model.Add(agenttest.FailWith(tc.err))
			r = e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hi"}]}`, "Accept", "text/event-stream")
			evs, _ := readSSE(t, strings.NewReader(string(r.body)))
			last := evs[len(evs)-1]
			if last.name != "error" || last.data["code"] != tc.code || last.data["request_id"] == "" {
				t.Errorf("last event = %+v", last)
			}
		})
	}
}

// slowTurn answers after release is closed.
func slowTurn(release chan struct{}) agenttest.Turn {
	return func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "wait"})
		<-release
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("waited")}, StopReason: agent.StopEndTurn}, nil
	}
}

func TestJSONWaitWritesSpaces(t *testing.T) {
	e := newEnv(t)
	e.api.JSONWait = 20 * time.Millisecond
	release := make(chan struct{})
	e.model.Add(slowTurn(release))
	go func() { time.Sleep(150 * time.Millisecond); close(release) }()
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hi"}]}`)
	if r.status != 200 || !strings.HasPrefix(string(r.body), " ") {
		t.Fatalf("status %d body %q: want 200 and leading spaces", r.status, r.body)
	}
	if res := r.json(t); res["status"] != "Completed" || res["output"] != "waited" {
		t.Errorf("result = %v", res)
	}
}

func TestSSEKeepalive(t *testing.T) {
	e := newEnv(t)
	e.api.Keepalive = 20 * time.Millisecond
	release := make(chan struct{})
	e.model.Add(slowTurn(release))
	go func() { time.Sleep(150 * time.Millisecond); close(release) }()
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hi"}]}`, "Accept", "text/event-stream")
	evs, comments := readSSE(t, strings.NewReader(string(r.body)))
	if len(comments) == 0 || comments[0] != ": keepalive" {
		t.Errorf("comments = %q, want keepalives", comments)
	}
	if evs[len(evs)-1].name != "request_complete" {
		t.Errorf("events = %v", evs)
	}
}

func TestRequestOutlivesConnection(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.model.Add(slowTurn(release))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"hi"}]}`))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var taskID string
	for sc.Scan() && taskID == "" {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			var d map[string]any
			_ = json.Unmarshal([]byte(line[6:]), &d)
			taskID, _ = d["task_id"].(string)
		}
	}
	cancel() // the client goes away mid-stream
	resp.Body.Close()
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		task := e.do(t, "GET", "/agents/acc/tasks/"+taskID, "dev", "").json(t)
		if task["status"] == "Completed" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the request did not complete after its client went away")
}

func TestRefusals(t *testing.T) {
	e := newEnv(t)
	done := e.invoke(t, "alice", `{"items":[{"content":"hi"}]}`)
	tid, sid := done["task_id"].(string), done["session_id"].(string)
	big := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, method, path, user, body string
		status                         int
		code                           string
		hdr                            []string
	}{
		{"bad json", "POST", "/agents/acc/invoke", "alice", `{"items":`, 400, "invalid_json", nil},
		{"trailing data", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"x"}]} {}`, 400, "invalid_json", nil},
		{"not an object", "POST", "/agents/acc/invoke", "alice", `[1]`, 400, "invalid_json", nil},
		{"unknown field", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"x"}],"colour":1}`, 400, "unknown_field", nil},
		{"unknown item field", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"x","size":1}]}`, 400, "unknown_field", nil},
		{"bad task id", "POST", "/agents/acc/invoke", "alice", `{"task_id":"t-1","items":[{"content":"x"}]}`, 400, "invalid_id", nil},
		{"numeric session id", "POST", "/agents/acc/invoke", "alice", `{"session_id":5,"items":[{"content":"x"}]}`, 400, "invalid_id", nil},
		{"no items", "POST", "/agents/acc/invoke", "alice", `{}`, 400, "invalid_items", nil},
		{"items not a list", "POST", "/agents/acc/invoke", "alice", `{"items":"hi"}`, 400, "invalid_items", nil},
		{"empty items", "POST", "/agents/acc/invoke", "alice", `{"items":[]}`, 400, "invalid_items", nil},
		{"bad content type", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content_type":"video","content":"x"}]}`, 400, "invalid_content_type", nil},
		{"bad image", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content_type":"image","content":"data:image/png;base64,!!"}]}`, 400, "invalid_image", nil},
		{"metadata number", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"x"}],"metadata":{"n":1}}`, 400, "invalid_metadata", nil},
		{"session mismatch", "POST", "/agents/acc/invoke", "alice", `{"task_id":"` + tid + `","session_id":"` + agent.NewID() + `","items":[{"content":"x"}]}`, 400, "session_mismatch", nil},
		{"unknown agent", "POST", "/agents/nobody/invoke", "alice", `{"items":[{"content":"x"}]}`, 404, "agent_not_found", nil},
		{"unknown task", "POST", "/agents/acc/invoke", "alice", `{"task_id":"` + agent.NewID() + `","items":[{"content":"x"}]}`, 404, "task_not_found", nil},
		{"task of another agent", "POST", "/agents/other/invoke", "alice", `{"task_id":"` + tid + `","items":[{"content":"x"}]}`, 404, "task_not_found", nil},
		{"not the owner", "POST", "/agents/acc/invoke", "mallory", `{"task_id":"` + tid + `","items":[{"content":"x"}]}`, 401, "not_owner", nil},
		{"another user's session", "POST", "/agents/acc/invoke", "mallory", `{"session_id":"` + sid + `","items":[{"content":"x"}]}`, 401, "not_owner", nil},
		{"bad auth header", "POST", "/agents/acc/invoke", "", `{"items":[{"content":"x"}]}`, 401, "unauthenticated", []string{"Authorization", "Basic abc"}},
		{"too large", "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"` + big + `"}]}`, 413, "body_too_large", nil},
		{"no route", "GET", "/nowhere", "alice", "", 404, "route_not_found", nil},
		{"wrong method", "PUT", "/agents/acc/invoke", "alice", "", 405, "method_not_allowed", nil},
		{"get: bad task id", "GET", "/agents/acc/tasks/xyz", "alice", "", 400, "invalid_id", nil},
		{"get: bad limit", "GET", "/agents/acc/tasks/" + tid + "?limit=0", "alice", "", 400, "invalid_query", nil},
		{"get: another user", "GET", "/agents/acc/tasks/" + tid, "mallory", "", 401, "not_owner", nil},
		{"get: another agent", "GET", "/agents/other/tasks/" + tid, "alice", "", 404, "task_not_found", nil},
		{"get: unknown agent", "GET", "/agents/nobody/tasks/" + tid, "alice", "", 404, "agent_not_found", nil},
		{"list: limit 101", "GET", "/agents/acc/tasks?limit=101", "alice", "", 400, "invalid_query", nil},
		{"list: bad status", "GET", "/agents/acc/tasks?status=Done", "alice", "", 400, "invalid_query", nil},
		{"list: bad cursor", "GET", "/agents/acc/tasks?cursor=not-a-cursor", "alice", "", 400, "invalid_query", nil},
		{"list: bad cursor before unknown agent", "GET", "/agents/nobody/tasks?cursor=not-a-cursor", "alice", "", 400, "invalid_query", nil},
		{"session: bad cursor before unknown session", "GET", "/agents/acc/sessions/" + agent.NewID() + "/tasks?cursor=zz", "alice", "", 400, "invalid_query", nil},
		{"session: unknown", "GET", "/agents/acc/sessions/" + agent.NewID() + "/tasks", "alice", "", 404, "session_not_found", nil},
		{"session: bad id", "GET", "/agents/acc/sessions/abc/tasks", "alice", "", 400, "invalid_id", nil},
		{"session: another user", "GET", "/agents/acc/sessions/" + sid + "/tasks", "mallory", "", 401, "not_owner", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, e, tid)
			r := e.do(t, tc.method, tc.path, tc.user, tc.body, tc.hdr...)
			if r.status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if msg := r.json(t)["error"].(map[string]any)["message"]; msg == "" {
				t.Error("the error has no message")
			}
			if diff := cmp.Diff(before, snapshot(t, e, tid)); diff != "" {
				t.Errorf("state changed (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshot is everything a refusal must not change.
func snapshot(tb testing.TB, e *env, tid string) []any {
	tb.Helper()
	task, items, err := e.store.LoadTask(context.Background(), tid)
	if err != nil {
		tb.Fatal(err)
	}
	var out []any
	out = append(out, task, items)
	for _, u := range []string{"alice", "mallory"} {
		l, _, err := e.store.ListUserTasks(context.Background(), agent.ListQuery{UserID: u, Agent: "acc", Limit: 100})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func TestBusyTask(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.model.Add(slowTurn(release))
	started := make(chan map[string]any, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest("POST", e.srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"hi"}]}`))
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			started <- nil
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") && !sent {
				var d map[string]any
				_ = json.Unmarshal([]byte(line[6:]), &d)
				started <- d
				sent = true
			}
		}
	}()
	d := <-started
	if d == nil {
		t.Fatal("no stream")
	}
	tid := d["task_id"].(string)
	r := e.do(t, "POST", "/agents/acc/invoke", "dev", `{"task_id":"`+tid+`","items":[{"content":"x"}]}`)
	if r.status != 409 || r.code() != "task_busy" {
		t.Errorf("got %d %s, want 409 task_busy", r.status, r.body)
	}
	close(release)
	wg.Wait()
}

func TestListsAndPaging(t *testing.T) {
	e := newEnv(t)
	first := e.invoke(t, "alice", `{"items":[{"content":"one"}]}`)
	sid := first["session_id"].(string)
	var ids []string
	ids = append(ids, first["task_id"].(string))
	for i := 0; i < 4; i++ {
		time.Sleep(2 * time.Millisecond)
		ids = append(ids, e.invoke(t, "alice", `{"session_id":"`+sid+`","items":[{"content":"more"}]}`)["task_id"].(string))
	}
	e.invoke(t, "bob", `{"items":[{"content":"bob's"}]}`)
	// Newest first, two per page.
	var got []string
	cursor := ""
	for page := 0; page < 5; page++ {
		path := "/agents/acc/tasks?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		l := e.do(t, "GET", path, "alice", "").json(t)
		for _, x := range l["tasks"].([]any) {
			got = append(got, x.(map[string]any)["task_id"].(string))
		}
		if l["next_cursor"] == nil {
			break
		}
		cursor = l["next_cursor"].(string)
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alice's tasks (-want +got):\n%s", diff)
	}
	if l := e.do(t, "GET", "/agents/acc/tasks?status=Failed", "alice", "").json(t); len(l["tasks"].([]any)) != 0 {
		t.Errorf("Failed tasks: %v", l)
	}
	if l := e.do(t, "GET", "/agents/acc/tasks?status=Completed", "alice", "").json(t); len(l["tasks"].([]any)) != 5 {
		t.Errorf("Completed tasks: %v", l)
	}
	if l := e.do(t, "GET", "/agents/other/tasks", "alice", "").json(t); len(l["tasks"].([]any)) != 0 {
		t.Errorf("other agent's tasks: %v", l)
	}
	s := e.do(t, "GET", "/agents/acc/sessions/"+sid+"/tasks", "alice", "").json(t)
	if n := len(s["tasks"].([]any)); n != 5 || s["tasks"].([]any)[0].(map[string]any)["task_id"] != ids[4] {
		t.Errorf("session tasks: %v", s)
	}
	// Items paging.
	tid := ids[0]
	for i := 0; i < 2; i++ {
		e.model.Add(agenttest.Say("again"))
		e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+tid+`","items":[{"content":"again"}]}`)
	}
	p1 := e.do(t, "GET", "/agents/acc/tasks/"+tid+"?limit=4", "alice", "").json(t)
	if len(p1["items"].([]any)) != 4 || p1["next_after_seq"] != float64(4) {
		t.Fatalf("page 1: items %d next %v", len(p1["items"].([]any)), p1["next_after_seq"])
	}
	p2 := e.do(t, "GET", "/agents/acc/tasks/"+tid+"?limit=4&after_seq=4", "alice", "").json(t)
	if items := p2["items"].([]any); len(items) != 2 || items[0].(map[string]any)["seq"] != float64(5) || p2["next_after_seq"] != nil {
		t.Fatalf("page 2: %v", p2)
	}
	if reqs := p2["requests"].([]any); len(reqs) != 3 {
		t.Errorf("requests: %v", reqs)
	}
}

func TestAgentsAndHealth(t *testing.T) {
	e := newEnv(t)
	r := e.do(t, "GET", "/health", "", "", "Authorization", "Basic nonsense")
	if r.status != 200 {
		t.Errorf("health: %d", r.status)
	}
	a := e.do(t, "GET", "/agents", "alice", "").json(t)
	if n := len(a["agents"].([]any)); n != 2 {
		t.Errorf("agents: %v", a)
	}
}

func TestStatusTable(t *testing.T) {
	for code, want := range map[string]int{
		"invalid_json": 400, "not_owner": 401, "forbidden": 403, "route_not_found": 404, "method_not_allowed": 405,
		"task_busy": 409, "approval_expired": 410, "input_expired": 410, "body_too_large": 413, "idempotency_key_reused": 422,
		"throttled": 429, "internal": 500, "request_lost": 503, "model_error": 502, "context_window_exceeded": 502, "remote_unavailable": 502, "deadline_exceeded": 504,
		"something_new": 500,
	} {
		if got := httpapi.StatusOf(code); got != want {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, want)
		}
	}
}
