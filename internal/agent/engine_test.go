package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// echoTool returns its input's "text", or fails when it is "fail".
type echoTool struct {
	mu    sync.Mutex
	runs  int
	delay time.Duration
}

func (t *echoTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (t *echoTool) Run(ctx context.Context, c agent.ToolCall) (agent.ToolOutput, error) {
	t.mu.Lock()
	t.runs++
	t.mu.Unlock()
	if t.delay > 0 {
		select {
		case <-time.After(t.delay):
		case <-ctx.Done():
			return agent.ToolOutput{}, ctx.Err()
		}
	}
	var in struct{ Text string }
	_ = json.Unmarshal(c.Input, &in)
	if in.Text == "fail" {
		return agent.ToolOutput{}, errors.New("echo failed on purpose")
	}
	if in.Text == "panic" {
		panic("echo panicked")
	}
	return agent.ToolOutput{Content: []agent.Block{agent.TextBlock(in.Text)}}, nil
}

func (t *echoTool) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs
}

type agentSet map[string]*agent.Agent

func (s agentSet) Get(n string) (*agent.Agent, bool) { a, ok := s[n]; return a, ok }

type fixture struct {
	e     *agent.Engine
	store agent.Store
	model *agenttest.ScriptModel
	tool  *echoTool
	now   time.Time
	mu    sync.Mutex
}

func newFixture(tb testing.TB, store agent.Store) *fixture {
	tb.Helper()
	if store == nil {
		store = memstore.New()
	}
	f := &fixture{store: store, model: &agenttest.ScriptModel{}, tool: &echoTool{}, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	ag := &agent.Agent{Name: "acc", Version: "0.1", ModelID: "m", MaxIterations: 4, MaxToolResultBytes: 64,
		Tools: []agent.BoundTool{{Tool: f.tool}}}
	f.e = &agent.Engine{Store: store, Model: f.model, Agents: agentSet{"acc": ag}, LegTimeout: time.Minute, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }}
	return f
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

type recorder struct {
	mu     sync.Mutex
	events []agent.Event
}

func (r *recorder) Emit(e agent.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Name)
	}
	return out
}

func text(s string) []agent.InputItem { return []agent.InputItem{{ContentType: "text", Content: s}} }

func (f *fixture) invoke(tb testing.TB, in agent.InvokeInput) (*agent.RequestResult, *recorder) {
	tb.Helper()
	if in.Agent == "" {
		in.Agent = "acc"
	}
	if in.UserID == "" {
		in.UserID = "alice"
	}
	run, err := f.e.StartInvoke(context.Background(), in)
	if err != nil {
		tb.Fatalf("StartInvoke: %v", err)
	}
	rec := &recorder{}
	return run.Execute(context.Background(), rec), rec
}

func TestNewTaskCompletes(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Add(agenttest.Say("echo:", " hi"))
	res, rec := f.invoke(t, agent.InvokeInput{Items: text("hi"), Metadata: map[string]string{"ticket": "A-1"}})
	if res.Status != agent.StatusCompleted || res.Output != "echo: hi" || res.StopReason != "end_turn" {
		t.Fatalf("result = %+v", res)
	}
	if diff := cmp.Diff([]string{"request_started", "answer", "answer", "request_complete"}, rec.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for i, e := range rec.events {
		if e.ID != int64(i+1) {
			t.Errorf("event %d has id %d", i, e.ID)
		}
	}
	if want := (agent.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}); res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	if res.Source != "acc:0.1" {
		t.Errorf("source = %q", res.Source)
	}
	v, err := f.e.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != agent.StatusCompleted || len(v.Items) != 2 || len(v.Requests) != 1 || v.Metadata["ticket"] != "A-1" {
		t.Fatalf("task view = %+v", v)
	}
	if v.Items[0].Role != "user" || v.Items[1].Role != "assistant" || v.Items[1].Content[0]["text"] != "echo: hi" {
		t.Errorf("items = %+v", v.Items)
	}
	if r := v.Requests[0]; r.RequestID != res.RequestID || r.Status != agent.StatusCompleted || *r.StopReason != "end_turn" {
		t.Errorf("request = %+v", r)
	}
}

func TestFollowOnSeesHistory(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Add(agenttest.Say("first answer"), agenttest.Say("second answer"))
	first, _ := f.invoke(t, agent.InvokeInput{Items: text("first question")})
	second, _ := f.invoke(t, agent.InvokeInput{TaskID: first.TaskID, SessionID: first.SessionID, Items: text("second question")})
	if second.Status != agent.StatusCompleted || second.TaskID != first.TaskID || second.RequestID == first.RequestID {
		t.Fatalf("second = %+v", second)
	}
	var got []string
	for _, m := range f.model.Call(1).Messages {
		for _, b := range m.Content {
			got = append(got, m.Role+":"+b.Text)
		}
	}
	want := []string{"user:first question", "assistant:first answer", "user:second question"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages of the follow-on (-want +got):\n%s", diff)
	}
}

func TestToolIteration(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Add(
		agenttest.CallTools(agent.StopToolUse, agenttest.Use("t1", "echo", `{"text":"one"}`), agenttest.Use("t2", "echo", `{"text":"fail"}`), agenttest.Use("t3", "nope", `{}`)),
		agenttest.Say("done"))
	res, rec := f.invoke(t, agent.InvokeInput{Items: text("go")})
	if res.Status != agent.StatusCompleted || res.Output != "done" {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"request_started", "tool_call", "tool_call", "tool_call", "tool_result", "tool_result", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, rec.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	results := f.model.Call(1).Messages[2].Content
	if len(results) != 3 || results[0].Status != "success" || results[1].Status != "error" || results[2].Status != "error" {
		t.Fatalf("results sent to the model = %+v", results)
	}
	if !strings.Contains(results[1].Content[0].Text, "echo failed on purpose") || !strings.Contains(results[2].Content[0].Text, `unknown tool "nope"`) {
		t.Errorf("error results = %+v", results)
	}
	if f.tool.count() != 2 {
		t.Errorf("echo ran %d times, want 2", f.tool.count())
	}
	if res.Usage.TotalTokens != 6+11 {
		t.Errorf("usage = %+v, want summed over the model calls", res.Usage)
	}
}

func TestToolResultTruncated(t *testing.T) {
	f := newFixture(t, nil)
	long := strings.Repeat("x", 100)
	f.model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("t1", "echo", `{"text":"`+long+`"}`)), agenttest.Say("ok"))
	f.invoke(t, agent.InvokeInput{Items: text("go")})
	got := f.model.Call(1).Messages[2].Content[0].Content[0].Text
	if want := strings.Repeat("x", 64) + "[truncated: 36 bytes]"; got != want {
		t.Errorf("truncated result = %q, want %q", got, want)
	}
}

func TestOutcomes(t *testing.T) {
	throttled := &agent.Error{Code: agent.CodeThrottled, Message: "slow down"}
	for _, tc := range []struct {
		name       string
		turns      []agenttest.Turn
		status     agent.Status
		stop, code string
	}{
		{"max_tokens closes calls", tcs(agenttest.CallTools(agent.StopMaxTokens, agenttest.Use("t1", "echo", `{}`))), agent.StatusCompleted, "max_tokens", ""},
		{"guardrail", tcs(agenttest.CallTools(agent.StopGuardrail, agent.TextBlock("no"))), agent.StatusCompleted, "guardrail_intervened", ""},
		{"content filtered", tcs(agenttest.CallTools(agent.StopContentFiltered, agent.TextBlock("no"))), agent.StatusCompleted, "content_filtered", ""},
		{"context window", tcs(agenttest.CallTools(agent.StopContextWindow, agent.TextBlock("x"))), agent.StatusFailed, "", "context_window_exceeded"},
		{"throttled", tcs(agenttest.FailWith(throttled)), agent.StatusFailed, "", "throttled"},
		{"model error", tcs(agenttest.FailWith(errors.New("boom"))), agent.StatusFailed, "", "model_error"},
		{"max iterations", tcs(
			agenttest.CallTools(agent.StopToolUse, agenttest.Use("a", "echo", `{}`)), agenttest.CallTools(agent.StopToolUse, agenttest.Use("b", "echo", `{}`)),
			agenttest.CallTools(agent.StopToolUse, agenttest.Use("c", "echo", `{}`)), agenttest.CallTools(agent.StopToolUse, agenttest.Use("d", "echo", `{}`))),
			agent.StatusCompleted, "max_iterations", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.model.Add(tc.turns...)
			res, rec := f.invoke(t, agent.InvokeInput{Items: text("go")})
			if res.Status != tc.status || res.StopReason != tc.stop {
				t.Fatalf("result = %+v, want %s %q", res, tc.status, tc.stop)
			}
			names := rec.names()
			last := names[len(names)-1]
			if tc.code != "" {
				if res.Error == nil || res.Error.Code != tc.code || last != "error" {
					t.Fatalf("error = %+v, last event %s; want code %s", res.Error, last, tc.code)
				}
			} else if last != "request_complete" {
				t.Fatalf("last event %s", last)
			}
			// The task takes a follow-on that Bedrock would accept.
			f.model.Add(agenttest.Say("again"))
			next, _ := f.invoke(t, agent.InvokeInput{TaskID: res.TaskID, Items: text("again")})
			if next.Status != agent.StatusCompleted {
				t.Fatalf("follow-on = %+v", next)
			}
			if err := agenttest.CheckMessages(f.model.Call(f.model.NCalls() - 1).Messages); err != nil {
				t.Errorf("follow-on messages: %v", err)
			}
		})
	}
}

func tcs(fs ...agenttest.Turn) []agenttest.Turn {
	return fs
}

func TestDeadline(t *testing.T) {
	f := newFixture(t, nil)
	f.e.LegTimeout = 50 * time.Millisecond
	f.e.Now = nil // real time for the deadline
	f.model.Add(func(_ context.Context, r *agent.ModelRequest, _ func(agent.Delta)) (*agent.ModelResponse, error) {
		return &agent.ModelResponse{Content: []agent.Block{agenttest.Use("t1", "echo", `{"text":"slow"}`)}, StopReason: agent.StopToolUse}, nil
	})
	f.tool.delay = 10 * time.Second
	res, _ := f.invoke(t, agent.InvokeInput{Items: text("go")})
	if res.Status != agent.StatusFailed || res.Error.Code != agent.CodeDeadlineExceeded {
		t.Fatalf("result = %+v", res)
	}
	f.model.Add(agenttest.Say("ok"))
	f.e.LegTimeout = time.Minute
	next, _ := f.invoke(t, agent.InvokeInput{TaskID: res.TaskID, Items: text("again")})
	if next.Status != agent.StatusCompleted {
		t.Fatalf("follow-on = %+v", next)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Add(agenttest.Say("ok"))
	done, _ := f.invoke(t, agent.InvokeInput{Items: text("hi")})
	for _, tc := range []struct {
		name string
		in   agent.InvokeInput
		code string
	}{
		{"no items", agent.InvokeInput{}, agent.CodeInvalidItems},
		{"empty text", agent.InvokeInput{Items: text(" ")}, agent.CodeInvalidItems},
		{"bad content type", agent.InvokeInput{Items: []agent.InputItem{{ContentType: "audio", Content: "x"}}}, agent.CodeInvalidContentType},
		{"bad image", agent.InvokeInput{Items: []agent.InputItem{{ContentType: "image", Content: "data:image/png;base64,AAAA"}}}, agent.CodeInvalidImage},
		{"not a data uri", agent.InvokeInput{Items: []agent.InputItem{{ContentType: "image", Content: "http://x/y.png"}}}, agent.CodeInvalidImage},
		{"bad task id", agent.InvokeInput{TaskID: "nope", Items: text("x")}, agent.CodeInvalidID},
		{"bad session id", agent.InvokeInput{SessionID: "123", Items: text("x")}, agent.CodeInvalidID},
		{"too much metadata", agent.InvokeInput{Items: text("x"), Metadata: map[string]string{"k": strings.Repeat("v", 9000)}}, agent.CodeInvalidMetadata},
		{"unknown agent", agent.InvokeInput{Agent: "nobody", Items: text("x")}, agent.CodeAgentNotFound},
		{"unknown task", agent.InvokeInput{TaskID: agent.NewID(), Items: text("x")}, agent.CodeTaskNotFound},
		{"another user's task", agent.InvokeInput{UserID: "mallory", TaskID: done.TaskID, Items: text("x")}, agent.CodeNotOwner},
		{"another user's session", agent.InvokeInput{UserID: "mallory", SessionID: done.SessionID, Items: text("x")}, agent.CodeNotOwner},
		{"session mismatch", agent.InvokeInput{TaskID: done.TaskID, SessionID: agent.NewID(), Items: text("x")}, agent.CodeSessionMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.Agent == "" {
				tc.in.Agent = "acc"
			}
			if tc.in.UserID == "" {
				tc.in.UserID = "alice"
			}
			before, items, _ := f.store.LoadTask(context.Background(), done.TaskID)
			_, err := f.e.StartInvoke(context.Background(), tc.in)
			if got := agent.CodeOf(err); got != tc.code {
				t.Fatalf("code = %s (%v), want %s", got, err, tc.code)
			}
			after, items2, _ := f.store.LoadTask(context.Background(), done.TaskID)
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the task changed (-before +after):\n%s", diff)
			}
			if len(items) != len(items2) {
				t.Errorf("history went from %d to %d entries", len(items), len(items2))
			}
			list, _, _ := f.store.ListUserTasks(context.Background(), agent.ListQuery{UserID: "mallory", Agent: "acc", Limit: 10})
			if len(list) != 0 {
				t.Errorf("mallory has tasks: %+v", list)
			}
		})
	}
}

func TestBusyAndLeaseRecovery(t *testing.T) {
	f := newFixture(t, nil)
	run, err := f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: text("one")})
	if err != nil {
		t.Fatal(err)
	}
	// The run's Lambda dies here: it never executes or commits.
	tid := run.Task().ID
	f.model.Add(agenttest.Say("ok"))
	_, err = f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: tid, Items: text("two")})
	if agent.CodeOf(err) != agent.CodeTaskBusy {
		t.Fatalf("while running: %v, want task_busy", err)
	}
	f.advance(2 * time.Minute) // past the lease
	res, _ := f.invoke(t, agent.InvokeInput{TaskID: tid, Items: text("two")})
	if res.Status != agent.StatusCompleted {
		t.Fatalf("after lease expiry: %+v", res)
	}
	v, err := f.e.GetTask(context.Background(), "acc", "alice", tid, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Requests) != 2 || v.Requests[0].Status != agent.StatusFailed || v.Requests[0].Error.Code != agent.CodeLeaseExpired {
		t.Fatalf("requests = %+v", v.Requests)
	}
}

// failingStore fails the n-th Write (1-based) once.
type failingStore struct {
	agent.Store
	mu     sync.Mutex
	writes int
	failAt int
}

func (s *failingStore) Write(ctx context.Context, w *agent.Write) error {
	s.mu.Lock()
	s.writes++
	n := s.writes
	s.mu.Unlock()
	if n == s.failAt {
		return errors.New("injected store failure")
	}
	return s.Store.Write(ctx, w)
}

func TestStoreFailureAtEachWrite(t *testing.T) {
	// A new task with one tool iteration writes: create, record calls, commit.
	for failAt := 1; failAt <= 3; failAt++ {
		t.Run(fmt.Sprint("write ", failAt), func(t *testing.T) {
			fs := &failingStore{Store: memstore.New(), failAt: failAt}
			f := newFixture(t, fs)
			f.model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("t1", "echo", `{"text":"one"}`)), agenttest.Say("done"))
			run, err := f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: text("go")})
			if failAt == 1 {
				if agent.CodeOf(err) != agent.CodeInternal {
					t.Fatalf("create with a failing store: %v", err)
				}
				list, _, _ := fs.ListUserTasks(context.Background(), agent.ListQuery{UserID: "alice", Agent: "acc", Limit: 10})
				if len(list) != 0 {
					t.Fatalf("a task was half-created: %+v", list)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := run.Execute(context.Background(), nil)
			if res.Status != agent.StatusFailed || res.Error.Code != agent.CodeInternal {
				t.Fatalf("result = %+v", res)
			}
			if failAt == 2 && f.tool.count() != 0 {
				t.Errorf("the tool ran although its call was not recorded")
			}
			_, items, err := fs.LoadTask(context.Background(), res.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if err := agenttest.CheckMessages(agent.BuildMessages(nil, items)); err != nil {
				t.Errorf("history after the failure: %v", err)
			}
			for _, it := range items {
				for _, u := range it.ToolUses() {
					if !hasResult(items, u.ID) {
						t.Errorf("tool call %s has no result", u.ID)
					}
				}
			}
			f.model.Add(agenttest.Say("again"))
			next, _ := f.invoke(t, agent.InvokeInput{TaskID: res.TaskID, Items: text("again")})
			if next.Status != agent.StatusCompleted {
				t.Fatalf("the task is not usable again: %+v", next)
			}
		})
	}
}

func hasResult(items []agent.Item, id string) bool {
	for _, it := range items {
		for _, b := range it.Content {
			if b.Type == agent.BlockToolResult && b.ToolUseID == id {
				return true
			}
		}
	}
	return false
}
