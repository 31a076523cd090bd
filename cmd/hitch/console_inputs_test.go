package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/chromium"
)

// askerAgent pauses for input: ask_user, a client tool with a small result
// schema, one whose result is a form of every kind of field, and an
// approval.
const askerAgent = `apiVersion: tealagents/v1alpha1
kind: Agent
name: asker
version: 0.1
description: Asks questions, takes results from the client, deletes files with approval.
spec:
  agent:
    name: default
    model: us.anthropic.claude-sonnet-4-20250514-v1:0
    system_prompt: You ask the person when you need to.
    max_tokens: 256
    tools:
      - builtin: ask_user
      - client: pick_region
        description: Let the person pick a region
        input_schema: {type: object, properties: {hint: {type: string}}}
        result_schema: {type: object, properties: {region: {type: string}}, required: [region]}
      - client: book_trip
        description: The person books a trip in a form
        input_schema: {type: object}
        result_schema:
          type: object
          required: [name, nights, class]
          properties:
            name: {type: string, title: Name, minLength: 1}
            nights: {type: integer, title: Nights, minimum: 1, maximum: 14}
            budget: {type: number, title: Budget, description: In euros}
            insured: {type: boolean, title: Insured}
            class: {type: string, title: Class, enum: [economy, business]}
            meals: {type: array, title: Meals, items: {type: string, enum: [breakfast, lunch, dinner]}}
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [delete_file]
`

// staleTasks rewrites GET task answers while armed: a console holding an
// older copy of what an input asks than the server's, so that an answer
// the server refuses gets past the console's own check.
type staleTasks struct {
	next  http.Handler
	armed atomic.Bool
	old   []byte
	new   []byte
}

func (h *staleTasks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.armed.Load() || r.Method != "GET" || !strings.Contains(r.URL.Path, "/tasks/") || strings.HasSuffix(r.URL.Path, "/events") {
		h.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(bytes.ReplaceAll(rec.Body.Bytes(), h.old, h.new))
}

// toolResults reads a task's tool results by tool name: a text result as
// its string, a JSON one as its value.
func toolResults(t *testing.T, task map[string]any) map[string]any {
	t.Helper()
	names := map[string]string{}
	out := map[string]any{}
	for _, it := range task["items"].([]any) {
		for _, b := range it.(map[string]any)["content"].([]any) {
			b := b.(map[string]any)
			switch b["type"] {
			case "tool_use":
				names[b["id"].(string)] = b["name"].(string)
			case "tool_result":
				name := names[b["tool_use_id"].(string)]
				if b["status"] != "success" {
					out[name] = fmt.Sprintf("%s: %v", b["status"], b["content"])
					continue
				}
				c := b["content"].([]any)[0].(map[string]any)
				if c["type"] == "json" {
					out[name] = c["json"]
				} else {
					out[name] = c["text"]
				}
			}
		}
	}
	return out
}

// decisionCalls reads the decided calls of a task's first request's last
// round: tool name → {action, kind, result_hash}.
func decisionCalls(t *testing.T, task map[string]any) map[string]map[string]any {
	t.Helper()
	names := map[string]string{}
	for _, it := range task["items"].([]any) {
		for _, b := range it.(map[string]any)["content"].([]any) {
			if b := b.(map[string]any); b["type"] == "tool_use" {
				names[b["id"].(string)] = b["name"].(string)
			}
		}
	}
	decs, _ := task["requests"].([]any)[0].(map[string]any)["decisions"].([]any)
	if len(decs) == 0 {
		return nil
	}
	out := map[string]map[string]any{}
	for _, c := range decs[len(decs)-1].(map[string]any)["calls"].([]any) {
		c := c.(map[string]any)
		out[names[c["tool_call_id"].(string)]] = map[string]any{"action": c["action"], "kind": c["kind"], "result_hash": c["result_hash"]}
	}
	return out
}

func hashOf(v string) string { return agent.InputHash(json.RawMessage(v)) }

// TestConsoleInputs answers pending inputs in the console, in a real
// headless Chromium against the real hitch serve stack: a question's
// choices, a client tool's result form and an approval settled in one
// resume; a form of every kind of field (and a question whose schema is one
// integer); an answer refused by the console's check, then by the server's
// (400 invalid_input) with what was typed kept; and an answer that lost to
// another tab (409).
func TestConsoleInputs(t *testing.T) {
	ctx := chromium.New(t, 1280, 1000)
	agentsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(agentsDir, "asker.yaml"), []byte(askerAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Join(agentsDir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "q.log"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := &streamProxy{}
	stale := &staleTasks{next: proxy, old: []byte(`"maximum":14,`), new: nil}
	ps := httptest.NewServer(stale)
	t.Cleanup(ps.Close)
	base, _, _ := startServe(t, "--agents", agentsDir)
	proxy.target = base

	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	console := watchConsole(t, ctx)
	step := func(name string) { t.Logf("%6.2fs %s", time.Since(p.start).Seconds(), name) }
	getTask := func(id string) map[string]any {
		t.Helper()
		code, body := call(t, "GET", base+"/agents/asker/tasks/"+id, "alice", "")
		if code != 200 {
			t.Fatalf("GET task: %d %s", code, body)
		}
		return decode(t, body)
	}
	resumes := func(since int) []string {
		var out []string
		for _, r := range proxy.requests()[since:] {
			if strings.HasSuffix(r.path, "/resume") {
				out = append(out, r.method+" "+r.path)
			}
		}
		return out
	}
	currentTask := func() string { return evalJS[string](p, `location.hash.split('/').pop()`) }
	value := func(sel string) string {
		t.Helper()
		return evalJS[string](p, fmt.Sprintf(`document.querySelector(%q)?.value ?? '(none)'`, sel))
	}
	const q = `#approvals article.card.input[data-kind=question]`
	const client = `#approvals article.card.input[data-kind=client]`
	const bar = `#approvals .round-bar`

	step("open the console as alice")
	p.do(chromedp.Navigate(ps.URL + "/console/"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("asker", `document.body.dataset.ready === 'true' && !!document.querySelector('#agents a[href="#/agents/asker"]')`)
	p.do(chromedp.Click(`#agents a[href="#/agents/asker"]`))
	p.wait("asker's chat", `document.getElementById('chat-h').textContent.startsWith('asker')`)

	step("a question with choices, a client tool and an approval: one round, one resume")
	n := p.send("/call ask_user {\"question\":\"Which size?\",\"choices\":[\"S\",\"M\",\"L\"]}\n" +
		"/call pick_region {\"hint\":\"north\"}\n/call delete_file {\"path\":\"q.log\"}")
	p.waitDone(n)
	p.wait("three cards and the round's Send", `document.querySelectorAll('#approvals article.card[data-call]').length === 3 && !!document.querySelector('#approvals .round-bar button.send-round')`)
	if got := p.text(q + " .question"); got != "Which size?" {
		t.Errorf("question = %q", got)
	}
	if got := evalJS[[]string](p, `[...document.querySelectorAll('`+q+` button.choice')].map((b) => b.textContent)`); !cmp.Equal(got, []string{"S", "M", "L"}) {
		t.Errorf("choices = %q", got)
	}
	if got := p.text(client + " pre.input"); !strings.Contains(got, `"hint": "north"`) {
		t.Errorf("the client tool's input = %q", got)
	}
	if !evalJS[bool](p, `document.querySelector('`+client+` [data-field=region] .req') !== null && document.querySelector('`+client+` input[name=region]').getAttribute('aria-required') === 'true'`) {
		t.Error("region is not marked required")
	}
	if got := p.text("#status"); got != "Paused: waiting for your answers." {
		t.Errorf("status = %q", got)
	}
	if got := evalJS[string](p, `document.getElementById('message').disabled + ' ' + document.getElementById('message').placeholder`); got != "true This task waits for your answers above." {
		t.Errorf("composer: %q, want it disabled while the task waits for answers", got)
	}
	p.shot("inputs-01-round")
	before := len(proxy.requests())
	// Nothing filled in: nothing goes out, and each card says what it lacks.
	p.do(chromedp.Click(bar + " button.send-round"))
	p.wait("what is missing", `document.querySelector('`+bar+` .errors')?.textContent.startsWith('3 of the 3 calls of this round still need you')`)
	if got := p.text(q + " .errors"); got != "Pick one of the choices." {
		t.Errorf("question errors = %q", got)
	}
	if got := p.text(client + " .errors"); got != "region: is required" {
		t.Errorf("client errors = %q", got)
	}
	p.do(chromedp.Click(q+` button.choice[data-choice="M"]`), chromedp.SendKeys(client+" input[name=region]", "eu-west-1"),
		chromedp.Click(`#approvals article.card:not(.input) button.approve`))
	p.wait("the approval noted", `document.querySelector('#approvals article.card:not(.input) .outcome').textContent.startsWith('Your choice: approve. It goes out with')`)
	if got := evalJS[string](p, `document.querySelector('`+q+` button.choice[aria-pressed=true]')?.textContent`); got != "M" {
		t.Errorf("pressed choice = %q", got)
	}
	if got := resumes(before); len(got) != 0 {
		t.Errorf("sent before the round was complete: %q", got)
	}
	p.shot("inputs-02-filled")
	p.do(chromedp.Click(bar + " button.send-round"))
	p.waitDone(n + 1)
	if got := resumes(before); len(got) != 1 {
		t.Errorf("resumes = %q, want one", got)
	}
	task := getTask(currentTask())
	if task["status"] != "Completed" {
		t.Fatalf("task %v, want Completed", task["status"])
	}
	want := map[string]any{"ask_user": "M", "pick_region": map[string]any{"region": "eu-west-1"}, "delete_file": "deleted q.log"}
	if diff := cmp.Diff(want, toolResults(t, task)); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	wantCalls := map[string]map[string]any{
		"ask_user":    {"action": "answer", "kind": "question", "result_hash": hashOf(`"M"`)},
		"pick_region": {"action": "answer", "kind": "client", "result_hash": hashOf(`{"region":"eu-west-1"}`)},
		"delete_file": {"action": "approve", "kind": nil, "result_hash": nil},
	}
	if diff := cmp.Diff(wantCalls, decisionCalls(t, task)); diff != "" {
		t.Errorf("the round's decision (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "q.log")); !os.IsNotExist(err) {
		t.Errorf("q.log after the approval: %v", err)
	}
	p.wait("the answers in the history", `[...document.querySelectorAll('#transcript .decision')].filter((e) => e.textContent.startsWith('Answered by alice')).length === 2`)
	if got := p.text("#transcript li:last-child"); got != `results: ask_user success: M; pick_region success: {"region":"eu-west-1"}; delete_file success: deleted q.log` {
		t.Errorf("last entry = %q", got)
	}
	if evalJS[int](p, `document.querySelectorAll('#approvals button').length`) != 0 {
		t.Error("the answered round still offers buttons")
	}
	p.shot("inputs-03-answered")

	step("a form of every kind of field, and a question whose schema is an integer")
	p.newTask()
	n = p.send("/call book_trip {}\n/call ask_user {\"question\":\"How many guests?\",\"schema\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9}}")
	p.waitDone(n)
	p.wait("the form", `!!document.querySelector('`+client+` select[name=class]')`)
	type fieldInfo struct {
		Name     string `json:"name"`
		Control  string `json:"control"`
		Required bool   `json:"required"`
	}
	var fields []fieldInfo
	raw := evalJS[string](p, `JSON.stringify([...document.querySelectorAll('`+client+` .field')].map((f) => {
		const c = f.querySelector('select, input, fieldset');
		const control = c.tagName === 'SELECT' ? 'select' : f.querySelector('fieldset') ? 'checkboxes' : c.type;
		return { name: f.dataset.field, control, required: !!f.querySelector('.req') };
	}))`)
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		t.Fatal(err)
	}
	// In the schema's order, as the server gives it (keys sorted).
	wantFields := []fieldInfo{{"budget", "number", false}, {"class", "select", true}, {"insured", "checkbox", false},
		{"meals", "checkboxes", false}, {"name", "text", true}, {"nights", "number", true}}
	if diff := cmp.Diff(wantFields, fields); diff != "" {
		t.Errorf("the form's fields (-want +got):\n%s", diff)
	}
	if got := p.text(client + " [data-field=budget] .help"); got != "In euros" {
		t.Errorf("budget's help = %q", got)
	}
	if got := evalJS[string](p, `document.querySelector('`+q+` input[type=number]')?.step`); got != "1" {
		t.Errorf("the integer question's step = %q, want a number field of step 1", got)
	}
	p.do(chromedp.SendKeys(client+" input[name=name]", "Ada Lovelace"),
		chromedp.SendKeys(client+" input[name=nights]", "3"),
		chromedp.SendKeys(client+" input[name=budget]", "1250.5"),
		chromedp.Click(client+" input[name=insured]"),
		chromedp.SetValue(client+" select[name=class]", "1"), // business
		chromedp.Click(client+` [data-field=meals] label:nth-of-type(1) input`),
		chromedp.Click(client+` [data-field=meals] label:nth-of-type(3) input`),
		chromedp.SendKeys(q+" input[type=number]", "2"))
	p.shot("inputs-04-form")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.wait("the form to fit a phone's screen", `document.documentElement.scrollWidth <= window.innerWidth`)
	p.shot("inputs-04b-phone")
	p.do(chromedp.EmulateViewport(1280, 1000))
	p.do(chromedp.Click(bar + " button.send-round"))
	p.waitDone(n + 1)
	task = getTask(currentTask())
	want = map[string]any{
		"book_trip": map[string]any{"name": "Ada Lovelace", "nights": 3.0, "budget": 1250.5, "insured": true, "class": "business", "meals": []any{"breakfast", "dinner"}},
		"ask_user":  2.0,
	}
	if diff := cmp.Diff(want, toolResults(t, task)); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if task["status"] != "Completed" {
		t.Errorf("task %v, want Completed", task["status"])
	}

	step("an answer the console refuses, then one the server refuses: what was typed stays")
	code, body := call(t, "POST", base+"/agents/asker/invoke", "alice", `{"items":[{"content":"/call book_trip {}"}]}`)
	if code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	bad := decode(t, body)
	badTask := bad["task_id"].(string)
	callID := bad["pending_inputs"].([]any)[0].(map[string]any)["tool_call_id"].(string)
	stale.armed.Store(true) // the console's copy of the form has no maximum for nights
	p.do(chromedp.Click("#inbox-refresh"))
	p.wait("the inbox", fmt.Sprintf(`!!document.querySelector('#inbox a[data-task=%q]')`, badTask))
	p.do(chromedp.Click(fmt.Sprintf(`#inbox a[data-task=%q]`, badTask)))
	p.wait("the form", fmt.Sprintf(`document.getElementById('task-meta').textContent.startsWith('Task %s') && !!document.querySelector('%s select[name=class]')`, badTask, client))
	if evalJS[string](p, `document.querySelector('`+client+` input[name=nights]').max`) != "" {
		t.Fatal("the console's copy of the form still has nights' maximum: the server's refusal is not reached")
	}
	before = len(proxy.requests())
	p.do(chromedp.SendKeys(client+" input[name=nights]", "20"), chromedp.SetValue(client+" select[name=class]", "0"),
		chromedp.Click(bar+" button.send-round"))
	p.wait("the console's check", `document.querySelector('`+client+` .errors')?.textContent === 'Name: is required'`)
	if got := resumes(before); len(got) != 0 {
		t.Errorf("an answer without its required name was sent: %q", got)
	}
	p.do(chromedp.SendKeys(client+" input[name=name]", "Bob"), chromedp.Click(bar+" button.send-round"))
	p.wait("the server's refusal", `document.querySelector('`+bar+` .errors')?.textContent.startsWith('The server refused the answers: ')`)
	refusal := p.text(bar + " .errors")
	if !strings.Contains(refusal, callID) || !strings.Contains(refusal, "nights") {
		t.Errorf("refusal = %q, want the server's invalid_input message naming %s and nights", refusal, callID)
	}
	if got := p.text(client + " .errors"); got != refusal {
		t.Errorf("the card's errors = %q, want the server's message %q", got, refusal)
	}
	if got := evalJS[string](p, `document.activeElement?.name`); got != "nights" {
		t.Errorf("focus on %q after the refusal, want the field it names (nights)", got)
	}
	if got := []string{value(client + " input[name=name]"), value(client + " input[name=nights]"), value(client + " select[name=class]")}; !cmp.Equal(got, []string{"Bob", "20", "0"}) {
		t.Errorf("after the refusal the form holds %q, want what was typed", got)
	}
	if evalJS[bool](p, `document.querySelector('`+bar+` button.send-round').disabled || document.querySelector('`+client+` input[name=nights]').disabled`) {
		t.Error("the round stays disabled after the server refused it")
	}
	if got := resumes(before); len(got) != 1 {
		t.Errorf("resumes = %q, want the one refused", got)
	}
	p.shot("inputs-05-refused")
	task = getTask(badTask)
	pi, _ := task["pending_inputs"].([]any)
	if task["status"] != "Paused" || len(pi) != 1 || pi[0].(map[string]any)["tool_call_id"] != callID || decisionCalls(t, task) != nil {
		t.Errorf("after the refusal: status %v, pending inputs %v, decisions %v; want it unchanged", task["status"], pi, decisionCalls(t, task))
	}
	stale.armed.Store(false)
	evalJS[bool](p, `(document.querySelector('`+client+` input[name=nights]').value = '', true)`)
	p.do(chromedp.SendKeys(client+" input[name=nights]", "4"),
		chromedp.Click(bar+" button.send-round"))
	p.wait("the answer in the history", `[...document.querySelectorAll('#transcript .decision')].some((e) => e.textContent.startsWith('Answered by alice'))`)
	p.wait("the request to complete", `document.getElementById('status').textContent === 'Request Completed.'`)
	want = map[string]any{"book_trip": map[string]any{"name": "Bob", "nights": 4.0, "class": "economy", "insured": false}}
	if diff := cmp.Diff(want, toolResults(t, getTask(badTask))); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}

	step("an answer that lost to another tab: the server's 409 in the card, the answer typed kept")
	code, body = call(t, "POST", base+"/agents/asker/invoke", "alice", `{"items":[{"content":"/call ask_user {\"question\":\"Which colour?\"}"}]}`)
	if code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	lost := decode(t, body)
	lostTask := lost["task_id"].(string)
	p.do(chromedp.Click("#inbox-refresh"))
	p.wait("the inbox", fmt.Sprintf(`!!document.querySelector('#inbox a[data-task=%q]')`, lostTask))
	p.do(chromedp.Click(fmt.Sprintf(`#inbox a[data-task=%q]`, lostTask)))
	p.wait("the question", `document.querySelector('`+q+` .question')?.textContent === 'Which colour?'`)
	p.do(chromedp.SendKeys(q+" textarea[name=answer]", "blue"))
	rid := lost["request_id"].(string)
	pid := lost["pending_inputs"].([]any)[0].(map[string]any)["tool_call_id"].(string)
	code, body = call(t, "POST", base+"/agents/asker/tasks/"+lostTask+"/requests/"+rid+"/resume", "alice",
		`{"decisions":[{"tool_call_id":"`+pid+`","action":"answer","result":"red"}]}`)
	if code != 200 {
		t.Fatalf("the other tab's answer: %d %s", code, body)
	}
	p.do(chromedp.Click(bar + " button.send-round"))
	p.wait("the conflict", `document.querySelector('`+bar+` .errors')?.textContent.startsWith('The server refused the answers: ')`)
	if got := p.text(bar + " .errors"); !strings.Contains(got, "Another decision was recorded first: answer by alice at ") {
		t.Errorf("conflict = %q, want the winner", got)
	}
	if got := value(q + " textarea[name=answer]"); got != "blue" {
		t.Errorf("the answer typed = %q, want blue kept", got)
	}
	if got := p.text("#approvals h3"); got != "Not sent" {
		t.Errorf("heading = %q", got)
	}
	if evalJS[int](p, `document.querySelectorAll('#approvals button:not(:disabled)').length`) != 0 {
		t.Error("the lost round still offers a button")
	}
	p.wait("the composer", `!document.getElementById('send').disabled`)
	if diff := cmp.Diff(map[string]any{"ask_user": "red"}, toolResults(t, getTask(lostTask))); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	p.shot("inputs-06-conflict")

	for _, m := range console() {
		if m.Type == chromedp.ConsoleException {
			t.Errorf("the page threw: %s (%s:%d)", m.Text, m.URL, m.Line)
		}
	}
}

// TestConsoleElicitation answers an MCP server's form in the console,
// end to end: the example server's reopen_ticket asks why; the person
// fills the form in Chromium and sends; the server gets the content and
// the model its result. The answer names its round (the console always
// sends it: a call that asks again keeps its id).
func TestConsoleElicitation(t *testing.T) {
	ctx := chromium.New(t, 1280, 1000)
	served, _ := startTickets(t)
	base, resumes := recordResumes(t, served)
	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	watchConsole(t, ctx)
	const card = `#approvals article.card.input[data-kind=elicitation]`

	p.do(chromedp.Navigate(base + "/console/"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("tickets", `document.body.dataset.ready === 'true' && !!document.querySelector('#agents a[href="#/agents/tickets"]')`)
	p.do(chromedp.Click(`#agents a[href="#/agents/tickets"]`))
	p.wait("tickets' chat", `document.getElementById('chat-h').textContent.startsWith('tickets')`)
	n := p.send(`/call tickets_reopen_ticket {"id":"T-3"}`)
	p.waitDone(n)
	// (The card's decline form has a reason field of its own.)
	p.wait("the server's form", `!!document.querySelector('`+card+` .field[data-field=reason] input')`)
	if got := p.text(card + " .question"); got != `Why reopen T-3 ("Export times out for large reports")?` {
		t.Errorf("the server's message = %q", got)
	}
	p.do(chromedp.SendKeys(card+" .field[data-field=reason] input", "still times out"), chromedp.Click(card+" .field[data-field=urgent] input"))
	p.shot("elicitation-01-filled")
	p.do(chromedp.Click(`#approvals .round-bar button.send-round`))
	p.waitDone(n + 1)
	taskID := evalJS[string](p, `location.hash.split('/').pop()`)
	code, body := call(t, "GET", base+"/agents/tickets/tasks/"+taskID, "alice", "")
	if code != 200 {
		t.Fatalf("GET task: %d %s", code, body)
	}
	task := decode(t, body)
	if got := toolResults(t, task)["tickets_reopen_ticket"]; got != "reopened T-3: still times out (urgent)" {
		t.Errorf("the tool's result = %v", got)
	}
	want := map[string]any{"action": "answer", "kind": "elicitation",
		"result_hash": hashOf(`{"action":"accept","content":{"reason":"still times out","urgent":true}}`)}
	if diff := cmp.Diff(want, decisionCalls(t, task)["tickets_reopen_ticket"]); diff != "" {
		t.Errorf("the decision (-want +got):\n%s", diff)
	}
	if rs := resumes(); len(rs) != 1 || rs[0]["round"] != float64(1) {
		t.Errorf("the console's resumes: %v, want one naming round 1", rs)
	}
	p.shot("elicitation-02-answered")
}
