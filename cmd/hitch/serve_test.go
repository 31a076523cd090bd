package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/mcp/mcpexample"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// lockedBuffer collects the server's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs `hitch serve` with the example agent copied into a
// temporary directory, and returns its base URL and the sandbox.
func startServe(t *testing.T, extra ...string) (string, string, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"assistant.yaml", "desk.yaml"} {
		def, err := os.ReadFile(filepath.Join("..", "..", "agents", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), def, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return startServeDir(t, dir, extra...)
}

// startServeDir runs hitch serve on the agents of dir.
func startServeDir(t *testing.T, dir string, extra ...string) (string, string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	args := append([]string{"--addr", "127.0.0.1:0", "--agents", dir}, extra...)
	go func() { done <- serve(ctx, args, io.Discard, logs, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return "http://" + addr, filepath.Join(dir, "sandbox"), logs
}

func call(t *testing.T, method, url, user, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// The README's walk-through, against `hitch serve` as `make run` starts it.
func testWalkThrough(t *testing.T, base, sandbox string) {
	if code, body := call(t, "GET", base+"/health", "", ""); code != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("health: %d %s", code, body)
	}
	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content_type":"text","content":"Hello there"}],"metadata":{"ticket":"ACME-42"}}`)
	first := decode(t, body)
	if code != 200 || first["output"] != "echo: Hello there" {
		t.Fatalf("invoke: %d %s", code, body)
	}
	tid := first["task_id"].(string)
	code, body = call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"task_id":"`+tid+`","items":[{"content":"/call get_time {\"zone\": \"Europe/Paris\"}"}]}`)
	if code != 200 || !strings.Contains(decode(t, body)["output"].(string), "results: get_time success:") {
		t.Fatalf("follow-on with a tool: %d %s", code, body)
	}
	code, body = call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"/think let me see\nhi"}]}`, "Accept", "text/event-stream")
	if code != 200 || !strings.Contains(string(body), "event: thinking") || !strings.Contains(string(body), "event: request_complete") {
		t.Fatalf("SSE: %d %s", code, body)
	}
	// Human in the loop: delete a file, after approval.
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "old.log"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body = call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"/call delete_file {\"path\": \"old.log\"}"}]}`)
	paused := decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("pause: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "old.log")); err != nil {
		t.Fatalf("the file went before the approval: %v", err)
	}
	code, body = call(t, "POST", base+paused["resume_url"].(string), "alice", `{"action":"approve"}`, "Accept", "text/event-stream")
	if code != 200 || !strings.Contains(string(body), "event: approved") || !strings.Contains(string(body), "deleted old.log") {
		t.Fatalf("approve: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "old.log")); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
	code, body = call(t, "GET", base+"/agents/assistant/tasks?status=Completed", "alice", "")
	if code != 200 || len(decode(t, body)["tasks"].([]any)) != 3 {
		t.Errorf("list: %d %s", code, body)
	}
	code, body = call(t, "GET", base+"/agents/assistant/tasks/"+tid, "bob", "")
	if code != 401 {
		t.Errorf("bob reads alice's task: %d %s", code, body)
	}
}

func TestServeMemory(t *testing.T) {
	base, sandbox, logs := startServe(t)
	testWalkThrough(t, base, sandbox)
	if !strings.Contains(logs.String(), "DEV MODE") {
		t.Errorf("dev auth is not logged:\n%s", logs)
	}
}

func TestServeDynamoDB(t *testing.T) {
	endpoint := ddblocal.Start(t)
	table := "serve-" + uuid.NewString() // a fresh table: the walk-through counts the user's tasks
	base, sandbox, _ := startServe(t, "--store", "dynamodb", "--dynamodb-endpoint", endpoint, "--table", table, "--create-table")
	testWalkThrough(t, base, sandbox)
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--store", "postgres"},
		{"--model", "gpt"},
		{"--agents", "/nonexistent"},
		{"extra"},
		{"--debug-addr", "0.0.0.0:0"},
		{"--debug-addr", "nonsense"},
	} {
		if err := serve(context.Background(), args, io.Discard, io.Discard, nil); err == nil {
			t.Errorf("serve %v started", args)
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard); err == nil {
		t.Error("an unknown command ran")
	}
}

// Ending serve's context (SIGINT, SIGTERM) shuts it down cleanly: it stops
// listening and returns nil. (http.Server.Shutdown waits for the handlers,
// which return only after their request's commit.)
func TestShutdown(t *testing.T) {
	dir := t.TempDir()
	def, _ := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	_ = os.WriteFile(filepath.Join(dir, "assistant.yaml"), def, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--addr", "127.0.0.1:0", "--agents", dir}, io.Discard, io.Discard, ready)
	}()
	base := "http://" + <-ready
	code, _ := call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"hi"}]}`)
	cancel()
	if err := <-done; err != nil || code != 200 {
		t.Fatalf("shutdown: %v (invoke %d)", err, code)
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("still serving after shutdown")
	}
}

// hitch chat against hitch serve: a message, then a call that needs approval,
// approved at the prompt.
func TestChat(t *testing.T) {
	base, sandbox, _ := startServe(t)
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "old.log"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader("hello chat\n/call delete_file {\"path\": \"old.log\"}\ny\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"echo: hello chat", "→ delete_file {\"path\":\"old.log\"}", "needs approval: delete_file", "[approved by carol]", "← delete_file success: \"deleted old.log\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(sandbox, "old.log")); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
}

// hitch chat never prints what a terminal would act on from text it did
// not write (docs/guide/security.md, "Security notes"): a model's
// answer and a question holding an OSC title change and a screen clear show
// without their escape characters.
func TestChatReplacesEscapes(t *testing.T) {
	base, _, _ := startServe(t)
	in := strings.NewReader("hi \x1b]0;pwned\x07 there \x1b[2J\r\n" +
		`/call ask_user {"question": "Colour?\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e", "choices": ["red", "blue\u001b[31m"]}` + "\n2\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, bad := range []string{"\x1b", "\a", "\r", "\u009b", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Errorf("the chat printed %q:\n%q", bad, got)
		}
	}
	for _, want := range []string{"echo: hi", "there", "ask_user asks: Colour?", "  2. blue", "[answered by carol]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat does not show %q:\n%q", want, got)
		}
	}
}

// hitch chat asks an agent's question in the terminal (docs/api.md,
// "Pauses for input"): a choice's number answers it, and the model gets
// the answer.
func TestChatAsks(t *testing.T) {
	base, _, _ := startServe(t)
	in := strings.NewReader("/call ask_user {\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}\n2\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ask_user asks: Which colour?", "  2. blue", "[answered by carol]", "← ask_user success: \"blue\"", "results: ask_user success: blue"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out.String())
		}
	}
}

// hitch chat answers an MCP server's form in the terminal: the example
// server's reopen_ticket asks why; the fields typed reach the server, and
// its result the model.
func TestChatElicitation(t *testing.T) {
	base, mcpURL := startTickets(t)
	in := strings.NewReader("/call tickets_reopen_ticket {\"id\": \"T-2\"}\ny\nthe fix did not hold\nyes\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--agent", "tickets", "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the MCP server tickets at " + mcpURL, `asks: Why reopen T-2 ("Typo in the invoice footer")?`, "Why reopen it? (string, required)> ", "Urgent (boolean)> ",
		"[answered by carol]", "reopened T-2: the fix did not hold (urgent)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out.String())
		}
	}
}

// startTickets runs the example MCP server and hitch serve on the example
// agent that uses it (examples/mcp/tickets.yaml): serve's and the MCP
// server's URLs.
func startTickets(t *testing.T) (string, string) {
	t.Helper()
	ex := httptest.NewServer(mcpexample.New().Handler())
	t.Cleanup(ex.Close)
	def, err := os.ReadFile("../../examples/mcp/tickets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tickets.yaml"), []byte(strings.Replace(string(def), "http://${HITCH_MCP_ADDR:-127.0.0.1:8090}/mcp", ex.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServeDir(t, dir)
	return base, ex.URL
}

func TestChatReject(t *testing.T) {
	base, sandbox, _ := startServe(t)
	_ = os.MkdirAll(sandbox, 0o755)
	if err := os.WriteFile(filepath.Join(sandbox, "keep.log"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader("/call delete_file {\"path\": \"keep.log\"}\nn\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[rejected by dev]") || !strings.Contains(out.String(), "delete_file error") {
		t.Errorf("chat:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(sandbox, "keep.log")); err != nil {
		t.Errorf("a rejected delete ran: %v", err)
	}
}

// --debug-addr serves Go's profiles on a loopback address.
func TestServeDebugAddr(t *testing.T) {
	_, _, logs := startServe(t, "--debug-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`"addr":"(http://127\.0\.0\.1:\d+/debug/pprof/)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no pprof address logged:\n%s", logs)
	}
	resp, err := http.Get(m[1] + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("GET pprof goroutine = %d %.200s", resp.StatusCode, body)
	}
}

// hitch chat --a2a talks to an agent over A2A: a message, then a call that
// needs approval, approved at the prompt, then one rejected.
func TestChatA2A(t *testing.T) {
	base, sandbox, _ := startServe(t)
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"old.log", "keep.log"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := strings.NewReader("hello a2a\n/call delete_file {\"path\": \"old.log\"}\ny\n/call delete_file {\"path\": \"keep.log\"}\nn\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--a2a", base + "/a2a/assistant", "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"with assistant (A2A)", "echo: hello a2a", "needs approval: delete_file {\"path\":\"old.log\"}",
		"[approved by carol]", "← delete_file success: \"deleted old.log\"", "[rejected by carol]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(sandbox, "old.log")); !os.IsNotExist(err) {
		t.Errorf("old.log is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "keep.log")); err != nil {
		t.Errorf("a rejected delete ran: %v", err)
	}
}

// hitch chat: "a" approves and trusts the tool for the rest of the task.
func TestChatRemember(t *testing.T) {
	base, sandbox, _ := startServe(t)
	_ = os.MkdirAll(sandbox, 0o755)
	for _, f := range []string{"a.log", "b.log"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := strings.NewReader("/call delete_file {\"path\": \"a.log\"}\na\n/call delete_file {\"path\": \"b.log\"}\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--token", "dora"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "needs approval:"); n != 1 {
		t.Errorf("asked %d times, want once:\n%s", n, out.String())
	}
	for _, f := range []string{"a.log", "b.log"} {
		if _, err := os.Stat(filepath.Join(sandbox, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", f, err)
		}
	}
}

// --artifact-quota: 10 GiB by default, a size or 0 (none), anything else
// refused before anything starts.
func TestServeArtifactQuotaFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
		bad  bool
	}{
		{nil, 10 << 30, false},
		{[]string{"--artifact-quota", "1MiB"}, 1 << 20, false},
		{[]string{"--artifact-quota", "0"}, -1, false},
		{[]string{"--artifact-quota", "lots"}, 0, true},
	} {
		c, err := parseServe(tc.args, io.Discard)
		switch {
		case tc.bad && (err == nil || !strings.Contains(err.Error(), "--artifact-quota")):
			t.Errorf("parseServe(%q) = %v; want an error naming --artifact-quota", tc.args, err)
		case !tc.bad && (err != nil || c.artifactQuota != tc.want):
			t.Errorf("parseServe(%q) = %+v, %v; want the quota %d", tc.args, c, err, tc.want)
		}
	}
}

// hitch serve refuses to start when an agent's files root holds the
// artifacts directory (--artifacts): the files tools would read every
// task's artifacts. The error names the file and the field.
func TestServeRefusesFilesOverArtifacts(t *testing.T) {
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 0.1\nspec:\n  agent:\n    model: m\n    tools:\n      - builtin: files\n        config: {root: ..}\n"
	if err := os.WriteFile(filepath.Join(agents, "a.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--addr", "127.0.0.1:0", "--agents", agents, "--artifacts", filepath.Join(dir, "artifacts")}, io.Discard, io.Discard, ready)
	}()
	var err error
	select {
	case err = <-done:
	case <-ready:
		cancel()
		<-done
		t.Fatal("serve started")
	}
	want := filepath.Join(agents, "a.yaml") + ": spec.agent.tools[0].config.root: " + dir + " holds " + filepath.Join(dir, "artifacts")
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("serve = %v; want an error starting %q", err, want)
	}
}
