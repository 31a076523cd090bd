package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// The order tests pin docs/api.md "Errors": route / method → 413 → body and
// path validation (400) → agent (404) → task / request (404) → the task
// belongs to this agent (404) → owner (401) → state (409 / 410). Every case
// makes a call with two faults (or more) and expects the answer of the one
// that comes first; nothing may change. One table per route, each run
// against the memory store and DynamoDB Local.

// orderFixture is alice's tasks in the states the cases need.
type orderFixture struct {
	*env
	// P is a paused task and Rp its paused request.
	P, Rp string
	// C is an idle (Completed) task of session S: Rc was edited, so it is
	// superseded by Re, which completed.
	C, S, Rc, Re string
	// UT and UR are ids no task or request has.
	UT, UR string
	// Big is a body over the server's limit.
	Big string
}

// otherAgent adds the agent "other" to an engine's agents.
type otherAgent struct{ agent.Agents }

func (o otherAgent) Get(name string) (*agent.Agent, bool) {
	if name == "other" {
		return &agent.Agent{Name: "other", Version: "1", ModelID: "m", MaxIterations: 2}, true
	}
	return o.Agents.Get(name)
}

func orderStores() map[string]func(testing.TB) agent.Store {
	return map[string]func(testing.TB) agent.Store{
		"memory": func(testing.TB) agent.Store { return memstore.New() },
		"dynamodb": func(tb testing.TB) agent.Store {
			client := ddblocal.Client(tb)
			table := "hitch-" + uuid.NewString()
			if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
				tb.Fatal(err)
			}
			return dynamo.New(client, table)
		},
	}
}

func newOrderFixture(t *testing.T, store agent.Store) *orderFixture {
	t.Helper()
	en := enginetest.New(t, store)
	en.E.Now = nil
	en.E.Agents = otherAgent{en.E.Agents}
	api := &httpapi.Server{Engine: en.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler), MaxBody: 4096}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	f := &orderFixture{env: &env{srv: srv, api: api, model: en.Model, store: store},
		UT: agent.NewID(), UR: agent.NewID(), Big: `{"items":[{"content":"` + strings.Repeat("x", 5000) + `"}]}`}

	p := f.pause(t)
	f.P, f.Rp = p["task_id"].(string), p["request_id"].(string)

	f.model.Add(agenttest.Say("first"))
	c := f.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"hello"}]}`).json(t)
	f.C, f.S, f.Rc = c["task_id"].(string), c["session_id"].(string), c["request_id"].(string)
	f.model.Add(agenttest.Say("second"))
	r := f.do(t, "POST", "/agents/acc/tasks/"+f.C+"/requests/"+f.Rc+"/edit", "alice", `{"items":[{"content":"hello again"}]}`)
	if r.status != 200 {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	f.Re = r.json(t)["request_id"].(string)
	return f
}

// state is everything a refusal must leave as it was.
func (f *orderFixture) state(tb testing.TB) []any {
	tb.Helper()
	ctx := context.Background()
	var out []any
	for _, id := range []string{f.P, f.C} {
		task, items, err := f.store.LoadTask(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		recs, err := f.store.ListRequests(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, task, items, recs)
	}
	for _, u := range []string{"alice", "mallory"} {
		for _, ag := range []string{"acc", "other"} {
			l, _, err := f.store.ListUserTasks(ctx, agent.ListQuery{UserID: u, Agent: ag, Limit: 100})
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, l)
		}
	}
	return out
}

type orderCase struct {
	name, method, path, user, body string
	hdr                            []string
	status                         int
	code                           string
}

// runOrder runs a route's cases on each store.
func runOrder(t *testing.T, cases func(f *orderFixture) []orderCase) {
	for name, newStore := range orderStores() {
		t.Run(name, func(t *testing.T) {
			f := newOrderFixture(t, newStore(t))
			for _, tc := range cases(f) {
				t.Run(tc.name, func(t *testing.T) {
					before := f.state(t)
					r := f.do(t, tc.method, tc.path, tc.user, tc.body, tc.hdr...)
					if r.status != tc.status || r.code() != tc.code {
						t.Fatalf("%s %s: got %d %s, want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.code)
					}
					if diff := cmp.Diff(before, f.state(t)); diff != "" {
						t.Errorf("a refusal changed the state (-before +after):\n%s", diff)
					}
				})
			}
		})
	}
}

const item = `{"items":[{"content":"x"}]}`

func TestOrderInvoke(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		follow := func(tid string) string { return `{"task_id":"` + tid + `","items":[{"content":"x"}]}` }
		return []orderCase{
			{name: "wrong method, body too large", method: "PUT", path: "/agents/acc/invoke", user: "alice", body: f.Big, status: 405, code: "method_not_allowed"},
			{name: "no route, no token", method: "POST", path: "/agents/acc/invoke/now", body: item, hdr: []string{"Authorization", "Basic x"}, status: 404, code: "route_not_found"},
			{name: "body too large and not JSON, unknown agent", method: "POST", path: "/agents/nobody/invoke", user: "alice", body: f.Big + "{", status: 413, code: "body_too_large"},
			{name: "bad JSON, unknown agent", method: "POST", path: "/agents/nobody/invoke", user: "alice", body: `{"items":`, status: 400, code: "invalid_json"},
			{name: "no items, unknown task", method: "POST", path: "/agents/acc/invoke", user: "alice", body: `{"task_id":"` + f.UT + `","items":[]}`, status: 400, code: "invalid_items"},
			{name: "bad task id, unknown agent", method: "POST", path: "/agents/nobody/invoke", user: "alice", body: follow("t-1"), status: 400, code: "invalid_id"},
			{name: "bad metadata, another user's paused task", method: "POST", path: "/agents/acc/invoke", user: "mallory", body: `{"task_id":"` + f.P + `","items":[{"content":"x"}],"metadata":{"n":1}}`, status: 400, code: "invalid_metadata"},
			{name: "bad Idempotency-Key, unknown agent", method: "POST", path: "/agents/nobody/invoke", user: "alice", body: item, hdr: []string{"Idempotency-Key", strings.Repeat("k", 256)}, status: 400, code: "invalid_idempotency_key"},
			{name: "unknown agent, unknown task", method: "POST", path: "/agents/nobody/invoke", user: "alice", body: follow(f.UT), status: 404, code: "agent_not_found"},
			{name: "unknown agent, another user's task", method: "POST", path: "/agents/nobody/invoke", user: "mallory", body: follow(f.P), status: 404, code: "agent_not_found"},
			{name: "another agent's task, another user", method: "POST", path: "/agents/other/invoke", user: "mallory", body: follow(f.P), status: 404, code: "task_not_found"},
			{name: "another user, task paused", method: "POST", path: "/agents/acc/invoke", user: "mallory", body: follow(f.P), status: 401, code: "not_owner"},
			{name: "another user, session mismatch", method: "POST", path: "/agents/acc/invoke", user: "mallory", body: `{"task_id":"` + f.C + `","session_id":"` + f.UT + `","items":[{"content":"x"}]}`, status: 401, code: "not_owner"},
			{name: "session mismatch, task paused", method: "POST", path: "/agents/acc/invoke", user: "alice", body: `{"task_id":"` + f.P + `","session_id":"` + f.UT + `","items":[{"content":"x"}]}`, status: 400, code: "session_mismatch"},
			{name: "another user's session, no task", method: "POST", path: "/agents/acc/invoke", user: "mallory", body: `{"session_id":"` + f.S + `","items":[{"content":"x"}]}`, status: 401, code: "not_owner"},
		}
	})
}

func TestOrderEdit(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid, rid string) string {
			return "/agents/" + ag + "/tasks/" + tid + "/requests/" + rid + "/edit"
		}
		return []orderCase{
			{name: "wrong method, bad ids", method: "GET", path: path("acc", "t", "r"), user: "alice", status: 405, code: "method_not_allowed"},
			{name: "body too large, bad ids", method: "POST", path: path("nobody", "t", "r"), user: "alice", body: f.Big, status: 413, code: "body_too_large"},
			{name: "unknown field, unknown task", method: "POST", path: path("acc", f.UT, f.UR), user: "alice", body: `{"items":[{"content":"x"}],"task_id":"` + f.UT + `"}`, status: 400, code: "unknown_field"},
			{name: "no items, unknown agent", method: "POST", path: path("nobody", f.C, f.Re), user: "alice", body: `{"items":[]}`, status: 400, code: "invalid_items"},
			{name: "bad request id, unknown agent", method: "POST", path: path("nobody", f.C, "r-1"), user: "alice", body: item, status: 400, code: "invalid_id"},
			{name: "unknown agent, unknown task", method: "POST", path: path("nobody", f.UT, f.UR), user: "alice", body: item, status: 404, code: "agent_not_found"},
			{name: "unknown task, unknown request", method: "POST", path: path("acc", f.UT, f.UR), user: "alice", body: item, status: 404, code: "task_not_found"},
			{name: "unknown request, another user", method: "POST", path: path("acc", f.C, f.UR), user: "mallory", body: item, status: 404, code: "request_not_found"},
			{name: "unknown request, another agent's task", method: "POST", path: path("other", f.C, f.UR), user: "alice", body: item, status: 404, code: "request_not_found"},
			{name: "a request of another task", method: "POST", path: path("acc", f.C, f.Rp), user: "alice", body: item, status: 404, code: "request_not_found"},
			{name: "another agent's task, another user", method: "POST", path: path("other", f.C, f.Re), user: "mallory", body: item, status: 404, code: "task_not_found"},
			{name: "another user, request superseded", method: "POST", path: path("acc", f.C, f.Rc), user: "mallory", body: item, status: 401, code: "not_owner"},
			{name: "another user, task paused", method: "POST", path: path("acc", f.P, f.Rp), user: "mallory", body: item, status: 401, code: "not_owner"},
			{name: "request superseded", method: "POST", path: path("acc", f.C, f.Rc), user: "alice", body: item, status: 409, code: "request_superseded"},
			{name: "task paused", method: "POST", path: path("acc", f.P, f.Rp), user: "alice", body: item, status: 409, code: "task_paused"},
		}
	})
}

func TestOrderResume(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid, rid string) string {
			return "/agents/" + ag + "/tasks/" + tid + "/requests/" + rid + "/resume"
		}
		const approve = `{"action":"approve"}`
		return []orderCase{
			{name: "wrong method, body too large", method: "PUT", path: path("acc", f.P, f.Rp), user: "alice", body: f.Big, status: 405, code: "method_not_allowed"},
			{name: "body too large, unknown task", method: "POST", path: path("acc", f.UT, f.UR), user: "alice", body: `{"reason":"` + strings.Repeat("x", 5000) + `"}`, status: 413, code: "body_too_large"},
			{name: "bad JSON, bad ids", method: "POST", path: path("acc", "t", "r"), user: "alice", body: `{"action":`, status: 400, code: "invalid_json"},
			{name: "bad action, unknown task", method: "POST", path: path("acc", f.UT, f.UR), user: "alice", body: `{"action":"perhaps"}`, status: 400, code: "invalid_action"},
			{name: "bad action, another user", method: "POST", path: path("acc", f.P, f.Rp), user: "mallory", body: `{"action":"perhaps"}`, status: 400, code: "invalid_action"},
			{name: "a call decided twice, unknown agent", method: "POST", path: path("nobody", f.P, f.Rp), user: "alice", body: `{"decisions":[{"tool_call_id":"g1","action":"approve"},{"tool_call_id":"g1","action":"reject"}]}`, status: 400, code: "invalid_decisions"},
			{name: "bad task id, unknown agent", method: "POST", path: path("nobody", "t-1", f.Rp), user: "alice", body: approve, status: 400, code: "invalid_id"},
			{name: "bad Idempotency-Key, unknown task", method: "POST", path: path("acc", f.UT, f.UR), user: "alice", body: approve, hdr: []string{"Idempotency-Key", "caf\u00e9"}, status: 400, code: "invalid_idempotency_key"},
			{name: "unknown agent, unknown task", method: "POST", path: path("nobody", f.UT, f.UR), user: "alice", body: approve, status: 404, code: "agent_not_found"},
			{name: "unknown task, unknown request", method: "POST", path: path("acc", f.UT, f.UR), user: "mallory", body: approve, status: 404, code: "task_not_found"},
			// The bug of issue 12: this answered 401 not_owner.
			{name: "unknown request, another user", method: "POST", path: path("acc", f.P, f.UR), user: "mallory", body: approve, status: 404, code: "request_not_found"},
			{name: "unknown request of an idle task, another user", method: "POST", path: path("acc", f.C, f.UR), user: "mallory", body: approve, status: 404, code: "request_not_found"},
			{name: "unknown request, another agent's task", method: "POST", path: path("other", f.P, f.UR), user: "alice", body: approve, status: 404, code: "request_not_found"},
			{name: "another agent's task, another user", method: "POST", path: path("other", f.P, f.Rp), user: "mallory", body: approve, status: 404, code: "task_not_found"},
			{name: "another user, request never paused", method: "POST", path: path("acc", f.C, f.Re), user: "mallory", body: approve, status: 401, code: "not_owner"},
			{name: "another user, decisions naming no pending call", method: "POST", path: path("acc", f.P, f.Rp), user: "mallory", body: `{"decisions":[{"tool_call_id":"nope","action":"approve"}]}`, status: 401, code: "not_owner"},
			{name: "another user, round out of date", method: "POST", path: path("acc", f.P, f.Rp), user: "mallory", body: `{"action":"approve","round":7}`, status: 401, code: "not_owner"},
			{name: "request never paused", method: "POST", path: path("acc", f.C, f.Re), user: "alice", body: approve, status: 409, code: "not_paused"},
		}
	})
}

func TestOrderCancel(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid string) string { return "/agents/" + ag + "/tasks/" + tid + "/cancel" }
		return []orderCase{
			{name: "wrong method, bad id", method: "GET", path: path("acc", "t"), user: "alice", status: 405, code: "method_not_allowed"},
			{name: "body too large, unknown agent", method: "POST", path: path("nobody", f.UT), user: "alice", body: `{"reason":"` + strings.Repeat("x", 5000) + `"}`, status: 413, code: "body_too_large"},
			{name: "unknown field, unknown task", method: "POST", path: path("acc", f.UT), user: "alice", body: `{"why":"x"}`, status: 400, code: "unknown_field"},
			{name: "bad JSON, another user", method: "POST", path: path("acc", f.P), user: "mallory", body: `{"reason":`, status: 400, code: "invalid_json"},
			{name: "bad task id, unknown agent", method: "POST", path: path("nobody", "t-1"), user: "alice", status: 400, code: "invalid_id"},
			{name: "unknown agent, unknown task", method: "POST", path: path("nobody", f.UT), user: "alice", status: 404, code: "agent_not_found"},
			{name: "unknown task, another user", method: "POST", path: path("acc", f.UT), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another agent's task, another user", method: "POST", path: path("other", f.P), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another user, paused (cancelable)", method: "POST", path: path("acc", f.P), user: "mallory", body: `{"reason":"mine now"}`, status: 401, code: "not_owner"},
			{name: "another user, nothing running", method: "POST", path: path("acc", f.C), user: "mallory", status: 401, code: "not_owner"},
			{name: "nothing running", method: "POST", path: path("acc", f.C), user: "alice", status: 409, code: "not_running"},
		}
	})
}

func TestOrderGetTask(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid string) string { return "/agents/" + ag + "/tasks/" + tid }
		return []orderCase{
			{name: "wrong method, bad id", method: "PATCH", path: path("acc", "t"), user: "alice", status: 405, code: "method_not_allowed"},
			{name: "bad token, unknown task", method: "GET", path: path("acc", f.UT), hdr: []string{"Authorization", "Basic x"}, status: 401, code: "unauthenticated"},
			{name: "bad id, unknown agent", method: "GET", path: path("nobody", "t-1"), user: "alice", status: 400, code: "invalid_id"},
			{name: "bad limit, unknown task", method: "GET", path: path("acc", f.UT) + "?limit=0", user: "alice", status: 400, code: "invalid_query"},
			{name: "bad include_images, another user", method: "GET", path: path("acc", f.P) + "?include_images=maybe", user: "mallory", status: 400, code: "invalid_query"},
			{name: "unknown agent, unknown task", method: "GET", path: path("nobody", f.UT), user: "alice", status: 404, code: "agent_not_found"},
			{name: "unknown task, another user", method: "GET", path: path("acc", f.UT), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another agent's task, another user", method: "GET", path: path("other", f.P), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another user", method: "GET", path: path("acc", f.P) + "?include_superseded=true", user: "mallory", status: 401, code: "not_owner"},
		}
	})
}

func TestOrderListTasks(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		return []orderCase{
			{name: "wrong method, bad query", method: "POST", path: "/agents/acc/tasks?limit=0", user: "alice", status: 405, code: "method_not_allowed"},
			{name: "bad token, unknown agent", method: "GET", path: "/agents/nobody/tasks", hdr: []string{"Authorization", "Basic x"}, status: 401, code: "unauthenticated"},
			{name: "bad cursor, unknown agent", method: "GET", path: "/agents/nobody/tasks?cursor=zz", user: "alice", status: 400, code: "invalid_query"},
			{name: "bad limit, unknown agent", method: "GET", path: "/agents/nobody/tasks?limit=101", user: "alice", status: 400, code: "invalid_query"},
			{name: "bad status, unknown agent", method: "GET", path: "/agents/nobody/tasks?status=Done", user: "alice", status: 400, code: "invalid_query"},
			{name: "unknown agent", method: "GET", path: "/agents/nobody/tasks?status=Paused", user: "alice", status: 404, code: "agent_not_found"},
		}
	})
}

func TestOrderEvents(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid, rid string) string {
			return "/agents/" + ag + "/tasks/" + tid + "/requests/" + rid + "/events"
		}
		return []orderCase{
			{name: "wrong method, bad ids", method: "POST", path: path("acc", "t", "r"), user: "alice", status: 405, code: "method_not_allowed"},
			{name: "bad Last-Event-ID, unknown task", method: "GET", path: path("acc", f.UT, f.UR), user: "alice", hdr: []string{"Last-Event-ID", "x"}, status: 400, code: "invalid_last_event_id"},
			{name: "bad after, another user", method: "GET", path: path("acc", f.P, f.Rp) + "?after=-1", user: "mallory", status: 400, code: "invalid_last_event_id"},
			{name: "bad request id, unknown agent", method: "GET", path: path("nobody", f.P, "r-1"), user: "alice", status: 400, code: "invalid_id"},
			{name: "unknown agent, unknown task", method: "GET", path: path("nobody", f.UT, f.UR), user: "alice", status: 404, code: "agent_not_found"},
			{name: "unknown task, unknown request", method: "GET", path: path("acc", f.UT, f.UR), user: "mallory", status: 404, code: "task_not_found"},
			{name: "unknown request, another user", method: "GET", path: path("acc", f.P, f.UR), user: "mallory", status: 404, code: "request_not_found"},
			{name: "unknown request, another agent's task", method: "GET", path: path("other", f.C, f.UR), user: "alice", status: 404, code: "request_not_found"},
			{name: "another agent's task, another user", method: "GET", path: path("other", f.C, f.Re), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another user, an ended request", method: "GET", path: path("acc", f.C, f.Rc), user: "mallory", status: 401, code: "not_owner"},
			{name: "another user, the paused request", method: "GET", path: path("acc", f.P, f.Rp), user: "mallory", hdr: []string{"Last-Event-ID", "1"}, status: 401, code: "not_owner"},
		}
	})
}

func TestOrderSessionTasks(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, sid string) string { return "/agents/" + ag + "/sessions/" + sid + "/tasks" }
		return []orderCase{
			{name: "wrong method, bad id", method: "DELETE", path: path("acc", "s"), user: "alice", status: 405, code: "method_not_allowed"},
			{name: "bad session id, unknown agent", method: "GET", path: path("nobody", "s-1"), user: "alice", status: 400, code: "invalid_id"},
			{name: "bad cursor, unknown session", method: "GET", path: path("acc", f.UT) + "?cursor=zz", user: "alice", status: 400, code: "invalid_query"},
			{name: "bad limit, another user's session", method: "GET", path: path("acc", f.S) + "?limit=0", user: "mallory", status: 400, code: "invalid_query"},
			{name: "unknown agent, unknown session", method: "GET", path: path("nobody", f.UT), user: "alice", status: 404, code: "agent_not_found"},
			{name: "unknown agent, another user's session", method: "GET", path: path("nobody", f.S), user: "mallory", status: 404, code: "agent_not_found"},
			{name: "unknown session, another user", method: "GET", path: path("acc", f.UT), user: "mallory", status: 404, code: "session_not_found"},
			{name: "another user's session", method: "GET", path: path("acc", f.S), user: "mallory", status: 401, code: "not_owner"},
		}
	})
}

func TestOrderDeleteTask(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		path := func(ag, tid string) string { return "/agents/" + ag + "/tasks/" + tid }
		return []orderCase{
			{name: "wrong method, bad id", method: "PUT", path: path("acc", "t"), user: "alice", body: f.Big, status: 405, code: "method_not_allowed"},
			{name: "bad id, unknown agent", method: "DELETE", path: path("nobody", "t-1"), user: "alice", status: 400, code: "invalid_id"},
			{name: "unknown agent, unknown task", method: "DELETE", path: path("nobody", f.UT), user: "alice", status: 404, code: "agent_not_found"},
			{name: "unknown task, another user", method: "DELETE", path: path("acc", f.UT), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another agent's task, another user", method: "DELETE", path: path("other", f.C), user: "mallory", status: 404, code: "task_not_found"},
			{name: "another user, idle task", method: "DELETE", path: path("acc", f.C), user: "mallory", status: 401, code: "not_owner"},
			{name: "another user, paused task", method: "DELETE", path: path("acc", f.P), user: "mallory", status: 401, code: "not_owner"},
			{name: "paused task", method: "DELETE", path: path("acc", f.P), user: "alice", status: 409, code: "task_paused"},
		}
	})
}

func TestOrderAgents(t *testing.T) {
	runOrder(t, func(f *orderFixture) []orderCase {
		return []orderCase{
			{name: "no route, bad token", method: "GET", path: "/agent", hdr: []string{"Authorization", "Basic x"}, status: 404, code: "route_not_found"},
			{name: "no route under agents, bad token", method: "GET", path: "/agents/acc/nothing/here", hdr: []string{"Authorization", "Basic x"}, status: 404, code: "route_not_found"},
			{name: "wrong method, bad token, body too large", method: "POST", path: "/agents", body: f.Big, hdr: []string{"Authorization", "Basic x"}, status: 405, code: "method_not_allowed"},
			{name: "bad token", method: "GET", path: "/agents", hdr: []string{"Authorization", "Basic x"}, status: 401, code: "unauthenticated"},
		}
	})
}
