package mcp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/mcp"
	"github.com/hitch-agents/hitch/internal/mcp/mcpexample"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// secrets is what an MCP entry's URL may carry and no user or log may see.
var secrets = []string{"s3cr3t", "api_key", "k3y-v4lue", "svc:"}

// withCredentials puts user info and a query holding a key into a
// server's URL.
func withCredentials(url string) string {
	return strings.Replace(url, "http://", "http://svc:s3cr3t-pw@", 1) + "?api_key=k3y-v4lue"
}

func leaks(s string) []string {
	var out []string
	for _, w := range secrets {
		if strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

// TestServerShownWithoutCredentials: an MCP entry whose URL carries user
// info and a key in its query: a pending input shows the server as the
// entry's name and the URL's scheme, host and path — in the RequestResult,
// the input_required event and GET task — and no log holds the secrets,
// nor does the start-up warning of an optional server that is down
// (docs/api.md, "An MCP server that asks").
func TestServerShownWithoutCredentials(t *testing.T) {
	srv := serve(t, "127.0.0.1:0", mcpexample.New().Handler())
	down := "http://svc:s3cr3t-pw@127.0.0.1:1/mcp?api_key=k3y-v4lue"
	def := fmt.Sprintf(`apiVersion: tealagents/v1alpha1
kind: Agent
name: tickets
version: "1"
description: Works on tickets.
spec:
  agent:
    model: local
    tools:
      - mcp: %s
        name: tk
        allow: [reopen_ticket]
      - mcp: %s
        name: gone
        optional: true
        timeout: 2s
`, withCredentials(srv.URL), down)
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cat, err := catalog.Load(fstest.MapFS{"tickets.yaml": {Data: []byte(def)}}, ".", catalog.Env{MCP: catalog.MCPEnv{Log: log}})
	if err != nil {
		t.Fatal(err)
	}
	model, stop, err := localmodel.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, LegTimeout: time.Minute, Log: log}
	hs := httptest.NewServer((&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: log, MaxBody: 1 << 20}).Handler())
	t.Cleanup(hs.Close)
	a := &api{srv: hs}

	req, _ := http.NewRequest("POST", hs.URL+"/agents/tickets/invoke", strings.NewReader(`{"items":[{"content":"/call tk_reopen_ticket {\"id\":\"T-2\"}"}]}`))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(stream), "event: input_required") {
		t.Fatalf("no input_required in the stream:\n%s", stream)
	}
	tasks := a.get(t, "/agents/tickets/tasks?status=Paused")
	taskID := tasks["tasks"].([]any)[0].(map[string]any)["task_id"].(string)
	task := a.get(t, "/agents/tickets/tasks/"+taskID)
	in := task["pending_inputs"].([]any)[0].(map[string]any)
	if want := "tk at " + srv.URL; in["server"] != want {
		t.Errorf("pending input's server %q, want %q", in["server"], want)
	}
	agents := a.get(t, "/agents")
	for what, s := range map[string]string{"the stream": string(stream), "GET task": fmt.Sprint(task), "GET /agents": fmt.Sprint(agents), "the logs": logs.String()} {
		if l := leaks(s); len(l) > 0 {
			t.Errorf("%s shows %v:\n%s", what, l, s)
		}
	}
	if !strings.Contains(logs.String(), "gone") {
		t.Errorf("no warning of the optional server that is down:\n%s", logs)
	}
}

// TestErrorsShowNoCredentials: a call to a server gone away is the call's
// error naming the server without its user info or query.
func TestErrorsShowNoCredentials(t *testing.T) {
	tt := newTestTools(t)
	srv := serveMCP(t, tt, "127.0.0.1:0")
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, remotes, err := mcp.Connect(ctx, mcp.Config{URL: withCredentials(srv.URL), Name: "tk", Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var echo mcp.Remote
	for _, r := range remotes {
		if r.Name == "echo" {
			echo = r
		}
	}
	srv.Stop()
	tool := mcp.NewTool(s, echo, "tk_echo")
	_, err = run(t, s, echo, `{"text":"hi"}`, 5*time.Second)
	if err == nil {
		t.Fatal("a call to a server that is gone succeeded")
	}
	if l := leaks(err.Error() + tool.Spec().Description + logs.String()); len(l) > 0 || !strings.Contains(err.Error(), "tk at "+srv.URL) {
		t.Errorf("the call's error %q (logs %q) shows %v; want it to name tk at %s", err, logs, l, srv.URL)
	}
}
