package localmodel_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/localmodel"
)

func startModel(tb testing.TB) agent.Model {
	tb.Helper()
	m, stop, err := localmodel.Start(tb.Context())
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(stop)
	return m
}

func user(s string) agent.Message {
	return agent.Message{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock(s)}}
}

func answer(ws ...string) []agent.Delta {
	var ds []agent.Delta
	for _, w := range ws {
		ds = append(ds, agent.Delta{Kind: agent.DeltaAnswer, Text: w})
	}
	return ds
}

func toolUse(name, input string) agent.Block {
	return agent.Block{Type: agent.BlockToolUse, Name: name, Input: json.RawMessage(input)}
}

var toolID = regexp.MustCompile(`^tooluse_[0-9a-f]{20}$`)

func converse(t *testing.T, m agent.Model, msgs []agent.Message) (*agent.ModelResponse, []agent.Delta) {
	t.Helper()
	var deltas []agent.Delta
	resp, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: "local", Messages: msgs, Tools: tools}, func(d agent.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	for _, b := range resp.Content {
		if b.Type == agent.BlockToolUse && !toolID.MatchString(b.ID) {
			t.Errorf("tool-use id %q does not match %v", b.ID, toolID)
		}
	}
	return resp, deltas
}

var tools = []agent.ToolSpec{{Name: "get_time", InputSchema: json.RawMessage(`{"type":"object"}`)}}

var ignoreIDs = cmpopts.IgnoreFields(agent.Block{}, "ID")

func TestLocalModelText(t *testing.T) {
	m := startModel(t)
	tests := []struct {
		name       string
		msgs       []agent.Message
		want       *agent.ModelResponse
		wantDeltas []agent.Delta
	}{
		{
			name: "echo, one delta per word, lines joined by one space",
			msgs: []agent.Message{user("hello world\n  second line  \n\n/then get_time {}")},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("echo: hello world second line")},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15},
			},
			wantDeltas: answer("echo:", " hello", " world", " second", " line"),
		},
		{
			name: "echo of nothing",
			msgs: []agent.Message{user("/then get_time")},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("echo:")},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6},
			},
			wantDeltas: answer("echo:"),
		},
		{
			name: "think first, one delta per word",
			msgs: []agent.Message{user("/think let me see\nhi")},
			want: &agent.ModelResponse{
				Content: []agent.Block{
					{Type: agent.BlockReasoning, Text: "let me see", Signature: "localmodel"},
					agent.TextBlock("echo: hi"),
				},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 8, OutputTokens: 5, TotalTokens: 13},
			},
			wantDeltas: []agent.Delta{
				{Kind: agent.DeltaThinking, Text: "let"}, {Kind: agent.DeltaThinking, Text: " me"}, {Kind: agent.DeltaThinking, Text: " see"},
				{Kind: agent.DeltaAnswer, Text: "echo:"}, {Kind: agent.DeltaAnswer, Text: " hi"},
			},
		},
		{
			name: "several calls in one turn, in order; JSON compacted; missing JSON is {}",
			msgs: []agent.Message{user("/call get_time {\"zone\": \"Europe/Paris\", \"n\": [1, 2]}\nnot echoed\n/call list_files\n/call get_time {\"zone\":\"UTC\"}")},
			want: &agent.ModelResponse{
				Content: []agent.Block{
					toolUse("get_time", `{"zone":"Europe/Paris","n":[1,2]}`),
					toolUse("list_files", `{}`),
					toolUse("get_time", `{"zone":"UTC"}`),
				},
				StopReason: agent.StopToolUse,
				Usage:      agent.Usage{InputTokens: 17, OutputTokens: 0, TotalTokens: 17},
			},
		},
		{
			name: "think and call",
			msgs: []agent.Message{user("/think why not\n/call get_time")},
			want: &agent.ModelResponse{
				Content: []agent.Block{
					{Type: agent.BlockReasoning, Text: "why not", Signature: "localmodel"},
					toolUse("get_time", `{}`),
				},
				StopReason: agent.StopToolUse,
				Usage:      agent.Usage{InputTokens: 8, OutputTokens: 2, TotalTokens: 10},
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaThinking, Text: "why"}, {Kind: agent.DeltaThinking, Text: " not"}},
		},
		{
			name: "a call whose JSON does not parse is an ordinary line",
			msgs: []agent.Message{user("/call get_time {zone: UTC}")},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("echo: /call get_time {zone: UTC}")},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 7, OutputTokens: 5, TotalTokens: 12},
			},
			wantDeltas: answer("echo:", " /call", " get_time", " {zone:", " UTC}"),
		},
		{
			name: "the last message's text counts, history words count too",
			msgs: []agent.Message{
				user("first message here"),
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("echo: first message here")}},
				user("again"),
			},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("echo: again")},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 11, OutputTokens: 2, TotalTokens: 13},
			},
			wantDeltas: answer("echo:", " again"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, deltas := converse(t, m, tt.msgs)
			if diff := cmp.Diff(tt.want, got, ignoreIDs); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// run plays a request the way the engine does: it calls the model, answers
// every tool call with result(call), and calls again until the turn ends. It
// returns the tool calls in order and the final response.
func run(t *testing.T, m agent.Model, text string, result func(agent.Block) agent.Block) ([]agent.Block, *agent.ModelResponse) {
	t.Helper()
	msgs := []agent.Message{user(text)}
	var calls []agent.Block
	for range 10 {
		resp, _ := converse(t, m, msgs)
		if resp.StopReason != agent.StopToolUse {
			return calls, resp
		}
		msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, Content: resp.Content})
		var results []agent.Block
		for _, b := range resp.Content {
			if b.Type == agent.BlockToolUse {
				calls = append(calls, b)
				results = append(results, result(b))
			}
		}
		msgs = append(msgs, agent.Message{Role: agent.RoleTool, Content: results})
	}
	t.Fatal("the model never ended its turn")
	return nil, nil
}

func okResult(b agent.Block) agent.Block {
	return agent.Block{Type: agent.BlockToolResult, ToolUseID: b.ID, Status: agent.ResultSuccess, Content: []agent.Block{agent.TextBlock("done " + b.Name)}}
}

func TestLocalModelThenSequence(t *testing.T) {
	m := startModel(t)
	calls, final := run(t, m, "/call a {\"i\":0}\n/call b\n/then c {\"i\": 1}\n/then d {\"i\":2}\nplease", okResult)
	var names []string
	ids := map[string]bool{}
	for _, c := range calls {
		names = append(names, c.Name+string(c.Input))
		if ids[c.ID] {
			t.Errorf("tool-use id %s repeated", c.ID)
		}
		ids[c.ID] = true
	}
	if diff := cmp.Diff([]string{`a{"i":0}`, `b{}`, `c{"i":1}`, `d{"i":2}`}, names); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	want := []agent.Block{agent.TextBlock("results: d success: done d")}
	if diff := cmp.Diff(want, final.Content); diff != "" {
		t.Errorf("final answer (-want +got):\n%s", diff)
	}
}

func TestLocalModelResults(t *testing.T) {
	m := startModel(t)
	long := strings.Repeat("x", 150) + " " + strings.Repeat("é", 100)
	msgs := []agent.Message{
		user("/call a\n/call b\n/call c\n/call d"),
		{Role: agent.RoleAssistant, Content: []agent.Block{
			{Type: agent.BlockToolUse, ID: "t1", Name: "a", Input: json.RawMessage(`{}`)},
			{Type: agent.BlockToolUse, ID: "t2", Name: "b", Input: json.RawMessage(`{}`)},
			{Type: agent.BlockToolUse, ID: "t3", Name: "c", Input: json.RawMessage(`{}`)},
			{Type: agent.BlockToolUse, ID: "t4", Name: "d", Input: json.RawMessage(`{}`)},
		}},
		{Role: agent.RoleTool, Content: []agent.Block{
			{Type: agent.BlockToolResult, ToolUseID: "t2", Status: agent.ResultSuccess, Content: []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`{ "k" : [1, 2],  "s": "a b" }`)}}},
			{Type: agent.BlockToolResult, ToolUseID: "t1", Status: agent.ResultSuccess, Content: []agent.Block{agent.TextBlock("hello")}},
			agent.ErrorResult("t3", "boom"),
			{Type: agent.BlockToolResult, ToolUseID: "t4", Status: agent.ResultSuccess, Content: []agent.Block{agent.TextBlock(long)}},
		}},
	}
	got, deltas := converse(t, m, msgs)
	cut := strings.Repeat("x", 150) + " " + strings.Repeat("é", 49)
	wantText := `results: b success: {"k":[1,2],"s":"a b"}; a success: hello; c error: boom; d success: ` + cut
	if diff := cmp.Diff([]agent.Block{agent.TextBlock(wantText)}, got.Content); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if got.StopReason != agent.StopEndTurn {
		t.Errorf("stop reason = %s, want end_turn", got.StopReason)
	}
	wantDeltas := answer("results:", " b", " success:", ` {"k":[1,2],"s":"a`, ` b"};`, " a", " success:", " hello;", " c", " error:", " boom;", " d", " success:", " "+strings.Repeat("x", 150), " "+strings.Repeat("é", 49))
	if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	// words: the tools 3 (get_time: name, schema "type object") and 4 × 6
	// (a, b, c, d declared "no longer available"), user 8, tool inputs 4,
	// results 2 (JSON "a b" splits) + 1 + 1 + 2
	wantUsage := agent.Usage{InputTokens: 45, OutputTokens: int64(len(wantDeltas)), TotalTokens: 45 + int64(len(wantDeltas))}
	if diff := cmp.Diff(wantUsage, got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestLocalModelIDsUnique(t *testing.T) {
	m := startModel(t)
	seen := map[string]bool{}
	msgs := []agent.Message{user("/call a\n/call a\n/call a")}
	for i := range 5 {
		// the same conversation again (as an edit repeating its text would send)
		resp, _ := converse(t, m, msgs)
		for _, b := range resp.Content {
			if seen[b.ID] {
				t.Fatalf("round %d: id %s seen before", i, b.ID)
			}
			seen[b.ID] = true
		}
	}
	if len(seen) != 15 {
		t.Errorf("got %d ids, want 15", len(seen))
	}
}

func TestLocalModelRefusesWhatBedrockRefuses(t *testing.T) {
	m := startModel(t)
	tests := []struct {
		name string
		msgs []agent.Message
		want string
	}{
		{"starts with the assistant", []agent.Message{{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("hi")}}, user("x")}, "must start with a user message"},
		{"ends with the assistant", []agent.Message{user("x"), {Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("hi")}}}, "must end with a user message"},
		{"no messages", nil, "must start with a user message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: "local", Messages: tt.msgs}, nil)
			if agent.CodeOf(err) != agent.CodeModelError || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Converse error = %v, want model_error containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkDeltaLatency(b *testing.B) {
	m := startModel(b)
	text := strings.TrimSpace(strings.Repeat("word ", 100))
	req := &agent.ModelRequest{ModelID: "local", Messages: []agent.Message{user(text)}}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := m.Converse(b.Context(), req, func(agent.Delta) { n++ }); err != nil {
			b.Fatal(err)
		}
		if n != 101 {
			b.Fatalf("%d deltas, want 101", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*101), "ns/delta")
}

func TestLocalModelConcurrentStreams(t *testing.T) {
	m := startModel(t)
	text := strings.TrimSpace(strings.Repeat("word ", 50))
	req := &agent.ModelRequest{ModelID: "local", Messages: []agent.Message{user(text)}}
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			n := 0
			resp, err := m.Converse(t.Context(), req, func(agent.Delta) { n++ })
			if err == nil && (n != 51 || resp.Content[0].Text != "echo: "+text) {
				err = fmt.Errorf("%d deltas, answer %q", n, resp.Content[0].Text)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
