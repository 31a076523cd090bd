package perf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// The prompt-caching benchmark's task: 20 turns, each a tool loop of three
// model calls (a search, a second tool, the answer); in every fourth turn
// the second tool changes a ticket and waits for an approval answered 30 s
// later. The agent has a system prompt of 1,200 words and three tools; each
// tool answers 120 words. The clock the local model's cache TTLs run on
// moves 2 s per model call, 1 s per tool call and 60 s between turns (a
// person reading the answer and typing the next message): nothing sleeps.
const (
	cacheTurns       = 20
	approvalEvery    = 4
	approvalWait     = 30 * time.Second
	betweenTurns     = 60 * time.Second
	perModelCall     = 2 * time.Second
	perToolCall      = time.Second
	systemWords      = 1200
	toolOutputWords  = 120
	userMessageWords = 30
)

// Claude Sonnet 4 (and 4.5, up to 200K input tokens) on Bedrock, on-demand,
// us-east-1, in dollars per million tokens: the price list of
// https://aws.amazon.com/bedrock/pricing/ (Anthropic's own list prices are
// the same).
const (
	priceInput      = 3.00
	priceCacheRead  = 0.30
	priceCacheWrite = 3.75 // a 5-minute TTL; 1h writes cost 6.00
	priceOutput     = 15.00
)

// fakeClock is the clock of the engine and of the local model's cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// ticketTool is one of the task's tools: it answers toolOutputWords words.
type ticketTool struct {
	name, description string
	clock             *fakeClock
}

func (t *ticketTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: t.name, Description: t.description, InputSchema: json.RawMessage(
		`{"type":"object","properties":{"id":{"type":"string","description":"The ticket's id, such as T-1042."},` +
			`"query":{"type":"string","description":"Words to look for in the tickets' titles and bodies."}},"additionalProperties":false}`)}
}

func (t *ticketTool) Run(_ context.Context, c agent.ToolCall) (agent.ToolOutput, error) {
	t.clock.Advance(perToolCall)
	out := t.name + " " + string(c.Input) + ": " + strings.TrimSpace(strings.Repeat("status open priority high owner alice updated today ", toolOutputWords/8))
	return agent.ToolOutput{Content: []agent.Block{agent.TextBlock(out)}}, nil
}

// usageModel sums the usage of every model call and keeps each.
type usageModel struct {
	agent.Model
	mu      sync.Mutex
	usage   agent.Usage
	calls   int
	perCall []agent.Usage
}

func (m *usageModel) Converse(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	resp, err := m.Model.Converse(ctx, req, on)
	if resp != nil {
		m.mu.Lock()
		m.usage, m.calls = m.usage.Add(resp.Usage), m.calls+1
		m.perCall = append(m.perCall, resp.Usage)
		m.mu.Unlock()
	}
	return resp, err
}

// cacheRun runs the task's turns on a local model of its own, with caching
// at ttl (0: off).
type cacheRun struct {
	tb     testing.TB
	clock  *fakeClock
	model  *usageModel
	e      *agent.Engine
	taskID string
	turn   int
}

func newCacheRun(tb testing.TB, ttl time.Duration) *cacheRun {
	return newCacheRunOn(tb, ttl, memstore.New())
}

// newCacheRunOn runs the task over store. A DynamoDB store's engine keeps
// the real clock (DynamoDB Local reads TTLs with it); the model's cache runs
// on the task's clock all the same.
func newCacheRunOn(tb testing.TB, ttl time.Duration, store agent.Store) *cacheRun {
	tb.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	handler := localmodel.NewHandler(localmodel.WithClock(clock.Now))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clock.Advance(perModelCall)
		handler.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	model := &usageModel{Model: bedrock.New(bedrock.EndpointClient(srv.URL))}
	ag := &agent.Agent{
		Name: "support", Version: "1", ModelID: "local", MaxIterations: 10, CacheTTL: ttl,
		SystemPrompt: strings.TrimSpace(strings.Repeat("You answer support tickets: look them up, read them, and change them only when asked. ", systemWords/15)),
		Tools: []agent.BoundTool{
			{Tool: &ticketTool{name: "search_tickets", description: "Finds the tickets whose title or body holds the query's words, newest first, at most twenty.", clock: clock}},
			{Tool: &ticketTool{name: "read_ticket", description: "Reads one ticket: its title, body, status, priority, owner and the last ten comments.", clock: clock}},
			{Tool: &ticketTool{name: "update_ticket", description: "Changes a ticket's status, priority or owner, or adds a comment; a person approves every change first.", clock: clock},
				Policy: agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour}},
		},
	}
	e := &agent.Engine{Store: store, Model: model, Agents: oneAgent{ag}, Log: slog.New(slog.DiscardHandler),
		LegTimeout: time.Minute, Now: clock.Now}
	if _, mem := store.(*memstore.Store); !mem {
		e.Now = nil
	}
	return &cacheRun{tb: tb, clock: clock, model: model, e: e}
}

// next runs the task's next turn; after the last, the next task's first
// (two hours later: its cache is cold).
func (r *cacheRun) next() {
	tb := r.tb
	tb.Helper()
	if r.turn == cacheTurns {
		r.turn, r.taskID = 0, ""
		r.clock.Advance(2 * time.Hour)
	}
	r.turn++
	turn := r.turn
	ctx := context.Background()
	question := strings.TrimSpace(strings.Repeat("please look at the customer's latest tickets and tell me ", userMessageWords/10))
	second := fmt.Sprintf(`/then read_ticket {"id": "T-%d"}`, 1000+turn)
	if turn%approvalEvery == 0 {
		second = fmt.Sprintf(`/then update_ticket {"id": "T-%d", "query": "close it"}`, 1000+turn)
	}
	msg := fmt.Sprintf("Turn %d: %s\n/call search_tickets {\"query\": \"turn %d\"}\n%s", turn, question, turn, second)
	run, err := r.e.StartInvoke(ctx, agent.InvokeInput{Agent: "support", UserID: "alice", TaskID: r.taskID, Items: []agent.InputItem{{Content: msg}}})
	if err != nil {
		tb.Fatalf("turn %d: %v", turn, err)
	}
	res := run.Execute(ctx, nil)
	r.taskID = res.TaskID
	if turn%approvalEvery == 0 {
		if res.Status != agent.StatusPaused {
			tb.Fatalf("turn %d: %+v, want Paused", turn, res)
		}
		r.clock.Advance(approvalWait)
		run, err := r.e.StartResume(ctx, agent.ResumeInput{Agent: "support", UserID: "alice", TaskID: r.taskID, RequestID: res.RequestID,
			Body: agent.ResumeRequest{Action: agent.ActionApprove}})
		if err != nil {
			tb.Fatalf("turn %d: approve: %v", turn, err)
		}
		res = run.Execute(ctx, nil)
	}
	if res.Status != agent.StatusCompleted {
		tb.Fatalf("turn %d: %+v", turn, res)
	}
	r.clock.Advance(betweenTurns)
}

// cacheTask runs the task once with caching at ttl (0: off) and returns the
// usage summed over its model calls, and how many there were.
func cacheTask(tb testing.TB, ttl time.Duration) (agent.Usage, int) {
	tb.Helper()
	r := cacheTaskRun(tb, ttl)
	return r.model.usage, r.model.calls
}

func cacheTaskRun(tb testing.TB, ttl time.Duration) *cacheRun {
	tb.Helper()
	r := newCacheRun(tb, ttl)
	for range cacheTurns {
		r.next()
	}
	return r
}

// dollars is what u costs at the prices above.
func dollars(u agent.Usage) float64 {
	return (float64(u.InputTokens)*priceInput + float64(u.CacheReadInputTokens)*priceCacheRead +
		float64(u.CacheWriteInputTokens)*priceCacheWrite + float64(u.OutputTokens)*priceOutput) / 1e6
}

// TestPromptCacheSaving: on the benchmark's task, caching bills at least
// 70 % fewer input tokens at the full price and costs less, with the same
// output; every model call but the first reads the whole prompt of the call
// before it from the cache — the next step of a tool loop, the next turn,
// and the leg after an approval alike.
func TestPromptCacheSaving(t *testing.T) {
	off, calls := cacheTask(t, 0)
	run := cacheTaskRun(t, 5*time.Minute)
	on, callsOn := run.model.usage, run.model.calls
	for i := 1; i < len(run.model.perCall); i++ {
		prev, cur := run.model.perCall[i-1], run.model.perCall[i]
		if want := prev.InputTokens + prev.CacheReadInputTokens + prev.CacheWriteInputTokens; cur.CacheReadInputTokens != want {
			t.Errorf("model call %d read %d tokens from the cache, want the previous call's whole prompt, %d (%+v after %+v)",
				i+1, cur.CacheReadInputTokens, want, cur, prev)
		}
	}
	if want := cacheTurns * 3; calls != want || callsOn != want {
		t.Fatalf("%d and %d model calls, want %d each", calls, callsOn, want)
	}
	if off.CacheReadInputTokens != 0 || off.CacheWriteInputTokens != 0 {
		t.Errorf("caching off: %+v, want no cache tokens", off)
	}
	if on.OutputTokens != off.OutputTokens || on.InputTokens+on.CacheReadInputTokens+on.CacheWriteInputTokens != off.InputTokens {
		t.Errorf("caching on %+v and off %+v do not send the same prompts", on, off)
	}
	if saving := 1 - float64(on.InputTokens)/float64(off.InputTokens); saving < 0.70 {
		t.Errorf("full-price input tokens: %d on, %d off: %.0f %% fewer, want at least 70 %%", on.InputTokens, off.InputTokens, 100*saving)
	}
	if dollars(on) >= dollars(off) {
		t.Errorf("caching on costs $%.4f a task, off $%.4f", dollars(on), dollars(off))
	}
	t.Logf("per task: off %+v ($%.4f); on %+v ($%.4f)", off, dollars(off), on, dollars(on))
}

// BenchmarkPromptCache is the 20-turn task on the local model (README,
// "Prompt caching"). Its figures come from one task with caching off and
// one with caching on (5m), run before the timer starts: the local model is
// deterministic, so more runs would give the same figures. Reported per
// task: the input tokens billed at the full price, read from the cache and
// written to it, off and on; the saving in full-price input tokens and in
// dollars, and dollars per 1,000 tasks at Claude Sonnet 4's Bedrock prices
// above (output included). An op is one turn with caching on (three model
// calls through the real client, an approval in every fourth), a new task
// every 20.
func BenchmarkPromptCache(b *testing.B) {
	off, _ := cacheTask(b, 0)
	on, _ := cacheTask(b, 5*time.Minute)
	r := newCacheRun(b, 5*time.Minute)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.next()
	}
	b.StopTimer()
	b.ReportMetric(float64(off.InputTokens), "input-off/task")
	b.ReportMetric(float64(on.InputTokens), "input-on/task")
	b.ReportMetric(float64(on.CacheReadInputTokens), "cache-read-on/task")
	b.ReportMetric(float64(on.CacheWriteInputTokens), "cache-write-on/task")
	b.ReportMetric(float64(on.OutputTokens), "output/task")
	b.ReportMetric(100*(1-float64(on.InputTokens)/float64(off.InputTokens)), "%-full-price-input-saved")
	b.ReportMetric(1000*dollars(off), "$-off/1k-tasks")
	b.ReportMetric(1000*dollars(on), "$-on/1k-tasks")
	b.ReportMetric(100*(1-dollars(on)/dollars(off)), "%-cost-saved")
}
