package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/mcp"
)

func connect(tb testing.TB, url string) (*mcp.Server, map[string]mcp.Remote) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, remotes, err := mcp.Connect(ctx, mcp.Config{URL: url})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	out := map[string]mcp.Remote{}
	for _, r := range remotes {
		out[r.Name] = r
	}
	return s, out
}

func run(tb testing.TB, s *mcp.Server, r mcp.Remote, input string, timeout time.Duration) (agent.ToolOutput, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return mcp.NewTool(s, r, "t_"+r.Name).Run(ctx, agent.ToolCall{ID: "tooluse_1", Name: "t_" + r.Name, Input: json.RawMessage(input), RequestID: "req_1", IdempotencyKey: "req_1#tooluse_1"})
}

func TestListAndAnnotations(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	_, remotes := connect(t, srv.URL)
	type policy struct{ Approval, Idempotent bool }
	got := map[string]policy{}
	for name, r := range remotes {
		got[name] = policy{r.NeedsApproval(), r.Idempotent()}
	}
	want := map[string]policy{
		"echo":         {false, true},  // readOnlyHint
		"weather":      {false, false}, // destructiveHint false
		"chart":        {false, true},
		"fail":         {false, true},
		"hang":         {false, true},
		"close_ticket": {true, false}, // destructiveHint true
		"mystery":      {true, false}, // no annotations: destructive by default
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
	var schema map[string]any
	if err := json.Unmarshal(remotes["echo"].InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("echo's input schema %s: %v", remotes["echo"].InputSchema, err)
	}
}

func TestCallResults(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	s, remotes := connect(t, srv.URL)
	for _, tc := range []struct {
		tool, input string
		want        []agent.Block
	}{
		{"echo", `{"text":"hi"}`, []agent.Block{agent.TextBlock("echo hi")}},
		{"weather", `{"city":"Oslo"}`, []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`{"city":"Oslo","temp_c":21.5}`)}}},
		{"chart", `{}`, []agent.Block{
			{Type: agent.BlockImage, MediaType: "image/png", Data: pngBytes},
			agent.TextBlock("[image of type image/tiff, 4 bytes, not shown: the model takes png, jpeg, gif and webp]"),
			agent.TextBlock("[audio of type audio/wav, 4 bytes, not shown]"),
			agent.TextBlock(`[resource link "report": file:///data/report.csv]`),
			agent.TextBlock("[embedded resource file:///data/notes.txt (text/plain), not shown]"),
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			out, err := run(t, s, remotes[tc.tool], tc.input, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.Content); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := tt.Key(tc.tool); got != "req_1#tooluse_1" {
				t.Errorf("idempotency key in _meta = %q, want req_1#tooluse_1", got)
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	s, remotes := connect(t, srv.URL)

	if _, err := run(t, s, remotes["fail"], `{}`, 10*time.Second); err == nil || !strings.Contains(err.Error(), "the database is read-only today") {
		t.Errorf("isError result: err = %v", err)
	}
	if _, err := run(t, s, remotes["echo"], `{"text":5}`, 10*time.Second); agentCode(err) != agent.CodeInvalidInput {
		t.Errorf("bad input: err = %v, want invalid_input", err)
	}
	if n := tt.Calls("echo"); n != 0 {
		t.Errorf("a bad input reached the server (%d calls)", n)
	}
	if _, err := run(t, s, remotes["hang"], `{}`, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not answer hang") {
		t.Errorf("hanging tool: err = %v, want a timeout", err)
	}
	// The session still works after a timeout.
	if _, err := run(t, s, remotes["echo"], `{"text":"again"}`, 10*time.Second); err != nil {
		t.Errorf("call after a timeout: %v", err)
	}
}

func agentCode(err error) string {
	if e, ok := err.(*agent.Error); ok {
		return e.Code
	}
	return ""
}

// TestServerRestart: a call after the server restarted (its sessions lost)
// runs once, on a new session.
func TestServerRestart(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	s, remotes := connect(t, srv.URL)
	if _, err := run(t, s, remotes["echo"], `{"text":"one"}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	serveMCP(t, tt, srv.addr)
	out, err := run(t, s, remotes["close_ticket"], `{"id":"T-1"}`, 10*time.Second)
	if err != nil {
		t.Fatalf("call after a restart: %v", err)
	}
	if diff := cmp.Diff([]agent.Block{agent.TextBlock("closed T-1")}, out.Content); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if n := tt.Calls("close_ticket"); n != 1 {
		t.Errorf("close_ticket ran %d times, want 1", n)
	}
}

// TestServerGone: a server that is down, or answers what is not MCP, is an
// error, in time.
func TestServerGone(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	s, remotes := connect(t, srv.URL)
	srv.Stop()
	if _, err := run(t, s, remotes["echo"], `{"text":"x"}`, 5*time.Second); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("server down: err = %v, want an error naming %s", err, srv.URL)
	}
	serve(t, srv.addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"not":"json-rpc"`))
	}))
	if _, err := run(t, s, remotes["echo"], `{"text":"x"}`, 5*time.Second); err == nil {
		t.Error("garbage answer: no error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := mcp.Connect(ctx, mcp.Config{URL: srv.URL}); err == nil {
		t.Error("Connect to a server answering garbage: no error")
	}
}

// TestHeaders: the entry's headers reach the server.
func TestHeaders(t *testing.T) {
	tt := newTestTools(t)
	inner := tt.server()
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		seen = append(seen, r.Header.Get("Authorization"))
		sdkHandler(inner).ServeHTTP(w, r)
	})
	srv := serve(t, "127.0.0.1:0", h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := mcp.Connect(ctx, mcp.Config{URL: srv.URL}); err == nil {
		t.Fatal("Connect without the header: no error")
	}
	s, _, err := mcp.Connect(ctx, mcp.Config{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(seen) == 0 {
		t.Error("no request carried the header")
	}
}
