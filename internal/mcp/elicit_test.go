//lint:file-ignore SA1019 the servers ask for roots and sampling (deprecated by SEP-2577) to see them refused

package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/mcp"
)

// The tests of elicitation run real go-sdk servers: a stateless one, which
// speaks protocol 2026-07-28 and answers input_required, and stateful ones,
// which Hitch's client meets on 2025-11-25 and which ask inside their
// session (elicitation/create).

// round is one tools/call as the server's handler got it.
type round struct {
	Args      string
	Key       string
	State     string
	Responses map[string]sdk.ElicitResult
}

// elicitTools is the servers' state, shared by their restarts.
type elicitTools struct {
	mu      sync.Mutex
	rounds  map[string][]round
	visited atomic.Bool   // the -32042 server's URL was visited
	release chan struct{} // closed when the test ends
}

func newElicitTools(tb testing.TB) *elicitTools {
	et := &elicitTools{rounds: map[string][]round{}, release: make(chan struct{})}
	tb.Cleanup(func() { close(et.release) })
	return et
}

func (et *elicitTools) record(req *sdk.CallToolRequest) round {
	r := round{Args: string(req.Params.Arguments), State: req.Params.RequestState}
	r.Key, _ = req.Params.Meta["idempotency_key"].(string)
	if len(req.Params.InputResponses) > 0 {
		r.Responses = map[string]sdk.ElicitResult{}
		for k, v := range req.Params.InputResponses {
			if e, ok := v.(*sdk.ElicitResult); ok {
				r.Responses[k] = sdk.ElicitResult{Action: e.Action, Content: e.Content}
			}
		}
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	et.rounds[req.Params.Name] = append(et.rounds[req.Params.Name], r)
	return r
}

func (et *elicitTools) Rounds(name string) []round {
	et.mu.Lock()
	defer et.mu.Unlock()
	return append([]round(nil), et.rounds[name]...)
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

var reasonSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"reason": map[string]any{"type": "string", "description": "Why deploy now"}},
	"required":   []any{"reason"},
}

// server is an MCP server whose tools ask for input.
func (et *elicitTools) server() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "elicit-test", Version: "1"}, nil)
	add := func(name string, h sdk.ToolHandler) {
		srv.AddTool(&sdk.Tool{Name: name, Description: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	add("deploy", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := et.record(req)
		if r.Responses == nil {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"confirm": &sdk.ElicitParams{Message: "Deploy to production?", RequestedSchema: reasonSchema}},
				RequestState:  "deploy-state-1",
			}, nil
		}
		if r.State != "deploy-state-1" {
			return text("lost state: " + r.State), nil
		}
		a := r.Responses["confirm"]
		if a.Action != "accept" {
			return text("not deployed: " + a.Action), nil
		}
		return text(fmt.Sprintf("deployed: %v", a.Content["reason"])), nil
	})
	add("twostep", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := et.record(req)
		switch {
		case r.State == "":
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"name": &sdk.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}},
				RequestState:  "two-1",
			}, nil
		case r.State == "two-1":
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"color": &sdk.ElicitParams{Message: "Your colour?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}}}},
				RequestState:  fmt.Sprintf("two-2|%v", r.Responses["name"].Content["name"]),
			}, nil
		default:
			return text(fmt.Sprintf("%s, colour %v", strings.TrimPrefix(r.State, "two-2|"), r.Responses["color"].Content["color"])), nil
		}
	})
	add("login", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := et.record(req)
		if r.Responses == nil {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"signin": &sdk.ElicitParams{Mode: "url", Message: "Sign in to Acme", URL: "https://auth.example.com/start?s=1", ElicitationID: "el-7"}},
				RequestState:  "login-1",
			}, nil
		}
		return text("signed in: " + r.Responses["signin"].Action), nil
	})
	add("roots", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"where": &sdk.ListRootsParams{}}}, nil
	})
	add("sample", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"ask": &sdk.CreateMessageParams{
			MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}},
		}}}, nil
	})
	add("busy", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{}}, nil
	})
	add("busy_once", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		n := len(et.Rounds("busy_once"))
		et.record(req)
		if n == 0 {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{}}, nil
		}
		return text("done after shedding"), nil
	})
	add("connect", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		if !et.visited.Load() {
			return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{Mode: "url", Message: "Connect your Acme account", URL: "https://auth.example.com/connect", ElicitationID: "el-9"}})
		}
		return text("connected"), nil
	})
	// ask asks inside the session (elicitation/create), as a server on an
	// older protocol does.
	add("ask", func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return text("elicit failed: " + err.Error()), nil
		}
		return text("elicit answered " + res.Action), nil
	})
	// slow closes its response stream before its result (SEP-1699), as a
	// server does to have the client resume it.
	add("slow", func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 50 * time.Millisecond})
		time.Sleep(300 * time.Millisecond)
		return text("slow done"), nil
	})
	// stuck closes its stream, then never answers.
	add("stuck", func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		et.record(req)
		req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 500 * time.Millisecond})
		select {
		case <-ctx.Done():
		case <-et.release:
		}
		return text("stuck done"), nil
	})
	return srv
}

// hit is one HTTP request a server got.
type hit struct {
	Method, RPC, LastEventID, IdempotencyKey, Protocol string
	ID                                                 any
	Body                                               string
	Region                                             string // Mcp-Param-Region
}

// recorder notes the requests a handler gets.
type recorder struct {
	mu   sync.Mutex
	hits []hit
	next http.Handler
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := hit{Method: r.Method, LastEventID: r.Header.Get("Last-Event-ID"), IdempotencyKey: r.Header.Get("Idempotency-Key"), Protocol: r.Header.Get("Mcp-Protocol-Version"), Region: r.Header.Get("Mcp-Param-Region")}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		h.RPC, h.ID, h.Body = m.Method, m.ID, string(body)
	}
	rec.mu.Lock()
	rec.hits = append(rec.hits, h)
	rec.mu.Unlock()
	rec.next.ServeHTTP(w, r)
}

func (rec *recorder) Hits(f func(hit) bool) []hit {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []hit
	for _, h := range rec.hits {
		if f(h) {
			out = append(out, h)
		}
	}
	return out
}

func toolCalls(h hit) bool { return h.RPC == "tools/call" }

// serveElicit serves the elicitation tools with opts on addr.
func serveElicit(tb testing.TB, et *elicitTools, addr string, opts *sdk.StreamableHTTPOptions) (*httpServer, *recorder) {
	tb.Helper()
	srv := et.server()
	rec := &recorder{next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, opts)}
	return serve(tb, addr, rec), rec
}

// logBuffer is a slog handler's output, safe to read while written.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func connectLogged(tb testing.TB, url string) (*mcp.Server, map[string]mcp.Remote, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, remotes, err := mcp.Connect(ctx, mcp.Config{URL: url, Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	out := map[string]mcp.Remote{}
	for _, r := range remotes {
		out[r.Name] = r
	}
	return s, out, logs
}

// call runs a tool as the engine does: the same call each time, with
// reply set when it runs again after input.
func call(tb testing.TB, s *mcp.Server, r mcp.Remote, input string, reply *agent.InputReply, timeout time.Duration) (agent.ToolOutput, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return mcp.NewTool(s, r, "t_"+r.Name).Run(ctx, agent.ToolCall{ID: "tooluse_1", Name: "t_" + r.Name, Input: json.RawMessage(input), RequestID: "req_1", IdempotencyKey: "req_1#tooluse_1", Reply: reply})
}

func textOf(tb testing.TB, out agent.ToolOutput, err error) string {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if out.NeedsInput != nil {
		tb.Fatalf("NeedsInput %+v, want a result", out.NeedsInput)
	}
	if len(out.Content) != 1 || out.Content[0].Type != agent.BlockText {
		tb.Fatalf("result %+v, want one text block", out.Content)
	}
	return out.Content[0].Text
}

// newProtocol serves the tools on protocol 2026-07-28 (stateless).
func newProtocol(t *testing.T) (*elicitTools, *recorder, *mcp.Server, map[string]mcp.Remote, *logBuffer) {
	et := newElicitTools(t)
	srv, rec := serveElicit(t, et, "127.0.0.1:0", &sdk.StreamableHTTPOptions{Stateless: true})
	s, remotes, logs := connectLogged(t, srv.URL)
	if got := rec.Hits(func(h hit) bool { return h.RPC == "tools/list" }); len(got) == 0 || got[0].Protocol != "2026-07-28" {
		t.Fatalf("tools/list went out on protocol %+v, want 2026-07-28", got)
	}
	return et, rec, s, remotes, logs
}

// TestElicitForm: input_required with a form is NeedsInput (message,
// schema, key, state, server); the reply accept goes back as a new call
// (a new JSON-RPC id) with the same arguments, idempotency key and state,
// and the content; the server's result is the call's.
func TestElicitForm(t *testing.T) {
	et, rec, s, remotes, _ := newProtocol(t)
	url := s.URL()
	out, err := call(t, s, remotes["deploy"], `{"version":"v2"}`, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.NeedsInput{Server: url, State: "deploy-state-1", Requests: []agent.Elicitation{{
		Key: "confirm", Mode: agent.ElicitForm, Message: "Deploy to production?",
		Schema: json.RawMessage(`{"properties":{"reason":{"description":"Why deploy now","type":"string"}},"required":["reason"],"type":"object"}`),
	}}}
	if diff := cmp.Diff(want, out.NeedsInput); diff != "" {
		t.Fatalf("NeedsInput (-want +got):\n%s", diff)
	}

	out, err = call(t, s, remotes["deploy"], `{"version":"v2"}`, &agent.InputReply{State: "deploy-state-1", Responses: []agent.ElicitResponse{
		{Key: "confirm", Action: agent.ElicitAccept, Content: json.RawMessage(`{"reason":"the fix for T-7"}`)},
	}}, 10*time.Second)
	if got := textOf(t, out, err); got != "deployed: the fix for T-7" {
		t.Errorf("result %q", got)
	}
	rounds := et.Rounds("deploy")
	wantRounds := []round{
		{Args: `{"version":"v2"}`, Key: "req_1#tooluse_1"},
		{Args: `{"version":"v2"}`, Key: "req_1#tooluse_1", State: "deploy-state-1", Responses: map[string]sdk.ElicitResult{"confirm": {Action: "accept", Content: map[string]any{"reason": "the fix for T-7"}}}},
	}
	if diff := cmp.Diff(wantRounds, rounds); diff != "" {
		t.Errorf("the server's rounds (-want +got):\n%s", diff)
	}
	calls := rec.Hits(toolCalls)
	if len(calls) != 2 || fmt.Sprint(calls[0].ID) == fmt.Sprint(calls[1].ID) {
		t.Errorf("tools/call requests %+v: want two, with different JSON-RPC ids", calls)
	}
	// The header names each round apart (a server deduping on it would
	// answer the second with the first's input_required); _meta's key
	// above stays the call's.
	if len(calls) == 2 && (calls[0].IdempotencyKey != "req_1#tooluse_1" || !regexp.MustCompile(`^req_1#tooluse_1#[0-9a-f]{12}$`).MatchString(calls[1].IdempotencyKey)) {
		t.Errorf("the rounds' Idempotency-Key headers: %q, %q", calls[0].IdempotencyKey, calls[1].IdempotencyKey)
	}
}

// TestElicitDecline: a decline reaches the server as a decline, without
// content; the server decides.
func TestElicitDecline(t *testing.T) {
	et, _, s, remotes, _ := newProtocol(t)
	for _, action := range []string{agent.ElicitDecline, agent.ElicitCancel} {
		out, err := call(t, s, remotes["deploy"], `{"version":"v3"}`, &agent.InputReply{State: "deploy-state-1", Responses: []agent.ElicitResponse{{Key: "confirm", Action: action}}}, 10*time.Second)
		if got := textOf(t, out, err); got != "not deployed: "+action {
			t.Errorf("%s: result %q", action, got)
		}
		rounds := et.Rounds("deploy")
		if got := rounds[len(rounds)-1].Responses; !cmp.Equal(got, map[string]sdk.ElicitResult{"confirm": {Action: action}}) {
			t.Errorf("%s: the server got %+v", action, got)
		}
	}
	if _, err := call(t, s, remotes["deploy"], `{"version":"v3"}`, &agent.InputReply{State: "deploy-state-1", Responses: []agent.ElicitResponse{{Key: "confirm", Action: "maybe"}}}, 10*time.Second); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("an unknown action: err = %v", err)
	}
	if n := len(et.Rounds("deploy")); n != 2 {
		t.Errorf("deploy ran %d rounds, want 2 (an unknown action sends nothing)", n)
	}
}

// TestElicitTwoRounds: the answer to the first round gets a second
// input_required, with the server's new state; its answer, the result.
func TestElicitTwoRounds(t *testing.T) {
	_, _, s, remotes, _ := newProtocol(t)
	out, err := call(t, s, remotes["twostep"], `{}`, nil, 10*time.Second)
	if err != nil || out.NeedsInput == nil || out.NeedsInput.State != "two-1" || out.NeedsInput.Requests[0].Key != "name" {
		t.Fatalf("first round: %+v, %v", out.NeedsInput, err)
	}
	out, err = call(t, s, remotes["twostep"], `{}`, &agent.InputReply{State: "two-1", Responses: []agent.ElicitResponse{{Key: "name", Action: agent.ElicitAccept, Content: json.RawMessage(`{"name":"Ada"}`)}}}, 10*time.Second)
	if err != nil || out.NeedsInput == nil || out.NeedsInput.State != "two-2|Ada" || out.NeedsInput.Requests[0].Key != "color" || out.NeedsInput.Requests[0].Message != "Your colour?" {
		t.Fatalf("second round: %+v, %v", out.NeedsInput, err)
	}
	out, err = call(t, s, remotes["twostep"], `{}`, &agent.InputReply{State: "two-2|Ada", Responses: []agent.ElicitResponse{{Key: "color", Action: agent.ElicitAccept, Content: json.RawMessage(`{"color":"teal"}`)}}}, 10*time.Second)
	if got := textOf(t, out, err); got != "Ada, colour teal" {
		t.Errorf("result %q", got)
	}
}

// TestElicitURL: a url elicitation is NeedsInput with its URL and id; the
// answer goes back as an accept without content.
func TestElicitURL(t *testing.T) {
	et, _, s, remotes, _ := newProtocol(t)
	out, err := call(t, s, remotes["login"], `{}`, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.NeedsInput{Server: s.URL(), State: "login-1", Requests: []agent.Elicitation{{
		Key: "signin", Mode: agent.ElicitURL, Message: "Sign in to Acme", URL: "https://auth.example.com/start?s=1", ElicitationID: "el-7",
	}}}
	if diff := cmp.Diff(want, out.NeedsInput); diff != "" {
		t.Fatalf("NeedsInput (-want +got):\n%s", diff)
	}
	out, err = call(t, s, remotes["login"], `{}`, &agent.InputReply{State: "login-1", Responses: []agent.ElicitResponse{{Key: "signin", Action: agent.ElicitAccept}}}, 10*time.Second)
	if got := textOf(t, out, err); got != "signed in: accept" {
		t.Errorf("result %q", got)
	}
	if r := et.Rounds("login"); len(r) != 2 || r[1].State != "login-1" || r[1].Responses["signin"].Content != nil {
		t.Errorf("rounds %+v", r)
	}
}

// TestElicitURLRequiredError: the error -32042 is NeedsInput of its url
// elicitations; accepted, the call goes out again as it was; declined, it
// fails without going out.
func TestElicitURLRequiredError(t *testing.T) {
	et, _, s, remotes, _ := newProtocol(t)
	out, err := call(t, s, remotes["connect"], `{"account":"a-1"}`, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ni := out.NeedsInput
	if ni == nil || ni.Server != s.URL() || ni.State == "" {
		t.Fatalf("NeedsInput %+v", ni)
	}
	if diff := cmp.Diff([]agent.Elicitation{{Key: "el-9", Mode: agent.ElicitURL, Message: "Connect your Acme account", URL: "https://auth.example.com/connect", ElicitationID: "el-9"}}, ni.Requests); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	if _, err := call(t, s, remotes["connect"], `{"account":"a-1"}`, &agent.InputReply{State: ni.State, Responses: []agent.ElicitResponse{{Key: "el-9", Action: agent.ElicitDecline}}}, 10*time.Second); err == nil || !strings.Contains(err.Error(), "decline") {
		t.Errorf("declined: err = %v", err)
	}
	if n := len(et.Rounds("connect")); n != 1 {
		t.Errorf("connect got %d calls after a decline, want 1", n)
	}
	et.visited.Store(true) // the person went to the URL
	out, err = call(t, s, remotes["connect"], `{"account":"a-1"}`, &agent.InputReply{State: ni.State, Responses: []agent.ElicitResponse{{Key: "el-9", Action: agent.ElicitAccept}}}, 10*time.Second)
	if got := textOf(t, out, err); got != "connected" {
		t.Errorf("result %q", got)
	}
	r := et.Rounds("connect")
	if len(r) != 2 || r[1].Args != `{"account":"a-1"}` || r[1].Key != "req_1#tooluse_1" || r[1].State != "" || r[1].Responses != nil {
		t.Errorf("rounds %+v: the call again as it was", r)
	}
}

// TestElicitRootsSampling: a roots or sampling request is a clear error.
func TestElicitRootsSampling(t *testing.T) {
	_, _, s, remotes, _ := newProtocol(t)
	for tool, want := range map[string]string{"roots": "Hitch offers no roots", "sample": "Hitch offers no sampling"} {
		out, err := call(t, s, remotes[tool], `{}`, nil, 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), want) || out.NeedsInput != nil {
			t.Errorf("%s: %+v, err = %v, want an error saying %q", tool, out, err, want)
		}
	}
}

// TestElicitLoadShedding: input_required without a request is the same
// call again, 3 times at most, then an error.
func TestElicitLoadShedding(t *testing.T) {
	et, _, s, remotes, _ := newProtocol(t)
	out, err := call(t, s, remotes["busy_once"], `{"n":1}`, nil, 10*time.Second)
	if got := textOf(t, out, err); got != "done after shedding" {
		t.Errorf("result %q", got)
	}
	if r := et.Rounds("busy_once"); len(r) != 2 || r[1].Args != `{"n":1}` || r[1].Key != "req_1#tooluse_1" {
		t.Errorf("rounds %+v", r)
	}
	out, err = call(t, s, remotes["busy"], `{}`, nil, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "sheds load") || out.NeedsInput != nil {
		t.Errorf("always busy: %+v, err = %v", out, err)
	}
	if n := len(et.Rounds("busy")); n != 4 {
		t.Errorf("busy got %d calls, want 4 (3 retries)", n)
	}
	// The same state goes out again on a reply.
	_, _ = call(t, s, remotes["busy"], `{}`, &agent.InputReply{State: "st", Responses: []agent.ElicitResponse{{Key: "k", Action: agent.ElicitCancel}}}, 10*time.Second)
	for _, r := range et.Rounds("busy")[4:] {
		if r.State != "st" || r.Responses["k"].Action != "cancel" {
			t.Errorf("a retried reply went out as %+v", r)
		}
	}
}

// TestElicitCapabilities: the client declares form and url elicitation, no
// roots, no sampling.
func TestElicitCapabilities(t *testing.T) {
	for _, opts := range []*sdk.StreamableHTTPOptions{{Stateless: true}, nil} {
		var caps *sdk.ClientCapabilities
		srv := sdk.NewServer(&sdk.Implementation{Name: "caps", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "caps", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			caps = req.Session.InitializeParams().Capabilities
			return text("ok"), nil
		})
		rec := &recorder{next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, opts)}
		h := serve(t, "127.0.0.1:0", rec)
		s, remotes, _ := connectLogged(t, h.URL)
		out, err := call(t, s, remotes["caps"], `{}`, nil, 10*time.Second)
		textOf(t, out, err)
		if caps == nil || caps.Elicitation == nil || caps.Elicitation.Form == nil || caps.Elicitation.URL == nil || caps.Sampling != nil || caps.RootsV2 != nil {
			raw, _ := json.Marshal(caps)
			t.Errorf("stateless %v: capabilities %s", opts != nil, raw)
		}
		for _, h := range rec.Hits(func(h hit) bool { return h.Method == http.MethodPost }) {
			if !strings.Contains(h.Body, "apabilities") {
				continue
			}
			if strings.Contains(h.Body, `"roots"`) || strings.Contains(h.Body, `"sampling"`) || !strings.Contains(h.Body, `"elicitation":{"form":{},"url":{}}`) {
				t.Errorf("stateless %v: %s declares %s", opts != nil, h.RPC, h.Body)
			}
		}
	}
}

// TestElicitOlderProtocol: a server on 2025-11-25 asks inside its session
// (elicitation/create), on the call's response stream or, answering JSON,
// on the standalone stream: the client answers cancel at once and logs it;
// the call ends as the server ends it, long before its timeout.
func TestElicitOlderProtocol(t *testing.T) {
	for name, opts := range map[string]*sdk.StreamableHTTPOptions{
		"response stream": nil,
		// An event store keeps what the server sends to the standalone
		// stream until a client reads it: a client without that stream
		// never answers.
		"standalone stream": {JSONResponse: true, EventStore: sdk.NewMemoryEventStore(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			et := newElicitTools(t)
			srv, rec := serveElicit(t, et, "127.0.0.1:0", opts)
			s, remotes, logs := connectLogged(t, srv.URL)
			if got := rec.Hits(toolCallsOrList); len(got) == 0 || got[0].Protocol != "2025-11-25" {
				t.Fatalf("the session's protocol: %+v, want 2025-11-25", got)
			}
			start := time.Now()
			out, err := call(t, s, remotes["ask"], `{}`, nil, 20*time.Second)
			if got := textOf(t, out, err); got != "elicit answered cancel" {
				t.Errorf("result %q", got)
			}
			// The server's own multi round-trip shim asks the same way.
			out, err = call(t, s, remotes["deploy"], `{}`, nil, 20*time.Second)
			if got := textOf(t, out, err); got != "not deployed: cancel" {
				t.Errorf("deploy: result %q", got)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the calls took %s", d)
			}
			if l := logs.String(); strings.Count(l, "elicitation/create") != 2 || !strings.Contains(l, "Your name?") || !strings.Contains(l, srv.URL) {
				t.Errorf("log %q: want each elicitation/create logged with its server", l)
			}
		})
	}
}

func toolCallsOrList(h hit) bool { return h.RPC == "tools/call" || h.RPC == "tools/list" }

// TestResumeStream: the server closes a call's response stream before the
// result (an event store keeps it): the client resumes it (GET with
// Last-Event-ID), never sends the call again, and gets the result.
func TestResumeStream(t *testing.T) {
	et := newElicitTools(t)
	srv, rec := serveElicit(t, et, "127.0.0.1:0", &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	s, remotes, _ := connectLogged(t, srv.URL)
	out, err := call(t, s, remotes["slow"], `{}`, nil, 20*time.Second)
	if got := textOf(t, out, err); got != "slow done" {
		t.Errorf("result %q", got)
	}
	if n := len(et.Rounds("slow")); n != 1 {
		t.Errorf("slow ran %d times", n)
	}
	if n := len(rec.Hits(toolCalls)); n != 1 {
		t.Errorf("%d tools/call POSTs, want 1", n)
	}
	if got := rec.Hits(func(h hit) bool { return h.Method == http.MethodGet && h.LastEventID != "" }); len(got) == 0 || got[0].IdempotencyKey != "req_1#tooluse_1" {
		t.Errorf("resumptions %+v: want a GET with Last-Event-ID and the call's Idempotency-Key", got)
	}
}

// TestResumeAfterRestart: the server restarts while the client waits to
// resume a call's stream; the resumption finds the session gone (404).
// The call is an error: the server took it, so it is not sent again.
func TestResumeAfterRestart(t *testing.T) {
	et := newElicitTools(t)
	srv, _ := serveElicit(t, et, "127.0.0.1:0", &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	s, remotes, _ := connectLogged(t, srv.URL)
	go func() {
		for len(et.Rounds("stuck")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		srv.Stop()
		serveElicit(t, et, srv.addr, &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	}()
	start := time.Now()
	_, err := call(t, s, remotes["stuck"], `{}`, nil, 15*time.Second)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "did not answer") {
		t.Errorf("err = %v after %s, want the lost session's error before the timeout", err, time.Since(start))
	}
	if n := len(et.Rounds("stuck")); n != 1 {
		t.Errorf("stuck ran %d times, want 1", n)
	}
	// The next call gets a new session.
	if _, err := call(t, s, remotes["login"], `{}`, nil, 10*time.Second); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// TestParamHeadersAfterReconnect: on 2026-07-28 a tool's x-mcp-header
// argument goes out as its Mcp-Param header, which a go-sdk server checks;
// a new session (the old one dropped) still sends it.
func TestParamHeadersAfterReconnect(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "headers", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "route", InputSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}},
		"required":   []any{"region"},
	}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("routed"), nil })
	rec := &recorder{next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})}
	h := serve(t, "127.0.0.1:0", rec)
	s, remotes, _ := connectLogged(t, h.URL)
	for i := range 2 {
		out, err := call(t, s, remotes["route"], `{"region":"eu-north-1"}`, nil, 10*time.Second)
		if got := textOf(t, out, err); got != "routed" {
			t.Errorf("call %d: %q", i+1, got)
		}
		s.Close() // the next call gets a new session
	}
	for _, c := range rec.Hits(toolCalls) {
		if c.Region != "eu-north-1" {
			t.Errorf("a tools/call with Mcp-Param-Region %q", c.Region)
		}
	}
}
