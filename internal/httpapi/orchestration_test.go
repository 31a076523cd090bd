package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// TestOrchestrationHTTP: agents calling agents over the API, every answer
// and streamed event checked against the OpenAPI document: the caller's
// stream carries the child's events; the pause cascades with the leaf's
// ids and resume routes; GET task shows waiting_on, parent_task_id and the
// child request's parent; lists show parent_task_id; a decision at the
// caller completes both, one at the leaf completes the leaf and, once
// continued, the caller.
func TestOrchestrationHTTP(t *testing.T) {
	o := enginetest.NewOrch(t, memstore.New())
	api := &httpapi.Server{Engine: o.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler), MaxBody: 1 << 20}
	srv := httptest.NewServer(contract.Check(t, api.Handler()))
	t.Cleanup(srv.Close)
	e := &env{srv: srv, api: api}
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": enginetest.CallAgent("leaf", enginetest.Append("http.txt", "x"))}}})

	r := e.do(t, "POST", "/agents/desk/invoke", "alice", string(body), "Accept", "text/event-stream")
	if r.status != 200 || !strings.Contains(string(r.body), "event: child") || !strings.Contains(string(r.body), `"depth":1`) {
		t.Fatalf("the caller's stream: %d %s", r.status, r.body)
	}
	r = e.do(t, "POST", "/agents/desk/invoke", "alice", string(body))
	res := r.json(t)
	if res["status"] != "Paused" {
		t.Fatalf("desk: %s", r.body)
	}
	p := res["pending_approvals"].([]any)[0].(map[string]any)
	if p["agent"] != "leaf" || !strings.HasPrefix(p["resume_url"].(string), "/agents/leaf/tasks/") {
		t.Fatalf("the pending call: %v", p)
	}
	task := e.do(t, "GET", "/agents/desk/tasks/"+res["task_id"].(string), "alice", "").json(t)
	if w := task["waiting_on"].([]any); len(w) != 1 || w[0].(map[string]any)["request_id"] != p["request_id"] {
		t.Errorf("waiting_on: %v", task["waiting_on"])
	}
	list := e.do(t, "GET", "/agents/leaf/tasks?status=Paused", "alice", "").json(t)
	tasks := list["tasks"].([]any)
	if len(tasks) != 2 || tasks[0].(map[string]any)["parent_task_id"] == nil {
		t.Errorf("leaf's paused tasks: %v", tasks)
	}
	if r := e.do(t, "GET", "/agents/leaf/tasks/"+p["task_id"].(string), "bob", ""); r.status != 401 {
		t.Errorf("another user reads the child task: %d", r.status)
	}

	// The decision at the caller.
	decide, _ := json.Marshal(map[string]any{"decisions": []map[string]string{{"tool_call_id": p["tool_call_id"].(string), "action": "approve"}}})
	r = e.do(t, "POST", "/agents/desk/tasks/"+res["task_id"].(string)+"/requests/"+res["request_id"].(string)+"/resume", "alice", string(decide), "Accept", "text/event-stream")
	if r.status != 200 || !strings.Contains(string(r.body), `"event":"approved"`) || !strings.Contains(string(r.body), `"status":"Completed"`) {
		t.Fatalf("the decision at desk: %d %s", r.status, r.body)
	}
	child := e.do(t, "GET", "/agents/leaf/tasks/"+p["task_id"].(string), "alice", "").json(t)
	req := child["requests"].([]any)[0].(map[string]any)
	if child["parent_task_id"] != res["task_id"] || req["parent"].(map[string]any)["request_id"] != res["request_id"] || child["status"] != "Completed" {
		t.Errorf("the child task: %v", child)
	}

	// The other paused task: the decision at the leaf.
	first := tasks[1].(map[string]any)
	if first["task_id"] == p["task_id"] {
		first = tasks[0].(map[string]any)
	}
	leafTask := e.do(t, "GET", "/agents/leaf/tasks/"+first["task_id"].(string), "alice", "").json(t)
	lreq := leafTask["requests"].([]any)[0].(map[string]any)
	r = e.do(t, "POST", "/agents/leaf/tasks/"+first["task_id"].(string)+"/requests/"+lreq["request_id"].(string)+"/resume", "alice", `{"action":"approve"}`)
	if r.status != 200 || r.json(t)["status"] != "Completed" {
		t.Fatalf("the decision at the leaf: %d %s", r.status, r.body)
	}
	parent := lreq["parent"].(map[string]any)
	if err := o.E.ContinueCaller(context.Background(), parent["task_id"].(string), parent["request_id"].(string)); err != nil {
		t.Fatal(err)
	}
	// Its log: the pause's leg, then (after its last id) the continuation's.
	route := "/agents/desk/tasks/" + parent["task_id"].(string) + "/requests/" + parent["request_id"].(string) + "/events"
	pause := e.do(t, "GET", route, "alice", "")
	ids := strings.Split(string(pause.body), "id: ")
	last := strings.SplitN(ids[len(ids)-1], "\n", 2)[0]
	events := e.do(t, "GET", route+"?after="+last, "alice", "")
	if !strings.Contains(string(events.body), `"kind":"continue"`) || !strings.Contains(string(events.body), `"status":"Completed"`) {
		t.Errorf("the caller's log after its continuation: %s", events.body)
	}
	if got := o.Lines("http.txt"); len(got) != 2 {
		t.Errorf("http.txt = %q: want one line per approved call", got)
	}

	// A decision at the root of boss → desk → leaf with too little time
	// left to continue desk: 202, the RequestResult Running; the outbox
	// goes on.
	deep, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": enginetest.CallAgent("desk", enginetest.CallAgent("leaf", enginetest.Append("deep.txt", "x")))}}})
	boss := e.do(t, "POST", "/agents/boss/invoke", "alice", string(deep)).json(t)
	if boss["status"] != "Paused" {
		t.Fatalf("boss: %v", boss)
	}
	o.E.ChainMinRemaining = 24 * time.Hour
	r = e.do(t, "POST", "/agents/boss/tasks/"+boss["task_id"].(string)+"/requests/"+boss["request_id"].(string)+"/resume", "alice", `{"action":"approve"}`)
	o.E.ChainMinRemaining = 5 * time.Second
	if r.status != 202 || r.json(t)["status"] != "Running" {
		t.Fatalf("a handed-off decision: %d %s", r.status, r.body)
	}
}
