// Package enginetest is the engine's behaviour suite over a real store: the
// human-in-the-loop rules of docs/api.md and docs/architecture.md (pause, resume exactly once,
// decisions, rounds, expiry, takeover), run against the in-memory store and
// DynamoDB Local with the same code.
package enginetest

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

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Tool counts its runs and echoes its input's text; it needs {"text": string}.
type Tool struct {
	Name string
	mu   sync.Mutex
	runs []string
	// Block, when set, is waited on by every run.
	Block chan struct{}
}

var schema = tools.MustCompileSchema(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)

// Spec implements agent.Tool.
func (t *Tool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: t.Name, Description: "records its text", InputSchema: schema.Raw()}
}

// ValidateInput implements agent.InputValidator.
func (t *Tool) ValidateInput(in json.RawMessage) error { return schema.Validate(in) }

// Run implements agent.Tool.
func (t *Tool) Run(ctx context.Context, c agent.ToolCall) (agent.ToolOutput, error) {
	if t.Block != nil {
		select {
		case <-t.Block:
		case <-ctx.Done():
			return agent.ToolOutput{}, ctx.Err()
		}
	}
	var in struct{ Text string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return agent.ToolOutput{}, err
	}
	t.mu.Lock()
	t.runs = append(t.runs, in.Text)
	t.mu.Unlock()
	return agent.ToolOutput{Content: []agent.Block{agent.TextBlock(t.Name + " did " + in.Text)}}, nil
}

// Runs returns the texts the tool ran with.
func (t *Tool) Runs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.runs...)
}

type agentSet map[string]*agent.Agent

func (s agentSet) Get(n string) (*agent.Agent, bool) { a, ok := s[n]; return a, ok }

// Env is one engine over one store.
type Env struct {
	E       *agent.Engine
	Store   agent.Store
	Model   *agenttest.ScriptModel
	Safe    *Tool // needs no approval
	Guarded *Tool // needs approval, not idempotent
	Retry   *Tool // needs approval, idempotent
	// Slow needs no approval and is not idempotent; tests set its Block to
	// hold a leg inside a tool (a process that dies mid-batch).
	Slow *Tool
	// Booker asks for input while it runs, as an MCP server's elicitation.
	Booker *Elicitor
	// Sandbox is the root of the real files tools: append_file needs
	// approval (its side effect counts runs the way a user sees them).
	Sandbox string
	mu      sync.Mutex
	now     time.Time
}

// New builds an engine over the store with a scripted model.
func New(tb testing.TB, store agent.Store) *Env {
	tb.Helper()
	env := &Env{Store: store, Model: &agenttest.ScriptModel{}, Safe: &Tool{Name: "safe"}, Guarded: &Tool{Name: "guarded"}, Retry: &Tool{Name: "retry"},
		Slow: &Tool{Name: "slow"}, Booker: &Elicitor{Name: "book_table"}, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	env.Sandbox = tb.TempDir()
	ag := &agent.Agent{Name: "acc", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
		{Tool: env.Safe},
		{Tool: env.Guarded, Policy: agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour}},
		{Tool: env.Retry, Policy: agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour, Idempotent: true}},
		{Tool: env.Slow},
		{Tool: env.Booker, Policy: agent.ToolPolicy{InputTTL: 2 * time.Hour}},
	}}
	// Input tools (docs/api.md, "Pauses for input"): ask_user and a client
	// tool whose result names a region.
	pick, err := tools.NewClient(tools.ClientConfig{Name: "pick_region", Description: "Let the user pick a region on a map",
		InputSchema:  tools.MustCompileSchema(`{"type":"object","properties":{"hint":{"type":"string"}}}`),
		ResultSchema: mustValueSchema(`{"type":"object","properties":{"region":{"type":"string"}},"required":["region"]}`)})
	if err != nil {
		tb.Fatal(err)
	}
	ag.Tools = append(ag.Tools, agent.BoundTool{Tool: tools.AskUser{}, Policy: agent.ToolPolicy{InputTTL: 2 * time.Hour}},
		agent.BoundTool{Tool: pick, Policy: agent.ToolPolicy{InputTTL: 2 * time.Hour}})
	for _, b := range tools.Files(tools.FilesConfig{Root: env.Sandbox}) {
		if b.Tool.Spec().Name == "append_file" {
			ag.Tools = append(ag.Tools, agent.BoundTool{Tool: b.Tool, Policy: agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour}})
		}
	}
	// Every notification subscribed, and every outbox item checked never
	// to be put twice with other content (docs/architecture.md: an item is
	// never overwritten; a receiver deduplicates on its id).
	ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/acc", Events: agent.NotificationEvents}}
	store = &outboxGuard{Store: store, tb: tb, seen: map[string]string{}}
	env.Store = store
	env.E = &agent.Engine{Store: store, Model: env.Model, Agents: agentSet{"acc": ag}, LegTimeout: time.Minute,
		Log: slog.New(slog.DiscardHandler), Now: env.Now}
	return env
}

// Now is the engine's clock.
func (env *Env) Now() time.Time {
	env.mu.Lock()
	defer env.mu.Unlock()
	return env.now
}

// Advance moves the engine's clock.
func (env *Env) Advance(d time.Duration) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.now = env.now.Add(d)
}

// Recorder collects events.
type Recorder struct {
	mu     sync.Mutex
	Events []agent.Event
}

// Emit implements agent.Sink.
func (r *Recorder) Emit(e agent.Event) { r.mu.Lock(); r.Events = append(r.Events, e); r.mu.Unlock() }

// Names lists the events' names.
func (r *Recorder) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Name)
	}
	return out
}

// Invoke starts and runs a message.
func (env *Env) Invoke(tb testing.TB, taskID, text string) (*agent.RequestResult, *Recorder) {
	tb.Helper()
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: taskID,
		Items: []agent.InputItem{{Content: text}}})
	if err != nil {
		tb.Fatalf("invoke: %v", err)
	}
	rec := &Recorder{}
	return run.Execute(context.Background(), rec), rec
}

// Resume decides and runs; err is the refusal, if any.
func (env *Env) Resume(res *agent.RequestResult, user string, body agent.ResumeRequest) (*agent.RequestResult, *Recorder, error) {
	run, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: user, TaskID: res.TaskID, RequestID: res.RequestID, Body: body})
	if err != nil {
		return nil, nil, err
	}
	rec := &Recorder{}
	return run.Execute(context.Background(), rec), rec, nil
}

// Call is a tool_use of the scripted model.
func Call(id, name, text string) agent.Block {
	return agenttest.Use(id, name, `{"text":"`+text+`"}`)
}

// Pause scripts a turn with a safe and a guarded call and runs it to the pause.
func (env *Env) Pause(tb testing.TB) (*agent.RequestResult, *Recorder) {
	tb.Helper()
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "look"), Call("g1", "guarded", "delete")))
	res, rec := env.Invoke(tb, "", "do it")
	if res.Status != agent.StatusPaused {
		tb.Fatalf("want Paused, got %+v", res)
	}
	return res, rec
}

// Code is an error's code, or "" for nil.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var e *agent.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "internal: " + err.Error()
}

// Approve is approve-all.
func Approve() agent.ResumeRequest { return agent.ResumeRequest{Action: agent.ActionApprove} }

// Reject is reject-all with a reason.
func Reject(reason string) agent.ResumeRequest {
	return agent.ResumeRequest{Action: agent.ActionReject, Reason: reason}
}

// Round is a pointer to n.
func Round(n int) *int { return &n }

func lastText(req *agent.ModelRequest) string {
	m := req.Messages[len(req.Messages)-1]
	var parts []string
	for _, b := range m.Content {
		if b.Type == agent.BlockToolResult {
			for _, c := range b.Content {
				parts = append(parts, b.ToolUseID+"="+b.Status+":"+c.Text)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// outboxGuard fails the test when a write puts an outbox item whose key
// an earlier write put: with another event or round, the second would
// overwrite the first, or reach a receiver under the first's id and be
// dropped as a redelivery; with the same, it would deliver again an item
// delivered and deleted meanwhile (a webhook sent twice after its 2xx).
// Only the same write, tried again, puts a key twice.
type outboxGuard struct {
	agent.Store
	tb   testing.TB
	mu   sync.Mutex
	seen map[string]string // task/SK → event, round, the write's id
}

func (g *outboxGuard) Write(ctx context.Context, w *agent.Write) error {
	err := g.Store.Write(ctx, w)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var outbox []agent.OutboxItem
	for _, x := range append([]*agent.Write{w}, w.With...) {
		outbox = append(outbox, x.Outbox...)
	}
	for _, o := range outbox {
		k := o.TaskID + "/" + o.SK()
		v := fmt.Sprintf("%s %s round %d by write %s", o.Kind, o.Event, o.Round, w.Task.WriteID)
		if prev, ok := g.seen[k]; ok && prev != v {
			g.tb.Errorf("outbox item %s put twice: %s, then %s", k, prev, v)
		}
		g.seen[k] = v
	}
	return nil
}

func mustValueSchema(raw string) *tools.Schema {
	s, err := tools.CompileValueSchema(json.RawMessage(raw))
	if err != nil {
		panic(err)
	}
	return s
}
