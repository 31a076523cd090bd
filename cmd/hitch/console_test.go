package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hitch-agents/hitch/internal/chromium"
)

// streamProxy stands between the browser and hitch serve as a network
// would: it forwards every request, and can hold an event stream after n
// events (to look at the page while a request streams) or cut the
// connection there (a dropped connection).
type streamProxy struct {
	target string
	mu     sync.Mutex
	cuts   []*cut // armed, not yet met
	all    []*cut // every cut armed, to release them all at the end
	seen   []seenRequest
	// agents, when set, rewrites GET /agents: a console holding an older
	// copy of a tool's schema than the server's.
	agents func([]byte) []byte
}

type seenRequest struct{ method, path, lastEventID string }

// cut acts on the first event stream whose request matches.
type cut struct {
	match   func(*http.Request) bool
	after   int           // events forwarded before acting
	reached chan struct{} // closed once they went out
	release chan struct{} // nil: go on at once; else wait for it to close
	drop    bool          // abort the connection (after the release)
	once    sync.Once
}

func (c *cut) Release() { c.once.Do(func() { close(c.release) }) }

func (p *streamProxy) arm(c *cut) *cut {
	c.reached = make(chan struct{})
	if c.release == nil {
		c.release = make(chan struct{})
		c.Release()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts = append(p.cuts, c)
	p.all = append(p.all, c)
	return c
}

func (p *streamProxy) take(r *http.Request) *cut {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.cuts {
		if c.match(r) {
			p.cuts = append(p.cuts[:i], p.cuts[i+1:]...)
			return c
		}
	}
	return nil
}

func (p *streamProxy) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

func (p *streamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Last-Event-ID")})
	p.mu.Unlock()
	// The body is read in full before the call goes on: a proxy that hands
	// the inbound body to the transport cuts some streamed answers.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.ContentLength = int64(len(body))
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if r.URL.Path == "/agents" && p.agents != nil {
		b, _ := io.ReadAll(resp.Body)
		w.Header().Del("Content-Length")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(p.agents(b))
		return
	}
	w.WriteHeader(resp.StatusCode)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	c := p.take(r)
	rc := http.NewResponseController(w)
	br := bufio.NewReader(resp.Body)
	for n := 0; ; {
		line, err := br.ReadString('\n')
		if _, werr := io.WriteString(w, line); werr != nil {
			return
		}
		if line == "\n" {
			_ = rc.Flush()
			n++
			if c != nil && n == c.after {
				close(c.reached)
				select {
				case <-c.release:
				case <-r.Context().Done():
					return
				}
				if c.drop {
					panic(http.ErrAbortHandler) // the connection ends mid-stream, without a proper end
				}
				c = nil
			}
		}
		if err != nil {
			_ = rc.Flush()
			return
		}
	}
}

// browserPage drives the console in one tab.
type browserPage struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	start time.Time
}

func (p *browserPage) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v\n%s", err, p.dump())
	}
}

func evalJS[T any](p *browserPage, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// wait polls a JavaScript predicate until it holds.
func (p *browserPage) wait(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		p.t.Fatalf("browser: waiting for %s (%s): %v\n%s", what, expr, err, p.dump())
	}
}

// dump is what the page shows, for a failure's message.
func (p *browserPage) dump() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`['status: ' + document.getElementById('status').textContent,
		'notice: ' + document.getElementById('notice').textContent,
		'transcript: ' + [...document.querySelectorAll('#transcript li')].map((e) => e.textContent).join(' | '),
		'approvals: ' + document.getElementById('approvals').textContent,
		'inbox: ' + document.getElementById('inbox').textContent].join('\n')`))
	if err != nil {
		return "(page not readable: " + err.Error() + ")"
	}
	return s
}

func (p *browserPage) shot(name string) {
	p.t.Helper()
	path := chromium.Screenshot(p.ctx, p.t, p.dir, name)
	p.t.Logf("%6.2fs screenshot %s", time.Since(p.start).Seconds(), path)
}

func (p *browserPage) text(sel string) string {
	p.t.Helper()
	return evalJS[string](p, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ''`, sel))
}

func (p *browserPage) done() int {
	p.t.Helper()
	n, _ := strconv.Atoi(evalJS[string](p, `document.body.dataset.done || '0'`))
	return n
}

// waitDone waits until n requests have finished and their task was re-read.
func (p *browserPage) waitDone(n int) {
	p.t.Helper()
	p.wait(fmt.Sprintf("request %d to finish", n), fmt.Sprintf(`Number(document.body.dataset.done || 0) >= %d`, n))
}

// send types a message in the composer and sends it.
func (p *browserPage) send(msg string) int {
	p.t.Helper()
	n := p.done()
	p.wait("the composer", `!document.getElementById('send').disabled`)
	p.do(chromedp.SetValue("#message", msg), chromedp.Click("#send"))
	return n + 1
}

func (p *browserPage) newTask() {
	p.t.Helper()
	p.wait("New task", `!document.getElementById('new-task').disabled`)
	p.do(chromedp.Click("#new-task"))
	p.wait("an empty chat", `document.querySelectorAll('#transcript li').length === 0`)
}

// quickAgent's system prompt is over the 1,024 tokens a cached prefix needs,
// so its model calls write to the prompt cache.
var quickAgent = `apiVersion: tealagents/v1alpha1
kind: Agent
name: quick
version: 0.1
description: Deletes files in a sandbox, with approvals that expire after two seconds.
spec:
  agent:
    name: default
    model: us.anthropic.claude-sonnet-4-20250514-v1:0
    system_prompt: You delete files when asked.` + strings.Repeat(" Check the name twice.", 260) + `
    max_tokens: 256
    tools:
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [delete_file]
        approval_ttl: 2s
`

// TestConsole drives the console in a real headless Chromium against the
// real hitch serve stack (memory store, local model): streaming, approve,
// reject with a reason, edit, the inbox, an expired approval, a decision
// that lost to another tab, a reconnect after a dropped connection, a phone's
// screen and CORS. Each step leaves a screenshot in $HITCH_SCREENSHOTS (else
// a temporary directory).
func TestConsole(t *testing.T) {
	ctx := chromium.New(t, 1280, 900)

	agentsDir := t.TempDir()
	def, err := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Join(agentsDir, "sandbox")
	for name, body := range map[string]string{"assistant.yaml": string(def), "quick.yaml": quickAgent} {
		if err := os.WriteFile(filepath.Join(agentsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"old.log", "keep.log", "wrong.log", "right.log", "late.log", "x.log", "y.log", "a.log", "b.log"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(f string) bool {
		_, err := os.Stat(filepath.Join(sandbox, f))
		return err == nil
	}

	// The browser reaches the server through the proxy; the server allows
	// the proxy's origin (CORS) for the last step, where the console calls
	// the server directly, as it would call a deployed API.
	// The console's copy of the file tools' schemas lacks minLength, so that
	// an edit the server refuses gets past the console's own check.
	proxy := &streamProxy{agents: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(`"minLength":1,`), nil) }}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	// The reaper sweeps rarely here: the expired-approval step reloads the
	// page after its round's expiry and reads the round as GET task shows
	// it until a write (or the reaper) applies the expiry — under a loaded
	// machine a 5 s sweep could apply it first.
	base, _, _ := startServe(t, "--agents", agentsDir, "--cors-origin", ps.URL, "--reap-every", "10m")
	proxy.target = base
	t.Cleanup(func() {
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		for _, c := range proxy.all {
			c.Release()
		}
	})

	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	console := watchConsole(t, ctx)
	step := func(name string) {
		t.Logf("%6.2fs %s", time.Since(p.start).Seconds(), name)
	}

	step("open the console; dev auth as alice")
	p.do(chromedp.Navigate(ps.URL + "/console"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	if got := evalJS[string](p, `location.pathname`); got != "/console/" {
		t.Errorf("/console went to %q, want /console/", got)
	}
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("the agents", `document.body.dataset.ready === 'true' && document.querySelectorAll('#agents a').length === 2`)
	if got := p.text("#conn-summary"); !strings.HasPrefix(got, "alice @ ") {
		t.Errorf("connection summary %q, want alice @ …", got)
	}
	p.do(chromedp.Click(`#agents a[href="#/agents/assistant"]`))
	p.wait("the assistant's chat", `document.getElementById('chat-h').textContent.startsWith('assistant')`)
	p.shot("01-agents")

	step("chat: text visible as it streams")
	hold := proxy.arm(&cut{match: isPOST("/invoke"), after: 8, release: make(chan struct{})})
	// 1 request_started, 5 thinking deltas, then "echo:" and " hello": the
	// stream is held there, before " streaming world".
	p.do(chromedp.Focus("#message"), chromedp.SetValue("#message", "/think let me think about it\nhello streaming world"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(kb.ModifierCtrl)))
	select {
	case <-hold.reached:
	case <-time.After(20 * time.Second):
		t.Fatalf("the stream did not start\n%s", p.dump())
	}
	p.wait("the first words", `document.querySelector('#transcript .answer.live .text')?.textContent === 'echo: hello'`)
	if got := p.text("#transcript .thinking.live .text"); got != "let me think about it" {
		t.Errorf("thinking while streaming = %q, want %q", got, "let me think about it")
	}
	if !evalJS[bool](p, `document.getElementById('send').disabled`) {
		t.Error("Send is enabled while a request streams")
	}
	p.shot("02-streaming")
	hold.Release()
	p.waitDone(1)
	if got := p.text("#transcript .answer"); got != "echo: hello streaming world" {
		t.Errorf("answer = %q, want %q", got, "echo: hello streaming world")
	}
	if got := p.text("#status"); got != "Request Completed." {
		t.Errorf("status = %q", got)
	}
	p.shot("03-answer")

	step("approve, with the keyboard")
	p.newTask()
	n := p.send(`/call delete_file {"path":"old.log"}`)
	p.waitDone(n)
	p.wait("the approval card", `document.querySelector('#approvals article.card[data-call] h3')?.textContent === 'delete_file'`)
	if got := p.text("#approvals .expiry"); !regexp.MustCompile(`^Expires in (1h 0m|59m \d+s) \(at `).MatchString(got) {
		t.Errorf("expiry = %q, want Expires in 1h 0m or 59m …", got)
	}
	if !evalJS[bool](p, `document.getElementById('message').disabled`) {
		t.Error("the composer is enabled while the task waits for a decision")
	}
	p.shot("04-approval")
	p.do(chromedp.Focus("#approvals button.approve"), chromedp.KeyEvent(kb.Enter))
	p.waitDone(n + 1)
	p.wait("the decision in the history", `[...document.querySelectorAll('#transcript .decision')].some((e) => e.textContent.startsWith('Approved by alice'))`)
	if got := p.text("#transcript li:last-child"); got != "results: delete_file success: deleted old.log" {
		t.Errorf("last entry = %q", got)
	}
	if exists("old.log") {
		t.Error("old.log still exists after the approval")
	}
	if got := p.text("#requests .decision-record"); !strings.HasPrefix(got, "round 1: approve by alice at ") {
		t.Errorf("decision record = %q", got)
	}
	p.do(chromedp.Click("#history summary"))
	p.shot("05-approved")
	p.do(chromedp.Click("#history summary"))

	step("reject with a reason")
	p.newTask()
	n = p.send(`/call delete_file {"path":"keep.log"}`)
	p.waitDone(n)
	p.do(chromedp.Click("#approvals button.reject"))
	p.wait("the reason field to have focus", `document.activeElement?.name === 'reason'`)
	p.do(chromedp.SendKeys(`#approvals input[name=reason]`, "it is still needed"))
	p.shot("06-reject-reason")
	p.do(chromedp.Click(`#approvals .reject-form button[type=submit]`))
	p.waitDone(n + 1)
	p.wait("the rejection", `[...document.querySelectorAll('#transcript .decision')].some((e) => e.textContent.startsWith('Rejected by alice at '))`)
	if got := p.text("#transcript .decision"); !strings.Contains(got, "“it is still needed”") {
		t.Errorf("decision = %q, want the reason", got)
	}
	if got := p.text("#transcript li:last-child"); got != "results: delete_file error: rejected by alice: it is still needed" {
		t.Errorf("last entry = %q", got)
	}
	if !exists("keep.log") {
		t.Error("keep.log was deleted after a rejection")
	}
	p.shot("07-rejected")

	step("edit: the schema is checked before sending")
	p.newTask()
	n = p.send(`/call delete_file {"path":"wrong.log"}`)
	p.waitDone(n)
	before := len(proxy.requests())
	p.do(chromedp.Click("#approvals button.edit"))
	p.wait("the edit form", `document.activeElement?.name === 'input'`)
	p.do(chromedp.SetValue(`#approvals textarea[name=input]`, `{"path": 5, "mode": "x"}`), chromedp.Click(`#approvals .edit-form button[type=submit]`))
	p.wait("the schema errors", `document.querySelectorAll('#approvals .errors li').length === 2`)
	if got := p.text("#approvals .errors"); got != "input.path: must be a stringinput.mode: is not a known field" {
		t.Errorf("errors = %q", got)
	}
	for _, r := range proxy.requests()[before:] {
		if strings.HasSuffix(r.path, "/resume") {
			t.Errorf("an invalid edit was sent: %s %s", r.method, r.path)
		}
	}
	p.shot("08-edit-invalid")
	p.do(chromedp.SetValue(`#approvals textarea[name=input]`, `{"path": ""}`), chromedp.Click(`#approvals .edit-form button[type=submit]`))
	p.wait("the server's refusal", `document.querySelector('#approvals .errors')?.textContent.startsWith('The server refused the input: ')`)
	if evalJS[bool](p, `document.querySelector('#approvals button.approve').disabled`) {
		t.Error("the card stays disabled after the server refused the edit")
	}
	if !evalJS[bool](p, `document.getElementById('send').disabled`) || p.text("#status") != "" {
		t.Errorf("after a refused edit: Send enabled, or status %q", p.text("#status"))
	}
	p.shot("08b-edit-refused")
	p.do(chromedp.SetValue(`#approvals textarea[name=input]`, `{"path": "right.log"}`), chromedp.Click(`#approvals .edit-form button[type=submit]`))
	p.waitDone(n + 1)
	p.wait("the edit in the history", `[...document.querySelectorAll('#transcript .decision')].some((e) => e.textContent.startsWith('Edited and approved by alice') && e.textContent.includes('{"path":"right.log"}'))`)
	if exists("right.log") || !exists("wrong.log") {
		t.Errorf("after the edit: right.log exists %v (want false), wrong.log exists %v (want true)", exists("right.log"), exists("wrong.log"))
	}
	p.shot("09-edited")

	step("a round of two calls goes out once both are decided")
	p.newTask()
	n = p.send("/call delete_file {\"path\":\"a.log\"}\n/call delete_file {\"path\":\"b.log\"}")
	p.waitDone(n)
	p.wait("two cards", `document.querySelectorAll('#approvals article.card').length === 2`)
	before = len(proxy.requests())
	p.do(chromedp.Click(`#approvals article.card:nth-of-type(1) button.approve`))
	p.wait("the first choice noted", `document.querySelector('#approvals article.card:nth-of-type(1) .outcome').textContent.startsWith('Your choice: approve.')`)
	for _, r := range proxy.requests()[before:] {
		if strings.HasSuffix(r.path, "/resume") {
			t.Errorf("a decision went out before the round was decided: %s %s", r.method, r.path)
		}
	}
	p.do(chromedp.Click(`#approvals article.card:nth-of-type(2) button.reject`),
		chromedp.SendKeys(`#approvals article.card:nth-of-type(2) input[name=reason]`, "not this one"),
		chromedp.Click(`#approvals article.card:nth-of-type(2) .reject-form button[type=submit]`))
	p.waitDone(n + 1)
	if exists("a.log") || !exists("b.log") {
		t.Errorf("after approve a.log, reject b.log: a.log exists %v (want false), b.log exists %v (want true)", exists("a.log"), exists("b.log"))
	}
	if got := p.text("#transcript li:last-child"); got != "results: delete_file success: deleted a.log; delete_file error: rejected by alice: not this one" {
		t.Errorf("last entry = %q", got)
	}

	step("inbox: the caller's paused tasks across agents")
	paused := func(agent, user, file string) string {
		code, body := call(t, "POST", base+"/agents/"+agent+"/invoke", user, `{"items":[{"content":"/call delete_file {\"path\":\"`+file+`\"}"}]}`)
		if code != 200 {
			t.Fatalf("invoke %s: %d %s", agent, code, body)
		}
		return decode(t, body)["task_id"].(string)
	}
	mine := paused("assistant", "alice", "x.log")
	quick := paused("quick", "alice", "x.log")
	bobs := paused("assistant", "bob", "x.log")
	p.do(chromedp.Click("#inbox-refresh"))
	p.wait("the inbox", fmt.Sprintf(`!!document.querySelector('#inbox a[data-task=%q]') && !!document.querySelector('#inbox a[data-task=%q]')`, mine, quick))
	if evalJS[bool](p, fmt.Sprintf(`!!document.querySelector('#inbox a[data-task=%q]')`, bobs)) {
		t.Error("the inbox shows bob's task")
	}
	if got, want := p.text("#inbox-count"), "2"; got != want {
		t.Errorf("inbox count = %q, want %q", got, want)
	}
	p.shot("10-inbox")
	p.do(chromedp.Click(fmt.Sprintf(`#inbox a[data-task=%q]`, mine)))
	p.wait("the task from the inbox", fmt.Sprintf(`document.getElementById('task-meta').textContent.startsWith('Task %s') && !!document.querySelector('#approvals button.approve')`, mine))
	n = p.done() + 1
	p.do(chromedp.Click("#approvals button.approve"))
	p.waitDone(n)
	p.wait("the inbox without it", fmt.Sprintf(`!document.querySelector('#inbox a[data-task=%q]') && document.getElementById('inbox-count').textContent === '1'`, mine))

	step("an expired approval")
	p.do(chromedp.Click(`#agents a[href="#/agents/quick"]`))
	p.wait("the quick agent", `document.getElementById('chat-h').textContent.startsWith('quick')`)
	n = p.send(`/call delete_file {"path":"late.log"}`)
	p.waitDone(n)
	// Its long system prompt (with the tools) was cached by the quick task
	// of the inbox step: this request read it and wrote its message. The
	// request's usage says so.
	if got := p.text("#requests .usage"); !regexp.MustCompile(`^tokens: 0 input, [1-9]\d{3,} cache read, [1-9]\d* cache write, 0 output$`).MatchString(got) {
		t.Errorf("the request's usage = %q, want the system prompt read from the cache, the message written", got)
	}
	p.wait("the card to expire", `document.querySelector('#approvals article.card')?.classList.contains('expired')`)
	if got := p.text("#approvals .expiry"); !strings.HasPrefix(got, "Expired at ") {
		t.Errorf("expiry = %q", got)
	}
	if evalJS[int](p, `document.querySelectorAll('#approvals button').length`) != 0 {
		t.Error("an expired approval still offers buttons")
	}
	if evalJS[bool](p, `document.getElementById('message').disabled`) {
		t.Error("the composer stays disabled after the approval expired")
	}
	p.shot("11-expired")
	// The page reloaded: GET task says expired, and so does the card at once.
	p.do(chromedp.Reload())
	p.wait("the expired card after a reload", `document.querySelector('#approvals article.card')?.classList.contains('expired')`)
	// The server agrees, within the second that expires_at (RFC 3339, whole
	// seconds) leaves out: the console counts from the second shown.
	task := evalJS[string](p, `location.hash.split('/').pop()`)
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body := call(t, "GET", base+"/agents/quick/tasks/"+task, "alice", "")
		pa := decode(t, body)["pending_approvals"].([]any)
		if code == 200 && len(pa) == 1 && pa[0].(map[string]any)["expired"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET task: %d %s, want one expired pending approval", code, body)
		}
	}
	if !exists("late.log") {
		t.Error("late.log was deleted")
	}

	step("a decision that lost to another tab shows the winner")
	p.do(chromedp.Click(`#agents a[href="#/agents/assistant"]`))
	p.wait("the assistant", `document.getElementById('chat-h').textContent.startsWith('assistant')`)
	n = p.send(`/call delete_file {"path":"y.log"}`)
	p.waitDone(n)
	p.wait("the card", `!!document.querySelector('#approvals button.approve')`)
	task = evalJS[string](p, `location.hash.split('/').pop()`)
	code, body := call(t, "GET", base+"/agents/assistant/tasks/"+task, "alice", "")
	if code != 200 {
		t.Fatalf("GET task: %d %s", code, body)
	}
	rid := decode(t, body)["requests"].([]any)[0].(map[string]any)["request_id"].(string)
	code, body = call(t, "POST", base+"/agents/assistant/tasks/"+task+"/requests/"+rid+"/resume", "alice", `{"action":"reject","reason":"handled in another tab"}`)
	if code != 200 {
		t.Fatalf("the other tab's decision: %d %s", code, body)
	}
	p.do(chromedp.Click("#approvals button.approve"))
	p.wait("the winner", `!document.getElementById('notice').hidden`)
	if got := p.text("#notice"); !strings.HasPrefix(got, "Another decision was recorded first: reject by alice at ") || !strings.Contains(got, "“handled in another tab”") {
		t.Errorf("notice = %q", got)
	}
	p.wait("the history with the winning decision", `[...document.querySelectorAll('#transcript .decision')].some((e) => e.textContent.startsWith('Rejected by alice'))`)
	if evalJS[int](p, `document.querySelectorAll('#approvals button').length`) != 0 {
		t.Error("the lost approval is still offered")
	}
	if !exists("y.log") {
		t.Error("y.log was deleted although the winning decision rejected it")
	}
	p.shot("12-conflict")

	step("reconnect after the connection drops")
	p.newTask()
	since := len(proxy.requests())
	// 1 request_started, 5 thinking, 5 answer deltas, request_complete: the
	// POST's stream is cut after 3 events; the reconnected stream is held
	// before its last event, to look at what was rendered live.
	dropped := proxy.arm(&cut{match: isPOST("/invoke"), after: 3, drop: true, release: make(chan struct{})})
	held := proxy.arm(&cut{match: func(r *http.Request) bool { return r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/events") }, after: 8, release: make(chan struct{})})
	n = p.send("/think a b c d e\nsome words to stream")
	select {
	case <-dropped.reached:
	case <-time.After(20 * time.Second):
		t.Fatalf("the stream did not start\n%s", p.dump())
	}
	// Cut the connection once the page has shown what came before the cut
	// (bytes still unread when a connection resets are lost).
	p.wait("the first events", `document.querySelector('#transcript .thinking.live .text')?.textContent === 'a b'`)
	dropped.Release()
	select {
	case <-held.reached:
	case <-time.After(20 * time.Second):
		t.Fatalf("no reconnection\n%s", p.dump())
	}
	p.wait("the whole answer, live", `document.querySelector('#transcript .answer.live .text')?.textContent === 'echo: some words to stream'`)
	if got := p.text("#transcript .thinking.live .text"); got != "a b c d e" {
		t.Errorf("thinking across the reconnect = %q, want %q", got, "a b c d e")
	}
	if got := evalJS[int](p, `document.querySelectorAll('#transcript .live').length`); got != 2 {
		t.Errorf("%d live entries, want 2 (one thinking, one answer)", got)
	}
	if got := p.text("#status"); got != "Reconnected; following the request." {
		t.Errorf("status = %q", got)
	}
	p.shot("13-reconnected")
	held.Release()
	p.waitDone(n)
	if got := p.text("#transcript .answer"); got != "echo: some words to stream" {
		t.Errorf("answer = %q", got)
	}
	var followed []string
	for _, r := range proxy.requests()[since:] {
		if r.method == "GET" && strings.HasSuffix(r.path, "/events") {
			followed = append(followed, r.lastEventID)
		}
	}
	if len(followed) != 1 || followed[0] != "3" {
		t.Errorf("reconnections with Last-Event-ID %q, want one with 3", followed)
	}

	step("a phone's screen")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.wait("the layout", `document.documentElement.scrollWidth <= window.innerWidth`)
	p.shot("14-phone")
	p.do(chromedp.EmulateViewport(1280, 900))

	step("CORS: the console calls the API on another origin")
	seen := len(proxy.requests())
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#base-url", base), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("the agents from the other origin", `document.querySelectorAll('#agents a').length === 2 && document.body.dataset.ready === 'true'`)
	for _, r := range proxy.requests()[seen:] {
		if strings.HasPrefix(r.path, "/agents") {
			t.Errorf("%s %s went through the page's origin, not the API's", r.method, r.path)
		}
	}
	step("a bearer token instead of a user name")
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#token", "bob"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("bob's inbox", fmt.Sprintf(`document.body.dataset.ready === 'true' && !!document.querySelector('#inbox a[data-task=%q]') && document.querySelectorAll('#inbox a').length === 1`, bobs))
	if got := p.text("#conn-summary"); got != "bearer token @ "+base {
		t.Errorf("connection summary %q", got)
	}
	p.shot("15-token")

	step("done")
	for _, m := range console() {
		if m.Type == chromedp.ConsoleException {
			t.Errorf("the page threw: %s (%s:%d)", m.Text, m.URL, m.Line)
		}
	}
}

// watchConsole collects the page's console messages and exceptions, logging
// each; the function returned gives those seen so far.
func watchConsole(t *testing.T, ctx context.Context) func() []chromedp.ConsoleMessage {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var msgs []chromedp.ConsoleMessage
	done := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			t.Logf("page console: %s %s", m.Type, m.Text)
		}
		return append([]chromedp.ConsoleMessage(nil), msgs...)
	}
}

func isPOST(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, suffix) }
}

// hitch serve prints the console's URL, serves it, and answers a CORS
// preflight from --cors-origin.
func TestServeConsole(t *testing.T) {
	const origin = "https://console.example.com"
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--addr", "127.0.0.1:0", "--cors-origin", origin}, out, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	url := "http://" + addr + "/console/"
	if !strings.Contains(out.String(), "hitch: console on "+url+"\n") {
		t.Errorf("stdout %q does not give the console's URL %s", out, url)
	}
	code, body := call(t, "GET", url, "", "")
	if code != 200 || !strings.Contains(string(body), "<title>Hitch console</title>") {
		t.Errorf("GET %s: %d %.100s", url, code, body)
	}
	code, body = call(t, "OPTIONS", "http://"+addr+"/agents/assistant/invoke", "", "", "Origin", origin, "Access-Control-Request-Method", "POST")
	if code != http.StatusNoContent {
		t.Errorf("preflight: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/agents", nil)
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != origin {
		t.Errorf("GET /agents from %s: %d, Access-Control-Allow-Origin %q", origin, resp.StatusCode, got)
	}
}

// The console with an agent that calls a remote agent over A2A (the
// README's examples/remote-agent): the remote's call shows as a card and
// is decided at the caller — the browser never calls the other system —
// and the remote runs it; the inbox shows the paused task the same way.
func TestConsoleRemoteAgent(t *testing.T) {
	ctx := chromium.New(t, 1280, 900)
	remote, sandbox, _ := startServe(t)
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"r1.log", "r2.log"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "remote-agent", "front.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// front also calls keeper, a local agent keeping files of its own: a
	// round may wait on both.
	frontDir := t.TempDir()
	const exampleURL = "http://${HITCH_A2A_ADDR:-127.0.0.1:8080}"
	if !bytes.Contains(example, []byte(exampleURL)) {
		t.Fatalf("the example does not name %s", exampleURL)
	}
	frontDef := append(bytes.Replace(example, []byte(exampleURL), []byte(remote), 1), "      - agent: keeper\n"...)
	if err := os.WriteFile(filepath.Join(frontDir, "front.yaml"), frontDef, 0o644); err != nil {
		t.Fatal(err)
	}
	assistant, err := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(frontDir, "keeper.yaml"), bytes.Replace(assistant, []byte("name: assistant"), []byte("name: keeper"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	keeperFiles := filepath.Join(frontDir, "sandbox")
	if err := os.MkdirAll(keeperFiles, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keeperFiles, "k.log"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "r3.log"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HITCH_REMOTE_TOKEN", "Bearer bob")
	proxy := &streamProxy{}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	front, _, _ := startServe(t, "--agents", frontDir)
	proxy.target = front

	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	console := watchConsole(t, ctx)
	p.do(chromedp.Navigate(ps.URL + "/console/"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("front", `document.body.dataset.ready === 'true' && !!document.querySelector('#agents a[href="#/agents/front"]')`)
	p.do(chromedp.Click(`#agents a[href="#/agents/front"]`))
	p.wait("front's chat", `document.getElementById('chat-h').textContent.startsWith('front')`)

	remoteCall := func(file string) string {
		inner, _ := json.Marshal(map[string]string{"path": file})
		msg, _ := json.Marshal(map[string]string{"message": "/call delete_file " + string(inner)})
		return "/call assistant " + string(msg)
	}
	gone := func(f string) bool {
		_, err := os.Stat(filepath.Join(sandbox, f))
		return os.IsNotExist(err)
	}

	// From the stream's approval_required.
	n := p.send(remoteCall("r1.log"))
	p.waitDone(n)
	p.wait("the remote's card", `document.querySelector('#approvals article.card[data-call] h3')?.textContent === 'delete_file'`)
	p.shot("remote-01-card")
	p.do(chromedp.Click("#approvals button.approve"))
	p.waitDone(n + 1)
	p.wait("the answer", `[...document.querySelectorAll('#transcript li')].some((e) => e.textContent.includes('deleted r1.log'))`)
	if !gone("r1.log") {
		t.Error("r1.log is still there")
	}
	p.shot("remote-02-approved")

	// From GET task (the inbox), after a reload.
	p.newTask()
	n = p.send(remoteCall("r2.log"))
	p.waitDone(n)
	p.do(chromedp.Reload())
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.wait("the inbox", `!!document.querySelector('#inbox a')`)
	p.do(chromedp.Click("#inbox a"))
	p.wait("the remote's card", `document.querySelector('#approvals article.card[data-call] h3')?.textContent === 'delete_file'`)
	p.do(chromedp.Click("#approvals button.approve"))
	p.wait("the answer", `[...document.querySelectorAll('#transcript li')].some((e) => e.textContent.includes('deleted r2.log'))`)
	if !gone("r2.log") {
		t.Error("r2.log is still there")
	}

	// A round waiting on the remote and on the local keeper: both cards,
	// decided together at front.
	p.newTask()
	keeperCall := strings.Replace(remoteCall("k.log"), "/call assistant ", "/call keeper ", 1)
	n = p.send(remoteCall("r3.log") + "\n" + keeperCall)
	p.waitDone(n)
	p.wait("two cards", `document.querySelectorAll('#approvals article.card[data-call]').length === 2`)
	p.shot("remote-03-two-cards")
	p.do(chromedp.Click("#approvals article.card[data-call]:nth-of-type(1) button.approve"))
	p.do(chromedp.Click("#approvals article.card[data-call]:nth-of-type(2) button.approve"))
	p.wait("both answers", `['deleted r3.log', 'deleted k.log'].every((w) => [...document.querySelectorAll('#transcript li')].some((e) => e.textContent.includes(w)))`)
	if _, err := os.Stat(filepath.Join(keeperFiles, "k.log")); !gone("r3.log") || !os.IsNotExist(err) {
		t.Errorf("after approving both: r3.log gone %v, k.log %v", gone("r3.log"), err)
	}
	for _, r := range proxy.requests() {
		if r.method == "POST" && strings.HasSuffix(r.path, "/resume") && !strings.HasPrefix(r.path, "/agents/front/") {
			t.Errorf("the console decided at %s, not at front", r.path)
		}
	}
	for _, m := range console() {
		if m.Type == chromedp.ConsoleException {
			t.Errorf("the page threw: %s (%s:%d)", m.Text, m.URL, m.Line)
		}
	}
}
