package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/google/go-cmp/cmp"

	hitcha2a "github.com/hitch-agents/hitch/internal/a2a"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
)

const agentYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: assistant
version: 0.1
description: Keeps files in a sandbox.
spec:
  agent:
    model: local
    max_iterations: 10
    tools:
      - builtin: clock
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [write_file, append_file, delete_file]
`

// stack is hitch serve's stack in a test: memory store, the local model over
// the wire, dev auth, the A2A server.
type stack struct {
	url     string
	sandbox string
	srv     *httptest.Server
}

func startStack(tb testing.TB) *stack { return startStackWith(tb, false) }

// startStackWith starts the stack; detach is hitch serve's setting (true) or
// Lambda's (false).
func startStackWith(tb testing.TB, detach bool) *stack { return startStackYAML(tb, agentYAML, detach) }

// startStackYAML starts the stack with the assistant defined by def.
func startStackYAML(tb testing.TB, def string, detach bool) *stack {
	tb.Helper()
	return startStackModel(tb, def, detach, nil)
}

// startStackModel starts the stack with the assistant defined by def, its
// model wrapped by wrap (nil: none).
func startStackModel(tb testing.TB, def string, detach bool, wrap func(agent.Model) agent.Model) *stack {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "assistant.yaml"), []byte(def), 0o644); err != nil {
		tb.Fatal(err)
	}
	sandbox := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		tb.Fatal(err)
	}
	_, _, _, srv := serveDir(tb, dir, time.Minute, detach, wrap)
	return &stack{url: srv.URL, sandbox: sandbox, srv: srv}
}

// serveDir serves the agents of dir as hitch serve does (the test's store:
// memory, or a table of its own on DynamoDB Local under a "/dynamodb"
// subtest; the local model over the wire, dev auth, the A2A server), under
// the OpenAPI contract check. feed is what its dispatcher reads. wrap, when
// given and not nil, wraps the model the engine calls.
func serveDir(tb testing.TB, dir string, legTimeout time.Duration, detach bool, wrap ...func(agent.Model) agent.Model) (e *agent.Engine, store agent.Store, feed <-chan agent.OutboxItem, srv *httptest.Server) {
	tb.Helper()
	cat, err := catalog.LoadDir(dir, catalog.Env{Files: true})
	if err != nil {
		tb.Fatal(err)
	}
	model, stop, err := localmodel.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	for _, w := range wrap {
		if w != nil {
			model = w(model)
		}
	}
	log := slog.New(slog.DiscardHandler)
	store, feed = newStore(tb)
	e = &agent.Engine{Store: store, Model: model, Agents: cat, Log: log, LegTimeout: legTimeout, Artifacts: memstore.NewBytes()}
	api := &httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: log, A2A: &hitcha2a.Server{Engine: e, Log: log, Detach: detach}}
	srv = httptest.NewServer(contract.Check(tb, api.Handler()))
	tb.Cleanup(srv.Close)
	return e, store, feed, srv
}

// bearer adds a dev-auth token to every request.
type bearer struct{ user string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.user)
	return http.DefaultTransport.RoundTrip(r)
}

// client is the official Go SDK's client for user, built from the Agent Card.
func (s *stack) client(tb testing.TB, user string) *a2aclient.Client {
	tb.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, s.url+"/a2a/assistant")
	if err != nil {
		tb.Fatalf("resolve the agent card: %v", err)
	}
	hc := &http.Client{Transport: bearer{user}}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	return c
}

func text(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s)) }

func send(tb testing.TB, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	tb.Helper()
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		tb.Fatalf("SendMessage: %v", err)
	}
	t, ok := res.(*a2a.Task)
	if !ok {
		tb.Fatalf("SendMessage answered %T, want a task", res)
	}
	return t
}

func artifactText(t *a2a.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// pendingOf reads the pending calls from an input-required status.
func pendingOf(tb testing.TB, t *a2a.Task) []map[string]any {
	tb.Helper()
	if t.Status.Message == nil {
		tb.Fatalf("an input-required task without a status message")
	}
	for _, p := range t.Status.Message.Parts {
		if d, ok := p.Data().(map[string]any); ok {
			var out []map[string]any
			for _, x := range d["pending_approvals"].([]any) {
				out = append(out, x.(map[string]any))
			}
			return out
		}
	}
	tb.Fatalf("no data part in the status message: %+v", t.Status.Message)
	return nil
}

func TestAgentCard(t *testing.T) {
	s := startStack(t)
	for _, path := range []string{"/a2a/assistant/.well-known/agent-card.json", "/.well-known/agent-card.json"} {
		resp, err := http.Get(s.url + path) // no token: cards are public
		if err != nil {
			t.Fatal(err)
		}
		var card map[string]any
		err = json.NewDecoder(resp.Body).Decode(&card)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET %s = %d (%v)", path, resp.StatusCode, err)
		}
		want := map[string]any{"streaming": true, "pushNotifications": false, "extendedAgentCard": false}
		if diff := cmp.Diff(want, card["capabilities"]); diff != "" {
			t.Errorf("%s capabilities (-want +got):\n%s", path, diff)
		}
		ifs := card["supportedInterfaces"].([]any)
		first := ifs[0].(map[string]any)
		if first["url"] != s.url+"/a2a/assistant" || first["protocolBinding"] != "JSONRPC" || first["protocolVersion"] != "1.0" {
			t.Errorf("%s supportedInterfaces[0] = %v", path, first)
		}
		if n := len(card["skills"].([]any)); n != 6 {
			t.Errorf("%s: %d skills, want one per tool (6)", path, n)
		}
	}
	resp, err := http.Get(s.url + "/a2a/nobody/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("card of an unknown agent = %d, want 404", resp.StatusCode)
	}
}

func TestSendAndApprove(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	task := send(t, c, text("hello there"))
	if task.Status.State != a2a.TaskStateCompleted || artifactText(task) != "echo: hello there" {
		t.Fatalf("first message: %s %q", task.Status.State, artifactText(task))
	}
	// A follow-on in the same context is a new A2A task in the same Hitch task.
	m := text("again")
	m.ContextID = task.ContextID
	next := send(t, c, m)
	if next.ContextID != task.ContextID || next.ID == task.ID || artifactText(next) != "echo: again" {
		t.Fatalf("follow-on: context %s id %s output %q", next.ContextID, next.ID, artifactText(next))
	}

	if err := os.WriteFile(filepath.Join(s.sandbox, "old.log"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	paused := send(t, c, text(`/call delete_file {"path": "old.log"}`))
	if paused.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("delete: state %s, want input-required", paused.Status.State)
	}
	pending := pendingOf(t, paused)
	if len(pending) != 1 || pending[0]["name"] != "delete_file" {
		t.Fatalf("pending = %v", pending)
	}
	if _, err := os.Stat(filepath.Join(s.sandbox, "old.log")); err != nil {
		t.Fatalf("the file is gone before the approval: %v", err)
	}
	// Decisions that do not match the pending calls: -32602, nothing changes.
	bad := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{
		"decisions": []any{map[string]any{"tool_call_id": "tooluse_nope", "action": "approve"}}}))
	bad.TaskID = paused.ID
	_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: bad})
	if !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("mismatched decisions: %v, want invalid params", err)
	}
	got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: paused.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("after a refused decision: %v %v", got, err)
	}

	approve := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"action": "approve"}))
	approve.TaskID = paused.ID
	done := send(t, c, approve)
	if done.Status.State != a2a.TaskStateCompleted || done.ID != paused.ID {
		t.Fatalf("approve: %s id %s", done.Status.State, done.ID)
	}
	if !strings.Contains(artifactText(done), "delete_file success") {
		t.Errorf("output %q", artifactText(done))
	}
	if _, err := os.Stat(filepath.Join(s.sandbox, "old.log")); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
	// A message to a task in a terminal state: UnsupportedOperation.
	again := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("approve"))
	again.TaskID = paused.ID
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: again}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("message to a completed task: %v, want unsupported operation", err)
	}
	// GetTask shows the outcome; another user is told it does not exist.
	got, err = c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: paused.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || artifactText(got) != artifactText(done) {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
	if _, err := s.client(t, "bob").GetTask(context.Background(), &a2a.GetTaskRequest{ID: paused.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask by another user: %v, want task not found", err)
	}
	list, err := c.ListTasks(context.Background(), &a2a.ListTasksRequest{ContextID: task.ContextID})
	if err != nil || list.TotalSize != 2 || len(list.Tasks) != 2 || list.Tasks[0].ID != next.ID {
		t.Errorf("ListTasks(context) = %+v, %v", list, err)
	}
}

func TestStream(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	var events []a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: text("one two three")}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		events = append(events, ev)
	}
	if len(events) < 4 {
		t.Fatalf("%d events: %+v", len(events), events)
	}
	if _, ok := events[0].(*a2a.Task); !ok {
		t.Errorf("the stream begins with %T, want the task", events[0])
	}
	var out strings.Builder
	chunks := 0
	for _, ev := range events[1 : len(events)-1] {
		u, ok := ev.(*a2a.TaskArtifactUpdateEvent)
		if !ok {
			continue
		}
		if u.Append != (chunks > 0) {
			t.Errorf("chunk %d: append = %v", chunks, u.Append)
		}
		chunks++
		out.WriteString(u.Artifact.Parts[0].Text())
		if u.Artifact.ID != "output" {
			t.Errorf("artifact id %q", u.Artifact.ID)
		}
	}
	if out.String() != "echo: one two three" {
		t.Errorf("streamed answer %q", out.String())
	}
	last, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || last.Status.State != a2a.TaskStateCompleted {
		t.Errorf("last event %+v, want completed status", events[len(events)-1])
	}
}

func TestSubscribeAndCancel(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	paused := send(t, c, text(`/call delete_file {"path": "x"}`))
	var states []a2a.TaskState
	for ev, err := range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: paused.ID}) {
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			states = append(states, ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
		}
	}
	if len(states) < 2 || states[0] != a2a.TaskStateInputRequired || states[len(states)-1] != a2a.TaskStateInputRequired {
		t.Errorf("subscribe states %v: the task, then the replayed log up to the pause", states)
	}
	canceled, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: paused.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel = %+v, %v", canceled, err)
	}
	if _, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: paused.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("second cancel: %v, want not cancelable", err)
	}
	for _, err := range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: paused.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("subscribe to a canceled task: %v, want unsupported operation", err)
		}
		break
	}
}

// The 0.3 binding: no A2A-Version header, 0.3 method names and shapes, with
// the SDK's 0.3 client.
func TestV03(t *testing.T) {
	s := startStack(t)
	tr := a2av0.NewJSONRPCTransport(a2av0.JSONRPCTransportConfig{URL: s.url + "/a2a/assistant", Client: &http.Client{Transport: bearer{"alice"}}})
	ctx := context.Background()
	res, err := tr.SendMessage(ctx, a2aclient.ServiceParams{}, &a2a.SendMessageRequest{Message: text(`/call delete_file {"path": "y"}`)})
	if err != nil {
		t.Fatalf("message/send: %v", err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %s", task.Status.State)
	}
	reject := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("reject"))
	reject.TaskID = task.ID
	res, err = tr.SendMessage(ctx, a2aclient.ServiceParams{}, &a2a.SendMessageRequest{Message: reject})
	if err != nil {
		t.Fatalf("message/send (reject): %v", err)
	}
	if got := res.(*a2a.Task); got.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(got), "delete_file error") {
		t.Errorf("after reject: %s %q", got.Status.State, artifactText(got))
	}
	got, err := tr.GetTask(ctx, a2aclient.ServiceParams{}, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Errorf("tasks/get = %+v, %v", got, err)
	}
}

// Bad JSON-RPC gets the spec's codes with the Hitch code, as JSON under
// either version's shapes; a bad token is 401 before any JSON-RPC.
func TestRPCErrors(t *testing.T) {
	s := startStack(t)
	rpc := func(user, version, body string) (int, string, map[string]any) {
		req, _ := http.NewRequest("POST", s.url+"/a2a/assistant", strings.NewReader(body))
		req.Header.Set("Authorization", user)
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, resp.Header.Get("Content-Type"), m
	}
	codeOf := func(m map[string]any) (float64, string, string) {
		e, _ := m["error"].(map[string]any)
		code, _ := e["code"].(float64)
		message, _ := e["message"].(string)
		hitch := ""
		if data, ok := e["data"].([]any); ok && len(data) > 0 {
			if md, ok := data[len(data)-1].(map[string]any)["metadata"].(map[string]any); ok {
				hitch, _ = md["code"].(string)
			}
		}
		return code, hitch, message
	}
	const unknown = "0190c6a8-5d0e-7000-8000-000000000000"
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	tests := []struct {
		name, version, body string
		code                float64
		hitch               string
		// message is a part of the error's message ("" checks none).
		message string
	}{
		{"malformed JSON", "1.0", `{"jsonrpc":`, -32700, "", ""},
		{"not a request", "1.0", `{"jsonrpc":"2.0","id":1}`, -32600, "", ""},
		{"unknown method", "1.0", call("Frobnicate", `{}`), -32601, "", ""},
		{"unknown task", "1.0", call("GetTask", `{"id":"`+unknown+`"}`), -32001, "task_not_found", ""},
		{"not a task id", "1.0", call("GetTask", `{"id":"nope"}`), -32001, "task_not_found", ""},
		{"negative historyLength", "1.0", call("GetTask", `{"id":"`+unknown+`","historyLength":-1}`), -32602, "invalid_query", ""},
		{"unknown context", "1.0", call("SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","contextId":"`+unknown+`","parts":[{"text":"hi"}]}}`), -32001, "task_not_found", ""},
		{"unsupported media type", "1.0", call("SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"AAAA","mediaType":"audio/wav"}]}}`), -32005, "invalid_content_type", ""},
		{"push config", "1.0", call("GetTaskPushNotificationConfig", `{"taskId":"x","id":"y"}`), -32003, "push_notifications_not_supported", ""},
		{"extended card", "1.0", call("GetExtendedAgentCard", `{}`), -32004, "unsupported_operation", ""},
		{"unknown version", "2.0", call("GetTask", `{"id":"x"}`), -32009, "version_not_supported", ""},
		{"0.3 name under 1.0", "1.0", call("tasks/get", `{"id":"`+unknown+`"}`), -32001, "task_not_found", ""},

		// The 0.3 shapes (no A2A-Version): the same codes, as JSON.
		{"0.3 malformed JSON", "", `{"jsonrpc":`, -32700, "", ""},
		{"0.3 not a request", "", `{"jsonrpc":"2.0","id":1}`, -32600, "", ""},
		{"0.3 unknown method", "", call("tasks/frobnicate", `{}`), -32601, "", ""},
		{"0.3 unknown task", "", call("tasks/get", `{"id":"`+unknown+`"}`), -32001, "task_not_found", ""},
		{"0.3 params not an object", "", call("tasks/get", `[1]`), -32602, "", ""},

		// A missing task id is a missing parameter, not an unknown task.
		{"GetTask without id", "1.0", call("GetTask", `{}`), -32602, "invalid_id", "id"},
		{"GetTask with an empty id", "1.0", call("GetTask", `{"id":""}`), -32602, "invalid_id", "id"},
		{"GetTask without params", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, -32602, "invalid_id", "id"},
		{"0.3 tasks/get without id", "", call("tasks/get", `{}`), -32602, "invalid_id", "id"},
		{"CancelTask without id", "1.0", call("CancelTask", `{}`), -32602, "invalid_id", "id"},
		{"0.3 tasks/cancel without id", "", call("tasks/cancel", `{}`), -32602, "invalid_id", "id"},

		// ListTasks: each bad parameter is invalid params naming it.
		{"ListTasks unknown status", "1.0", call("ListTasks", `{"status":"TASK_STATE_DONE"}`), -32602, "invalid_query", "status"},
		{"ListTasks a 0.3 state name", "1.0", call("ListTasks", `{"status":"completed"}`), -32602, "invalid_query", "TASK_STATE_COMPLETED"},
		{"ListTasks status not a string", "1.0", call("ListTasks", `{"status":3}`), -32602, "invalid_query", "status"},
		{"ListTasks pageSize 0", "1.0", call("ListTasks", `{"pageSize":0}`), -32602, "invalid_query", "pageSize"},
		{"ListTasks pageSize 101", "1.0", call("ListTasks", `{"pageSize":101}`), -32602, "invalid_query", "pageSize"},
		{"ListTasks pageSize -1", "1.0", call("ListTasks", `{"pageSize":-1}`), -32602, "invalid_query", "pageSize"},
		{"ListTasks pageSize not an integer", "1.0", call("ListTasks", `{"pageSize":2.5}`), -32602, "invalid_query", "pageSize"},
		{"ListTasks pageSize a string", "1.0", call("ListTasks", `{"pageSize":"ten"}`), -32602, "invalid_query", "pageSize"},
		{"ListTasks malformed statusTimestampAfter", "1.0", call("ListTasks", `{"statusTimestampAfter":"yesterday"}`), -32602, "invalid_query", "statusTimestampAfter"},
		{"ListTasks statusTimestampAfter a number", "1.0", call("ListTasks", `{"statusTimestampAfter":1767225600}`), -32602, "invalid_query", "statusTimestampAfter"},
		{"ListTasks bad pageToken", "1.0", call("ListTasks", `{"pageToken":"x"}`), -32602, "invalid_query", "pageToken"},
		{"tasks/list pageSize 0, no version", "", call("tasks/list", `{"pageSize":0}`), -32602, "invalid_query", "pageSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ctype, m := rpc("Bearer alice", tt.version, tt.body)
			code, hitch, message := codeOf(m)
			if status != 200 || code != tt.code || hitch != tt.hitch {
				t.Errorf("= %d %v %q (%v), want 200 %v %q", status, code, hitch, m, tt.code, tt.hitch)
			}
			if !strings.Contains(message, tt.message) {
				t.Errorf("message %q does not say %q", message, tt.message)
			}
			if mt, _, _ := mime.ParseMediaType(ctype); mt != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ctype)
			}
			if m["jsonrpc"] != "2.0" {
				t.Errorf("not a JSON-RPC response: %v", m)
			}
		})
	}
	if status, _, _ := rpc("Basic xyz", "1.0", call("GetTask", `{"id":"x"}`)); status != 401 {
		t.Errorf("a bad token = %d, want 401", status)
	}
}

// ListTasks' filters and page size, as the spec has them: a status, a page
// of 1 to 100 (50 when absent), tasks whose status changed after a time.
// Refused parameters change nothing.
func TestListTasksParams(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	ctx := context.Background()
	done := send(t, c, text("hello"))
	paused := send(t, c, text(`/call delete_file {"path": "x"}`))
	ids := func(l *a2a.ListTasksResponse) []a2a.TaskID {
		var out []a2a.TaskID
		for _, t := range l.Tasks {
			out = append(out, t.ID)
		}
		return out
	}
	list := func(req *a2a.ListTasksRequest) *a2a.ListTasksResponse {
		t.Helper()
		l, err := c.ListTasks(ctx, req)
		if err != nil {
			t.Fatalf("ListTasks(%+v): %v", req, err)
		}
		return l
	}
	if l := list(&a2a.ListTasksRequest{}); l.TotalSize != 2 || l.PageSize != 50 || len(l.Tasks) != 2 {
		t.Errorf("no params: total %d, page %d, %v", l.TotalSize, l.PageSize, ids(l))
	}
	if l := list(&a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}); l.TotalSize != 1 || ids(l)[0] != done.ID {
		t.Errorf("completed: %v", ids(l))
	}
	if l := list(&a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired}); l.TotalSize != 1 || ids(l)[0] != paused.ID {
		t.Errorf("input-required: %v", ids(l))
	}
	if l := list(&a2a.ListTasksRequest{Status: a2a.TaskStateRejected}); l.TotalSize != 0 || len(l.Tasks) != 0 {
		t.Errorf("rejected: %v", ids(l))
	}
	first := list(&a2a.ListTasksRequest{PageSize: 1})
	if first.PageSize != 1 || len(first.Tasks) != 1 || first.Tasks[0].ID != paused.ID || first.NextPageToken == "" {
		t.Fatalf("a page of 1: %v next %q", ids(first), first.NextPageToken)
	}
	if l := list(&a2a.ListTasksRequest{PageSize: 100, PageToken: first.NextPageToken}); len(l.Tasks) != 1 || l.Tasks[0].ID != done.ID || l.NextPageToken != "" {
		t.Errorf("the next page: %v next %q", ids(l), l.NextPageToken)
	}
	before := done.Status.Timestamp.Add(-time.Hour)
	if l := list(&a2a.ListTasksRequest{StatusTimestampAfter: &before}); l.TotalSize != 2 {
		t.Errorf("after an hour ago: %v", ids(l))
	}
	later := time.Now().Add(time.Hour)
	if l := list(&a2a.ListTasksRequest{StatusTimestampAfter: &later}); l.TotalSize != 0 {
		t.Errorf("after an hour from now: %v", ids(l))
	}
	for _, bad := range []*a2a.ListTasksRequest{{Status: "TASK_STATE_DONE"}, {PageSize: 101}, {PageSize: -3}} {
		if _, err := c.ListTasks(ctx, bad); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("ListTasks(%+v): %v, want invalid params", bad, err)
		}
	}
	if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: paused.ID}); err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("the paused task after the refused calls: %+v %v", got, err)
	}
	if l := list(&a2a.ListTasksRequest{}); l.TotalSize != 2 {
		t.Errorf("after the refused calls: %v", ids(l))
	}
}

// The official A2A JavaScript SDK's client (tools/a2a-js, installed by `make
// tools`) drives a whole flow — card, send, stream, an approval through
// input-required, cancel, resubscribe after a drop — over 1.0 and over 0.3.
func TestJSClient(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "tools", "a2a-js", "flow.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@a2a-js", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the A2A JS client is not installed (make tools): %v", err)
		}
		t.Skipf("the A2A JS client is not installed (make tools): %v", err)
	}
	for _, protocol := range []string{"1.0", "0.3"} {
		t.Run(protocol, func(t *testing.T) {
			s := startStack(t)
			target := filepath.Join(s.sandbox, "js-"+protocol+".txt")
			if err := os.WriteFile(target, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, script, s.url, "assistant", "alice", protocol).CombinedOutput()
			t.Logf("node flow.mjs (%s):\n%s", protocol, out)
			if err != nil || !strings.Contains(string(out), "ALL OK "+protocol) {
				t.Fatalf("the JS client's flow failed: %v", err)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("the approved delete did not delete %s: %v", target, err)
			}
		})
	}
}

// returnImmediately answers the working task at once. Under hitch serve
// (detach) the request goes on after the answer; on Lambda the call ends only
// once the request has ended, so the invocation outlives it.
func TestReturnImmediately(t *testing.T) {
	for _, detach := range []bool{true, false} {
		s := startStackWith(t, detach)
		c := s.client(t, "alice")
		res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{
			Message: text("quick"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatalf("detach=%v: %v", detach, err)
		}
		task := res.(*a2a.Task)
		if task.Status.State != a2a.TaskStateWorking {
			t.Errorf("detach=%v: answered %s, want working", detach, task.Status.State)
		}
		got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
		for i := 0; detach && err == nil && got.Status.State == a2a.TaskStateWorking && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
			got, err = c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
		}
		if err != nil || got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "echo: quick" {
			t.Errorf("detach=%v: then GetTask = %+v, %v", detach, got, err)
		}
	}
}
