package localmodel_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/localmodel"
)

// clock is a clock a test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// cachingModel is the local model on a clock the test moves, through the
// real client.
func cachingModel(t *testing.T) (agent.Model, *clock) {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	srv := httptest.NewServer(localmodel.NewHandler(localmodel.WithClock(c.Now)))
	t.Cleanup(srv.Close)
	return bedrock.New(bedrock.EndpointClient(srv.URL)), c
}

// system is a system prompt of 1,100 words: with the tools (get_time, 3),
// over the 1,024 tokens a cached prefix needs.
var system = strings.TrimSpace(strings.Repeat("word ", 1100))

// conversation runs turns on m, each a user text answered by an echo, and
// returns each call's usage.
type conversation struct {
	t      *testing.T
	m      agent.Model
	system string
	ttl    time.Duration
	model  string // "" is local
	msgs   []agent.Message
}

func (c *conversation) say(text string) agent.Usage {
	c.t.Helper()
	c.msgs = append(c.msgs, user(text))
	model := c.model
	if model == "" {
		model = "local"
	}
	resp, err := c.m.Converse(c.t.Context(), &agent.ModelRequest{ModelID: model, System: c.system, Messages: c.msgs, Tools: tools, CacheTTL: c.ttl}, nil)
	if err != nil {
		c.t.Fatalf("Converse: %v", err)
	}
	c.msgs = append(c.msgs, agent.Message{Role: agent.RoleAssistant, Content: resp.Content})
	u := resp.Usage
	if u.TotalTokens != u.InputTokens+u.OutputTokens+u.CacheReadInputTokens+u.CacheWriteInputTokens {
		c.t.Errorf("total %d is not the sum of %+v", u.TotalTokens, u)
	}
	return u
}

// cacheUsage is a call's usage: input, read and written tokens, output.
func cacheUsage(input, read, write, output int64) agent.Usage {
	return agent.Usage{InputTokens: input, OutputTokens: output, CacheReadInputTokens: read, CacheWriteInputTokens: write,
		TotalTokens: input + read + write + output}
}

func TestLocalModelCache(t *testing.T) {
	m, clk := cachingModel(t)
	c := &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute}
	var got []agent.Usage
	// 1: tools 3 + system 1,100 + "one two" 2: everything written.
	got = append(got, c.say("one two"))
	// 2, 10 s later: the first call's 1,105 read; its answer "echo: one
	// two" 3 and "three" 1 written.
	clk.Advance(10 * time.Second)
	got = append(got, c.say("three"))
	// 3, 4 minutes later: read (within the TTL), which starts it again.
	clk.Advance(4 * time.Minute)
	got = append(got, c.say("four"))
	// 4, 4 more minutes: 8 after the second call wrote its prefix, 4 after
	// the third read it: still there.
	clk.Advance(4 * time.Minute)
	got = append(got, c.say("five"))
	// 5, 6 minutes later: everything expired; written again.
	clk.Advance(6 * time.Minute)
	got = append(got, c.say("six"))
	want := []agent.Usage{
		cacheUsage(0, 0, 1105, 3),
		cacheUsage(0, 1105, 4, 2),
		cacheUsage(0, 1109, 3, 2),
		cacheUsage(0, 1112, 3, 2),
		cacheUsage(0, 0, 1118, 2),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per call (-want +got):\n%s", diff)
	}
}

// A 1h TTL outlives 5 minutes; caching off sends no cache point and bills
// everything at the full price.
func TestLocalModelCacheTTL(t *testing.T) {
	m, clk := cachingModel(t)
	hour := &conversation{t: t, m: m, system: system, ttl: time.Hour}
	off := &conversation{t: t, m: m, system: system + " other"}
	var got []agent.Usage
	got = append(got, hour.say("one two"), off.say("one two"))
	clk.Advance(50 * time.Minute)
	got = append(got, hour.say("three"), off.say("three"))
	clk.Advance(61 * time.Minute)
	got = append(got, hour.say("four"))
	want := []agent.Usage{
		cacheUsage(0, 0, 1105, 3),
		cacheUsage(1106, 0, 0, 3),
		cacheUsage(0, 1105, 4, 2),
		cacheUsage(1110, 0, 0, 2),
		cacheUsage(0, 0, 1112, 2),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per call (-want +got):\n%s", diff)
	}
}

// A prefix under 1,024 tokens is not cached: its cache points are accepted
// and do nothing.
func TestLocalModelCacheMinimum(t *testing.T) {
	m, _ := cachingModel(t)
	c := &conversation{t: t, m: m, system: "Be brief.", ttl: 5 * time.Minute}
	got := []agent.Usage{c.say("one two"), c.say("three")}
	want := []agent.Usage{cacheUsage(3+2+2, 0, 0, 3), cacheUsage(3+2+2+3+1, 0, 0, 2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per call (-want +got):\n%s", diff)
	}
}

// Another conversation with the same tools and system prompt reads that
// prefix (the system prompt's cache point); a different system prompt of as
// many words, or another model, reads nothing.
func TestLocalModelCacheSharedPrefix(t *testing.T) {
	m, _ := cachingModel(t)
	a := &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute}
	b := &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute}
	other := &conversation{t: t, m: m, system: strings.Replace(system, "word", "other", 1), ttl: 5 * time.Minute}
	claude := &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute, model: "anthropic.claude-3-5-haiku-20241022-v1:0"}
	got := []agent.Usage{a.say("one two"), b.say("three"), other.say("three"), claude.say("three")}
	want := []agent.Usage{cacheUsage(0, 0, 1105, 3), cacheUsage(0, 1103, 1, 2), cacheUsage(0, 0, 1104, 2), cacheUsage(0, 0, 1104, 2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per call (-want +got):\n%s", diff)
	}
}

// A cache point finds an earlier prefix only within 20 blocks before it: a
// turn that adds 25 tool results misses the conversation so far and reads
// only the system prompt's prefix.
func TestLocalModelCacheLookback(t *testing.T) {
	m, _ := cachingModel(t)
	c := &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute}
	var calls []string
	for i := range 25 {
		calls = append(calls, fmt.Sprintf("/call get_time {\"n\": %d}", i))
	}
	first := c.say(strings.Join(calls, "\n"))
	if first.CacheWriteInputTokens == 0 {
		t.Fatalf("first call wrote nothing: %+v", first)
	}
	var results []agent.Block
	for _, b := range c.msgs[len(c.msgs)-1].Content {
		results = append(results, agent.Block{Type: agent.BlockToolResult, ToolUseID: b.ID, Status: agent.ResultSuccess,
			Content: []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`{"t":"noon"}`)}}})
	}
	c.msgs = append(c.msgs, agent.Message{Role: agent.RoleTool, Content: results})
	resp, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: "local", System: system, Messages: c.msgs, Tools: tools, CacheTTL: 5 * time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Usage.CacheReadInputTokens; got != 1103 {
		t.Errorf("read %d tokens, want the system prompt's prefix, 1103 (usage %+v)", got, resp.Usage)
	}
}

// A read starts the prefix's TTL again: the system prompt's prefix written
// at 0 and read at 4 minutes is still there at 8.
func TestLocalModelCacheReadRestartsTTL(t *testing.T) {
	m, clk := cachingModel(t)
	conv := func() *conversation { return &conversation{t: t, m: m, system: system, ttl: 5 * time.Minute} }
	var got []agent.Usage
	got = append(got, conv().say("one two"))
	clk.Advance(4 * time.Minute)
	got = append(got, conv().say("three"))
	clk.Advance(4 * time.Minute)
	got = append(got, conv().say("four"))
	clk.Advance(6 * time.Minute)
	got = append(got, conv().say("five"))
	want := []agent.Usage{cacheUsage(0, 0, 1105, 3), cacheUsage(0, 1103, 1, 2), cacheUsage(0, 1103, 1, 2), cacheUsage(0, 0, 1104, 2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per call (-want +got):\n%s", diff)
	}
}
