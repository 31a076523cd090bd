package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/a2a/a2atest"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/notify"
)

// frontYAML calls the remote assistant as the tool billing, as bob.
const frontYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: front
version: 0.1
description: Hands file work to a remote agent.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - agent: billing
        a2a: %s/a2a/assistant
        headers: {Authorization: env:HITCH_TEST_REMOTE_AUTH}
`

// pair is two Hitch stacks: front (here) calls the remote's assistant over
// A2A as the tool billing; the remote knows the caller as bob.
type pair struct {
	remote *stack
	url    string // front's
	store  agent.Store
	engine *agent.Engine
	// relay is the relay's server, when front reaches the remote through one.
	relay *httptest.Server
}

func startPair(t *testing.T) *pair { return startPairWith(t, true) }

// startPairWith starts the pair; dispatch runs front's dispatcher in
// process (hitch serve), else nothing delivers front's outbox (the test
// does, as the notifier would).
func startPairWith(t *testing.T, dispatch bool) *pair {
	return startPairOpts(t, pairOpts{def: agentYAML, dispatch: dispatch})
}

// startPairYAML starts the pair with the remote's assistant defined by def.
func startPairYAML(t *testing.T, def string, dispatch bool) *pair {
	return startPairOpts(t, pairOpts{def: def, dispatch: dispatch})
}

// pairOpts: the remote's assistant, front's dispatcher, front's legs
// (default a minute), and what front reaches the remote through (a relay
// in front of it; nil: directly).
type pairOpts struct {
	def        string
	dispatch   bool
	legTimeout time.Duration
	via        func(remote string) string
	relay      *a2atest.Relay // between front and the remote
	// extra are more agent files of front's system (name → YAML).
	extra map[string]string
	// inputTTL, when set, is front's billing tool's input_ttl.
	inputTTL string
	// reaper runs front's reaper in process, as hitch serve does (always
	// with dispatch).
	reaper bool
}

func startPairOpts(t testing.TB, o pairOpts) *pair {
	t.Helper()
	remote := startStackYAML(t, o.def, false)
	t.Setenv("HITCH_TEST_REMOTE_AUTH", "Bearer bob")
	target := remote.url
	if o.via != nil {
		target = o.via(remote.url)
	}
	var rs *httptest.Server
	if o.relay != nil {
		o.relay.To = remote.url
		rs = httptest.NewServer(o.relay)
		t.Cleanup(rs.Close)
		target = rs.URL
	}
	if o.legTimeout == 0 {
		o.legTimeout = time.Minute
	}
	dispatch := o.dispatch
	dir := t.TempDir()
	front := fmt.Sprintf(frontYAML, target)
	if o.inputTTL != "" {
		front += "        input_ttl: " + o.inputTTL + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "front.yaml"), []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, def := range o.extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, store, feed, srv := serveDir(t, dir, o.legTimeout, false)
	if dispatch {
		ctx, cancel := context.WithCancel(context.Background())
		r := &notify.Runner{D: &notify.Dispatcher{Engine: e, Log: e.Log, PollEvery: 20 * time.Millisecond}, Feed: feed}
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	if o.reaper || dispatch { // hitch serve runs both
		ctx, cancel := context.WithCancel(context.Background())
		rp := &agent.Reaper{Engine: e}
		done := make(chan struct{})
		go func() { rp.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return &pair{remote: remote, url: srv.URL, store: store, engine: e, relay: rs}
}

func httpCall(t testing.TB, method, url, user, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+user)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, m
}

// callBilling is front's message that asks billing to run line.
func callBilling(line string) string {
	msg, _ := json.Marshal(map[string]string{"message": line})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call billing " + string(msg)}}})
	return string(body)
}

func appendLine(file string) string {
	b, _ := json.Marshal(map[string]string{"path": file, "content": "x\n"})
	return "/call append_file " + string(b)
}

// waitStatus reads front's task until it has the status.
func (p *pair) waitStatus(t *testing.T, taskID, status string) map[string]any {
	t.Helper()
	// A hand-off of a call its remote did not answer comes a lease later.
	return p.waitStatusWithin(t, taskID, status, 60*time.Second)
}

// waitStatusWithin is waitStatus, waiting up to d.
func (p *pair) waitStatusWithin(t *testing.T, taskID, status string, d time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+taskID, "alice", "")
		if v["status"] == status {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, want %s: %v", taskID, v["status"], status, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *pair) remoteTask(t *testing.T, taskID string) map[string]any {
	t.Helper()
	code, v := httpCall(t, "GET", p.remote.url+"/agents/assistant/tasks/"+taskID, "bob", "")
	if code != 200 {
		t.Fatalf("the remote task %s: %d %v", taskID, code, v)
	}
	return v
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// A remote agent's input-required pauses its caller across the two
// systems; 20 concurrent approvals at the caller reach the remote once:
// the call runs there once, front completes with the remote's answer, and
// every approval answers that outcome or 409.
func TestRemoteAgentApprovedAtTheCaller(t *testing.T) {
	onBothStores(t, testRemoteAgentApprovedAtTheCaller)
}

func testRemoteAgentApprovedAtTheCaller(t *testing.T) {
	p := startPair(t)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("log.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	pend := paused["pending_approvals"].([]any)
	if len(pend) != 1 {
		t.Fatalf("pending: %v", pend)
	}
	pc := pend[0].(map[string]any)
	if pc["agent"] != "billing" || pc["name"] != "append_file" || !strings.HasPrefix(pc["resume_url"].(string), p.remote.url+"/agents/assistant/tasks/") {
		t.Errorf("front's pending call: %v", pc)
	}
	if in := pc["input"].(map[string]any); in["path"] != "log.txt" {
		t.Errorf("the pending call's input: %v", in)
	}
	taskID := paused["task_id"].(string)
	view := p.waitStatus(t, taskID, "Paused")
	won := view["waiting_on"].([]any)[0].(map[string]any)
	if won["agent"] != "billing" || won["task_id"] != pc["task_id"] || won["request_id"] != pc["request_id"] {
		t.Errorf("waiting_on %v, pending %v", won, pc)
	}
	// The remote task is the remote's own, paused, bob's.
	rv := p.remoteTask(t, pc["task_id"].(string))
	if rv["status"] != "Paused" || rv["user_id"] != "bob" {
		t.Fatalf("the remote task: %v", rv)
	}

	const n = 20
	var wg sync.WaitGroup
	codes := make([]int, n)
	outs := make([]map[string]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], outs[i] = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve","round":`+fmt.Sprint(paused["round"])+`}`)
		}()
	}
	wg.Wait()
	ok := 0
	for i := range n {
		switch codes[i] {
		case 200:
			ok++
			if outs[i]["status"] != "Completed" || !strings.Contains(outs[i]["output"].(string), "append_file") {
				t.Errorf("approval %d: %v", i, outs[i])
			}
		case 409:
		default:
			t.Errorf("approval %d: %d %v", i, codes[i], outs[i])
		}
	}
	if ok == 0 {
		t.Fatal("no approval answered the outcome")
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "log.txt")); got != 1 {
		t.Errorf("append_file ran %d times at the remote, want 1", got)
	}
	rv = p.remoteTask(t, pc["task_id"].(string))
	if rv["status"] != "Completed" {
		t.Errorf("the remote task: %v", rv["status"])
	}
	done := p.waitStatus(t, taskID, "Completed")
	if done["waiting_on"] != nil {
		t.Errorf("waiting_on after the end: %v", done["waiting_on"])
	}
}

// Decided on the remote system: the caller's poll notices and goes on.
func TestRemoteAgentDecidedThere(t *testing.T) { onBothStores(t, testRemoteAgentDecidedThere) }

func testRemoteAgentDecidedThere(t *testing.T) {
	p := startPair(t)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("there.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	code, out := httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve"}`)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("approve at the remote: %d %v", code, out)
	}
	// A decision at the caller now finds the remote decided: refused,
	// nothing changes; the poll continues the caller.
	code, out = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"reject"}`)
	if code != 409 {
		t.Errorf("reject at the caller after the remote's approval: %d %v", code, out)
	}
	done := p.waitStatus(t, paused["task_id"].(string), "Completed")
	if got := lines(t, filepath.Join(p.remote.sandbox, "there.txt")); got != 1 {
		t.Errorf("append_file ran %d times, want 1", got)
	}
	items, _ := json.Marshal(done["items"])
	if !strings.Contains(string(items), "append_file") {
		t.Errorf("front's history lacks the remote's answer: %s", items)
	}
}

// A reject with a reason at the caller reaches the remote's call; a cancel
// at the caller cancels the remote task.
//
// Both over SSE: the caller's stream shows the remote task asking, then
// ending, as child events.
func TestRemoteAgentRejectAndCancel(t *testing.T) { onBothStores(t, testRemoteAgentRejectAndCancel) }

func testRemoteAgentRejectAndCancel(t *testing.T) {
	p := startPair(t)
	evs := sseCall(t, p.url+"/agents/front/invoke", callBilling(appendLine("no.txt")))
	asked := findChild(evs, "approval_required")
	if asked == nil || asked["remote"] != p.remote.url+"/a2a/assistant" {
		t.Fatalf("no child approval_required from the remote: %v", evs)
	}
	// What the remote streamed while it ran: its tool call, live.
	if c := findChild(evs, "tool_call"); c == nil || c["data"].(map[string]any)["name"] != "append_file" || c["task_id"] != asked["task_id"] {
		t.Errorf("no child tool_call streamed from the remote: %v", evs)
	}
	paused := lastData(t, evs, "approval_required")
	if _, ok := paused["resume_url"].(string); !ok {
		t.Fatalf("front's approval_required: %v", paused)
	}
	evs = sseCall(t, p.url+paused["resume_url"].(string), `{"action":"reject","reason":"not today"}`)
	if c := findChild(evs, "request_complete"); c == nil || c["data"].(map[string]any)["status"] != "Completed" {
		t.Errorf("no child request_complete from the remote: %v", evs)
	}
	// What the remote did with the decision streams too, once: its
	// rejection and the call's result, not its first leg again.
	if c := findChild(evs, "rejected"); c == nil || c["data"].(map[string]any)["reason"] != "not today" {
		t.Errorf("no child rejected from the remote: %v", evs)
	}
	if c := findChild(evs, "tool_result"); c == nil || c["data"].(map[string]any)["name"] != "append_file" {
		t.Errorf("no child tool_result from the remote: %v", evs)
	}
	if c := findChild(evs, "tool_call"); c != nil {
		t.Errorf("the remote's first leg was streamed again: %v", c)
	}
	out := lastData(t, evs, "request_complete")
	var code int
	if out["status"] != "Completed" || !strings.Contains(out["output"].(string), "not today") {
		t.Fatalf("reject at the caller: %v", out)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "no.txt")); got != 0 {
		t.Errorf("a rejected append_file ran %d times", got)
	}

	_, paused = httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("no.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	code, out = httpCall(t, "POST", p.url+"/agents/front/tasks/"+paused["task_id"].(string)+"/cancel", "alice", `{"reason":"changed my mind"}`)
	if code != 200 || out["status"] != "Canceled" {
		t.Fatalf("cancel at the caller: %d %v", code, out)
	}
	if rv := p.remoteTask(t, pc["task_id"].(string)); rv["status"] != "Canceled" {
		t.Errorf("the remote task after the caller's cancel: %v", rv["status"])
	}
}

// Bad decisions at the caller are refused by the remote's answer table or
// the caller's, and change nothing on either side.
func TestRemoteAgentBadDecisions(t *testing.T) { onBothStores(t, testRemoteAgentBadDecisions) }

func testRemoteAgentBadDecisions(t *testing.T) {
	p := startPair(t)
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("bad.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"decisions":[{"tool_call_id":"nope","action":"approve"}]}`, 400},
		{`{"action":"approve","round":99}`, 409},
		{`{"decisions":[{"tool_call_id":"` + pc["tool_call_id"].(string) + `","action":"edit","input":{"path":7}}]}`, 400},
	} {
		code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", c.body)
		if code != c.code {
			t.Errorf("%s: %d %v, want %d", c.body, code, out, c.code)
		}
	}
	if rv := p.remoteTask(t, pc["task_id"].(string)); rv["status"] != "Paused" {
		t.Errorf("the remote task after refused decisions: %v", rv["status"])
	}
	p.waitStatus(t, paused["task_id"].(string), "Paused")
	if got := lines(t, filepath.Join(p.remote.sandbox, "bad.txt")); got != 0 {
		t.Errorf("append_file ran %d times", got)
	}
	// An edit the remote's schema takes: it runs with the edited input.
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice",
		`{"decisions":[{"tool_call_id":"`+pc["tool_call_id"].(string)+`","action":"edit","input":{"path":"edited.txt","content":"y\n"}}]}`)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("edit at the caller: %d %v", code, out)
	}
	if lines(t, filepath.Join(p.remote.sandbox, "edited.txt")) != 1 || lines(t, filepath.Join(p.remote.sandbox, "bad.txt")) != 0 {
		t.Error("the edited call did not run as edited")
	}
}

// A message sent again with the same messageId is taken once: the resend
// answers the task the first one made (what makes a caller's takeover
// send its message exactly once).
func TestMessageIDTakenOnce(t *testing.T) { onBothStores(t, testMessageIDTakenOnce) }

func testMessageIDTakenOnce(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	m := text(appendLine("once.txt"))
	first := send(t, c, m)
	again := send(t, c, m)
	if first.ID != again.ID || first.ContextID != again.ContextID {
		t.Errorf("the resend made task %s in %s; the first %s in %s", again.ID, again.ContextID, first.ID, first.ContextID)
	}
	if first.Status.State != a2a.TaskStateInputRequired || again.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("states %s, %s", first.Status.State, again.Status.State)
	}
	// The same id with another message is refused.
	other := text("hello")
	other.ID = m.ID
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: other}); err == nil {
		t.Error("a reused messageId with another message was taken")
	}
}

type sseEvent struct {
	name string
	data map[string]any
}

// sseCall posts body as alice for an SSE answer and reads it to its end.
func sseCall(t *testing.T, url, body string) []sseEvent {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, b)
	}
	var out []sseEvent
	for _, block := range strings.Split(string(b), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			}
		}
		if ev.name != "" {
			out = append(out, ev)
		}
	}
	return out
}

// findChild is the data of the first child event carrying event name.
func findChild(evs []sseEvent, name string) map[string]any {
	for _, e := range evs {
		if e.name == "child" && e.data["event"] == name {
			return e.data
		}
	}
	return nil
}

func lastData(t *testing.T, evs []sseEvent, name string) map[string]any {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].name == name {
			return evs[i].data
		}
	}
	t.Fatalf("no %s event in %v", name, evs)
	return nil
}

// On AWS the notifier hands a paused caller's poll to the resume function
// ({"op": "continue", …, "poll": true}): while the remote task has not
// moved it answers waiting and leaves the item (for the next sweep); once
// it was decided there, it continues the caller and deletes the item.
func TestRemoteAgentPolledByTheResumeFunction(t *testing.T) {
	onBothStores(t, testRemoteAgentPolledByTheResumeFunction)
}

func testRemoteAgentPolledByTheResumeFunction(t *testing.T) {
	p := startPairWith(t, false)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("polled.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	ctx := context.Background()
	var polls []agent.OutboxItem
	items, err := p.store.ListOutbox(ctx, time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range items {
		if o.Kind == agent.OutboxContinue && o.Event == agent.EventPoll && o.RequestID == paused["request_id"] {
			polls = append(polls, o)
		}
	}
	// One, put with the call: it takes a dead leg over, and polls the
	// pause.
	if len(polls) != 1 {
		t.Fatalf("poll items %+v, want 1", polls)
	}
	fn := lambdafn.Continue(p.engine)
	payload := func(o agent.OutboxItem) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"op": "continue", "task_id": o.TaskID, "request_id": o.RequestID, "outbox": o.SK(), "poll": true})
		return b
	}
	out, err := fn(ctx, payload(polls[0]))
	if err != nil {
		t.Fatal(err)
	}
	if a := out.(lambdafn.ContinueAnswer); !a.Waiting || a.Status != agent.StatusPaused {
		t.Errorf("a poll before any decision answered %+v", a)
	}
	if _, err := p.store.GetOutbox(ctx, polls[0].TaskID, polls[0].SK()); err != nil {
		t.Errorf("the poll item after a poll that found nothing: %v", err)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	if code, out := httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve"}`); code != 200 {
		t.Fatalf("approve at the remote: %d %v", code, out)
	}
	out, err = fn(ctx, payload(polls[0]))
	if err != nil {
		t.Fatal(err)
	}
	if a := out.(lambdafn.ContinueAnswer); a.Waiting || a.Status != agent.StatusCompleted {
		t.Errorf("a poll after the remote's decision answered %+v", a)
	}
	if _, err := p.store.GetOutbox(ctx, polls[0].TaskID, polls[0].SK()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the poll item after the caller went on: %v", err)
	}
	// Delivered again (a duplicate): the caller is done, nothing to do.
	if out, err = fn(ctx, payload(polls[0])); err != nil || out.(lambdafn.ContinueAnswer).Status != "" {
		t.Errorf("the stale poll: %+v, %v", out, err)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "polled.txt")); got != 1 {
		t.Errorf("append_file ran %d times", got)
	}
}

// A remote agent that cannot be reached: the call's result says so (the
// caller goes on); a decision at a caller paused on it is 502
// remote_unavailable, and nothing changes — the same decision goes through
// once the remote is back.
func TestRemoteAgentUnreachable(t *testing.T) { onBothStores(t, testRemoteAgentUnreachable) }

func testRemoteAgentUnreachable(t *testing.T) {
	p := startPair(t)
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("down.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	// The remote's listener goes away; its engine and store stay.
	addr := p.remote.srv.Listener.Addr().String()
	p.remote.srv.Listener.Close()
	p.remote.srv.CloseClientConnections()
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 502 || out["error"].(map[string]any)["code"] != "remote_unavailable" {
		t.Fatalf("a decision while the remote is down: %d %v", code, out)
	}
	p.waitStatus(t, paused["task_id"].(string), "Paused")
	// A new call while it is down: an error result, front completes.
	code, done := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("hello"))
	if code != 200 || done["status"] != "Completed" || !strings.Contains(done["output"].(string), "could not be reached") {
		t.Errorf("a call while the remote is down: %d %v", code, done)
	}
	// Back on the same address: the decision goes through.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the remote's address %s could not be taken again: %v", addr, err)
	}
	back := &http.Server{Handler: p.remote.srv.Config.Handler}
	go func() { _ = back.Serve(ln) }()
	t.Cleanup(func() { _ = back.Close() })
	code, out = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("the decision once the remote is back: %d %v", code, out)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "down.txt")); got != 1 {
		t.Errorf("append_file ran %d times", got)
	}
}

// A remote approval that expires ends the caller approval_expired
// (docs/architecture.md, The reaper), found by its poll; no model is called, and a decision at
// the caller after that is refused.
func TestRemoteAgentApprovalExpires(t *testing.T) { onBothStores(t, testRemoteAgentApprovalExpires) }

func testRemoteAgentApprovalExpires(t *testing.T) {
	p := startPairYAML(t, strings.Replace(agentYAML, "requires_approval: [write_file, append_file, delete_file]",
		"requires_approval: [write_file, append_file, delete_file]\n        approval_ttl: 1s", 1), true)
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("late.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	done := p.waitStatus(t, paused["task_id"].(string), "Failed")
	req := done["requests"].([]any)[0].(map[string]any)
	if req["error"].(map[string]any)["code"] != "approval_expired" {
		t.Errorf("front's request: %v", req)
	}
	for _, it := range done["items"].([]any) {
		if it.(map[string]any)["request_id"] == paused["request_id"] && it.(map[string]any)["role"] == "assistant" && it.(map[string]any)["seq"].(float64) > 2 {
			t.Errorf("the model was called after the expiry: %v", it)
		}
	}
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 410 || out["error"].(map[string]any)["code"] != "approval_expired" {
		t.Errorf("a decision after the expiry: %d %v, want 410 approval_expired (one round, one outcome)", code, out)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "late.txt")); got != 0 {
		t.Errorf("append_file ran %d times", got)
	}
}

// A remote that takes the message but never answers while the caller
// waits: the caller's leg runs out of time and hands itself off (202
// Running) rather than give up at once, and once request_timeout passed
// since the first send with no answer, a leg closes the call
// outcome_unknown (docs/api.md, "Remote agents") and goes on to
// Completed. The message had landed: its remote-cancel item finds the task
// it made (the message sent again with its id, taken once) and cancels it,
// so nothing is left waiting there; the call never ran.
func TestRemoteAgentOutlastsTheLeg(t *testing.T) { onBothStores(t, testRemoteAgentOutlastsTheLeg) }

func testRemoteAgentOutlastsTheLeg(t *testing.T) {
	// The message's answer never comes while the caller waits for it (the
	// remote took it at once); other calls go through.
	relay := &a2atest.Relay{}
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if strings.Contains(string(body), `"SendStreamingMessage"`) {
			relay.ServeHTTP(httptest.NewRecorder(), r)
			<-r.Context().Done()
			return
		}
		relay.ServeHTTP(w, r)
	})
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, legTimeout: 3 * time.Second, via: func(remote string) string {
		relay.To = remote
		srv := httptest.NewServer(hold)
		t.Cleanup(srv.Close)
		return srv.URL
	}})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("slow.txt")))
	if code != 202 || out["status"] != "Running" {
		t.Fatalf("front, its leg out of time: %d %v", code, out)
	}
	done := p.waitStatus(t, out["task_id"].(string), "Completed")
	raw, _ := json.Marshal(done["items"])
	if !strings.Contains(string(raw), "outcome_unknown") {
		t.Errorf("front's history: %s, want the call outcome_unknown", raw)
	}
	var tasks []any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, list := httpCall(t, "GET", p.remote.url+"/agents/assistant/tasks", "bob", "")
		tasks, _ = list["tasks"].([]any)
		if len(tasks) == 1 && tasks[0].(map[string]any)["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote's tasks: %v, want one, Canceled", list)
		}
	}
	if reqs := p.remoteTask(t, tasks[0].(map[string]any)["task_id"].(string))["requests"].([]any); len(reqs) != 1 {
		t.Errorf("the remote task holds %d requests, want 1", len(reqs))
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "slow.txt")); got != 0 {
		t.Errorf("append_file ran %d times, want 0", got)
	}
}

// BenchmarkRemoteApproval: a decision sent to a caller paused on a remote
// Hitch over A2A, from the HTTP resume to the caller's Completed answer
// (the decision's message to the remote, the remote's leg, the caller's
// reads of the remote task, the caller's own turn). Both systems on the
// memory store with the local model. p50-ms and p99-ms per approval.
func BenchmarkRemoteApproval(b *testing.B) {
	p := startPairOpts(b, pairOpts{def: agentYAML, dispatch: true})
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		code, paused := httpCall(b, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("bench.txt")))
		if code != 200 || paused["status"] != "Paused" {
			b.Fatalf("front: %d %v", code, paused)
		}
		b.StartTimer()
		start := time.Now()
		code, out := httpCall(b, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
		took = append(took, time.Since(start))
		if code != 200 || out["status"] != "Completed" {
			b.Fatalf("approve: %d %v", code, out)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// The remote unreachable for a while after it took a decision: the
// caller reads its task again until it can (it was sent; the remote owns
// its outcome) and answers the outcome, rather than an error.
func TestRemoteAgentReadAgain(t *testing.T) { onBothStores(t, testRemoteAgentReadAgain) }

func testRemoteAgentReadAgain(t *testing.T) {
	var refusing atomic.Bool
	var refused atomic.Int32
	relay := &a2atest.Relay{Refuse: func(body []byte) bool {
		if refusing.Load() && strings.Contains(string(body), `"GetTask"`) && refused.Add(1) <= 3 {
			return true
		}
		return false
	}}
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay})
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("again.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	refusing.Store(true)
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 200 || out["status"] != "Completed" || !strings.Contains(out["output"].(string), "append_file success") {
		t.Fatalf("approve at the caller with the remote's task unreadable three times: %d %v", code, out)
	}
	if n := refused.Load(); n < 3 {
		t.Errorf("%d reads refused, want 3", n)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "again.txt")); got != 1 {
		t.Errorf("append_file ran %d times", got)
	}
}

// A message whose sending failed on the way is sent again with its id:
// the call goes through, once.
// A message that landed, its answer lost with the connection; the next
// leg finds no connection to the remote at all. That leg's "not sent" says
// nothing of the first leg's send: the caller hands off again rather than
// give the call an error result (which would leave the remote's task
// paused below a caller that moved on — the torture test found it); once
// the remote is reachable, the message sent again finds the task it made,
// and the approval runs the call once.
func TestRemoteNotSentAfterItLanded(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testRemoteNotSentAfterItLanded(t, false) })
}

// The same below a local caller (boss → front → the remote): front's leg
// hands itself off, and boss, which ran front's leg, hands off with it —
// never an error result "ended without an outcome" above a child that
// goes on (the torture test found that next).
func TestRemoteNotSentBelowALocalCaller(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testRemoteNotSentAfterItLanded(t, true) })
}

func testRemoteNotSentAfterItLanded(t *testing.T, viaBoss bool) {
	var p *pair
	away := &awayRelay{}
	relay := away.relay(func() *pair { return p })
	p = startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay, extra: map[string]string{"boss.yaml": bossYAML}})
	root, body := "front", callBilling(appendLine("landed.txt"))
	if viaBoss {
		inner, _ := json.Marshal(map[string]string{"message": appendLine("landed.txt")})
		msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
		b, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
		root, body = "boss", string(b)
	}
	code, out := httpCall(t, "POST", p.url+"/agents/"+root+"/invoke", "alice", body)
	if code != 202 || out["status"] != "Running" {
		t.Fatalf("%s, the remote's answer lost: %d %v", root, code, out)
	}
	task := p.url + "/agents/" + root + "/tasks/" + out["task_id"].(string)
	// Legs of the continuation find no connection for a while.
	time.Sleep(2 * time.Second)
	if _, v := httpCall(t, "GET", task, "alice", ""); v["status"] != "Running" {
		t.Fatalf("%s while the remote is unreachable: %v (want it still Running, the message perhaps landed): %v", root, v["status"], v)
	}
	away.back(t, relay)
	var paused map[string]any
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, paused = httpCall(t, "GET", task, "alice", "")
		if paused["status"] == "Paused" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v, want Paused: %v", root, paused["status"], paused)
		}
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	if reqs := p.remoteTask(t, pc["task_id"].(string))["requests"].([]any); len(reqs) != 1 {
		t.Errorf("the remote task holds %d requests, want 1", len(reqs))
	}
	rid := paused["requests"].([]any)[0].(map[string]any)["request_id"].(string)
	code, done := httpCall(t, "POST", task+"/requests/"+rid+"/resume", "alice",
		`{"decisions":[{"tool_call_id":"`+pc["tool_call_id"].(string)+`","action":"approve"}]}`)
	if code != 200 || done["status"] != "Completed" {
		t.Fatalf("the approval at %s: %d %v", root, code, done)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "landed.txt")); got != 1 {
		t.Errorf("append_file ran %d times", got)
	}
}

// TestCanceledWhileTheRemoteIsSilent: front's message reached the remote
// (a task is made there, paused on its approval) but the answer was lost,
// and the remote stays unreachable. front is canceled meanwhile: its end
// writes a remote-cancel item for the call's message id, though no task
// was learned — once the remote is back, the message is sent again to
// learn its task, which is canceled. Before, only calls whose task was
// known got one, and the remote's task waited there for ever (the
// torture test: a remote gone for good, its caller given up).
func TestCanceledWhileTheRemoteIsSilent(t *testing.T) {
	onBothStores(t, testCanceledWhileTheRemoteIsSilent)
}

func testCanceledWhileTheRemoteIsSilent(t *testing.T) {
	var p *pair
	away := &awayRelay{}
	relay := away.relay(func() *pair { return p })
	p = startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("silent.txt")))
	if code != 202 || out["status"] != "Running" {
		t.Fatalf("front, the remote's answer lost: %d %v", code, out)
	}
	taskID := out["task_id"].(string)
	code, canceled := httpCall(t, "POST", p.url+"/agents/front/tasks/"+taskID+"/cancel", "alice", `{"reason":"not now"}`)
	if code != 200 && code != 202 {
		t.Fatalf("cancel of front: %d %v", code, canceled)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if v := getTask(t, p.url, "front", taskID); v["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("front never ended Canceled")
		}
	}
	away.back(t, relay)
	var remote []any
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, list := httpCall(t, "GET", p.remote.url+"/agents/assistant/tasks", "bob", "")
		remote, _ = list["tasks"].([]any)
		if len(remote) == 1 && remote[0].(map[string]any)["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote's tasks: %v; want the one front's message made, Canceled", remote)
		}
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "silent.txt")); got != 0 {
		t.Errorf("append_file ran %d times on the remote", got)
	}
}

// awayRelay is a relay that goes away once the remote took the first
// message, before its answer reaches front, and refuses whatever still
// reaches it on a connection kept alive; back serves it again at its
// address.
type awayRelay struct {
	down atomic.Bool
	addr string
}

func (a *awayRelay) relay(p func() *pair) *a2atest.Relay {
	return &a2atest.Relay{Refuse: func([]byte) bool { return a.down.Load() }, Hold: func(_ context.Context, n int) bool {
		if n != 1 {
			return true
		}
		a.down.Store(true)
		rs := p().relay
		a.addr = rs.Listener.Addr().String()
		rs.Listener.Close()
		go rs.CloseClientConnections()
		return false
	}}
}

func (a *awayRelay) back(t *testing.T, relay *a2atest.Relay) {
	t.Helper()
	a.down.Store(false)
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		t.Fatalf("the relay's address %s could not be taken again: %v", a.addr, err)
	}
	srv := &http.Server{Handler: relay}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func TestRemoteAgentSendAgain(t *testing.T) { onBothStores(t, testRemoteAgentSendAgain) }

func testRemoteAgentSendAgain(t *testing.T) {
	var refused atomic.Int32
	relay := &a2atest.Relay{Refuse: func(body []byte) bool {
		return strings.Contains(string(body), `"SendStreamingMessage"`) && refused.Add(1) == 1
	}}
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay})
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("sent.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front, its first send refused: %d %v", code, paused)
	}
	if n, sent := refused.Load(), relay.Sent(); n != 2 || sent != 1 {
		t.Errorf("sends: %d tried, %d reached the remote; want 2 and 1", n, sent)
	}
}

// vendorExecutor is another vendor's A2A agent, on the official SDK's own
// server: "hello" completes with an artifact, "which?" asks a question
// (input-required without Hitch's pending calls) whose answer completes
// the task ("account " and the answer), "fail" fails. answers counts the
// answers it got.
type vendorExecutor struct{ answers *atomic.Int32 }

func (v vendorExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var text string
		for _, p := range ec.Message.Parts {
			text += p.Text()
		}
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			if v.answers != nil {
				v.answers.Add(1)
			}
			if m := ec.StoredTask.Status.Message; m != nil && len(m.Parts) > 0 && m.Parts[0].Text() == twiceQuestion {
				// "twice?": a second question once the first is answered.
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("which branch for "+text+"?"))), nil)
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) ||
				!yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("account "+text)), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch text {
		case "hello":
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("hi from the other vendor")), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case "which?":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("which account?"))), nil)
		case "twice?":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(twiceQuestion))), nil)
		default:
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("no such thing"))), nil)
		}
	}
}

// twiceQuestion is the first of "twice?"'s two questions.
const twiceQuestion = "which account (then a branch)?"

func (vendorExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// An agent of another vendor (the A2A SDK's own server) as a tool: its
// answer is the call's result, its failure an error result saying so.
// (Its question is TestAnotherVendorsQuestion's.)
func TestRemoteAgentOfAnotherVendor(t *testing.T) { onBothStores(t, testRemoteAgentOfAnotherVendor) }

func testRemoteAgentOfAnotherVendor(t *testing.T) {
	vendor := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(vendorExecutor{})))
	t.Cleanup(vendor.Close)
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, via: func(string) string { return vendor.URL + "/vendor" }})
	for _, c := range []struct{ message, want string }{
		{"hello", "hi from the other vendor"},
		{"fail", "failed: remote_failed: no such thing"},
	} {
		code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(c.message))
		if code != 200 || out["status"] != "Completed" || !strings.Contains(out["output"].(string), c.want) {
			t.Errorf("%s: %d %v, want an answer with %q", c.message, code, out, c.want)
		}
	}
}

// A remote agent that does not stream (SendStreamingMessage answers
// -32004 without a Hitch code): the message and the decision go with
// SendMessage instead, and the flow is the same.
func TestRemoteAgentWithoutStreaming(t *testing.T) { onBothStores(t, testRemoteAgentWithoutStreaming) }

func testRemoteAgentWithoutStreaming(t *testing.T) {
	var refusedStreams atomic.Int32
	relay := &a2atest.Relay{Answer: func(body []byte) []byte {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &req) != nil || req.Method != "SendStreamingMessage" {
			return nil
		}
		refusedStreams.Add(1)
		return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32004,"message":"streaming is not supported"}}`)
	}}
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay})
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("plain.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 200 || out["status"] != "Completed" || !strings.Contains(out["output"].(string), "append_file success") {
		t.Fatalf("approve at the caller: %d %v", code, out)
	}
	if n := refusedStreams.Load(); n != 2 {
		t.Errorf("%d streams refused, want 2 (the message, the decision)", n)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "plain.txt")); got != 1 {
		t.Errorf("append_file ran %d times", got)
	}
}

// Later calls to a remote agent continue its context (the remote task's
// history), unless new_task: the call's result names the remote context.
func TestRemoteAgentContextContinued(t *testing.T) { onBothStores(t, testRemoteAgentContextContinued) }

func testRemoteAgentContextContinued(t *testing.T) {
	p := startPair(t)
	// The remote contexts the calls' results name, in order (the JSON
	// block of each billing result in front's history).
	contexts := func(taskID string) []string {
		t.Helper()
		_, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+taskID, "alice", "")
		var out []string
		for _, it := range v["items"].([]any) {
			for _, b := range it.(map[string]any)["content"].([]any) {
				inner, _ := b.(map[string]any)["content"].([]any)
				for _, c := range inner {
					if j, ok := c.(map[string]any)["json"].(map[string]any); ok && j["agent"] == "billing" {
						out = append(out, j["task_id"].(string))
					}
				}
			}
		}
		return out
	}
	call := func(taskID string, newTask bool) map[string]any {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"message": "/call get_time {}", "new_task": newTask})
		body := map[string]any{"items": []map[string]string{{"content": "/call billing " + string(in)}}}
		if taskID != "" {
			body["task_id"] = taskID
		}
		b, _ := json.Marshal(body)
		code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", string(b))
		if code != 200 || out["status"] != "Completed" {
			t.Fatalf("front: %d %v", code, out)
		}
		return out
	}
	first := call("", false)
	second := call(first["task_id"].(string), false)
	third := call(first["task_id"].(string), true)
	if second["task_id"] != first["task_id"] || third["task_id"] != first["task_id"] {
		t.Fatalf("front's follow-ons made tasks of their own")
	}
	cs := contexts(first["task_id"].(string))
	if len(cs) != 3 {
		t.Fatalf("remote contexts %v, want 3", cs)
	}
	c1, c2, c3 := cs[0], cs[1], cs[2]
	if c1 != c2 {
		t.Errorf("a follow-on call went to context %s, not %s", c2, c1)
	}
	if c3 == c1 {
		t.Errorf("new_task continued context %s", c1)
	}
	if v := p.remoteTask(t, c1); len(v["requests"].([]any)) != 2 {
		t.Errorf("the remote context holds %d requests, want 2", len(v["requests"].([]any)))
	}
}

// TestRemoteAgentPausedTwiceDecidedThere: the remote pauses in two rounds,
// each decided on the remote system. Front notices the first decision (its
// poll) and pauses again on the second round — with a poll of its own, so
// it notices the second decision too and completes; it is never left
// Paused on a call that was decided.
func TestRemoteAgentPausedTwiceDecidedThere(t *testing.T) {
	onBothStores(t, testRemoteAgentPausedTwiceDecidedThere)
}

func testRemoteAgentPausedTwiceDecidedThere(t *testing.T) {
	p := startPair(t)
	b, _ := json.Marshal(map[string]string{"path": "twice.txt", "content": "y\n"})
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("twice.txt")+"\n/then append_file "+string(b)))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	taskID := paused["task_id"].(string)
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	code, out := httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve","round":1}`)
	if code != 200 || out["status"] != "Paused" {
		t.Fatalf("round 1 at the remote: %d %v", code, out)
	}
	// Front follows the remote into its second round.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+taskID, "alice", "")
		pa, _ := v["pending_approvals"].([]any)
		if len(pa) == 1 && pa[0].(map[string]any)["round"] == float64(2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("front did not follow the remote's second round: %v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out = httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve","round":2}`)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("round 2 at the remote: %d %v", code, out)
	}
	p.waitStatus(t, taskID, "Completed")
	if got := lines(t, filepath.Join(p.remote.sandbox, "twice.txt")); got != 2 {
		t.Errorf("twice.txt has %d lines, want 2", got)
	}
}

// TestDecisionResentToADeadLeg: a Hitch A2A server whose request runs a
// decision with its process dead (its lease ended) takes the leg over when
// the same decision is sent again in a message — what a caller does when
// it sends a decision again with its message id — instead of answering
// task_busy for ever: the request completes, and the approved call, which
// may have run, is outcome_unknown and never run twice. Another decision is
// refused (decision_conflict), nothing changed.
func TestDecisionResentToADeadLeg(t *testing.T) { onBothStores(t, testDecisionResentToADeadLeg) }

func testDecisionResentToADeadLeg(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "assistant.yaml"), []byte(agentYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _, _, srv := serveDir(t, dir, time.Minute, false)
	inv, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": appendLine("dead.txt")}}})
	code, paused := httpCall(t, "POST", srv.URL+"/agents/assistant/invoke", "bob", string(inv))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("the pause: %d %v", code, paused)
	}
	tid, rid := paused["task_id"].(string), paused["request_id"].(string)
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	// The first decision's invocation claims the request, then dies.
	if _, err := e.StartResume(context.Background(), agent.ResumeInput{Agent: "assistant", UserID: "bob", TaskID: tid, RequestID: rid,
		Body: agent.ResumeRequest{Action: agent.ActionApprove}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
	send := func(data string) map[string]any {
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"decision-1","role":"ROLE_USER",` +
			`"taskId":"` + rid + `","contextId":"` + tid + `","parts":[{"data":` + data + `,"mediaType":"application/json"}]}}}`
		req, _ := http.NewRequest("POST", srv.URL+"/a2a/assistant", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bob")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := send(`{"action":"reject"}`); m["error"] == nil {
		t.Errorf("another decision to the dead leg: %v, want decision_conflict", m)
	}
	m := send(`{"action":"approve"}`)
	result, _ := m["result"].(map[string]any)
	task, _ := result["task"].(map[string]any)
	status, _ := task["status"].(map[string]any)
	if status["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("the decision sent again: %v, want the leg taken over and completed", m)
	}
	if got := lines(t, filepath.Join(dir, "sandbox", "dead.txt")); got != 0 {
		t.Errorf("dead.txt has %d lines: a call that may have run was run again", got)
	}
}

// bossYAML calls front (which calls the remote) as a local sub-agent.
const bossYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: boss
version: 0.1
description: Hands work to front.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - agent: front
`

// TestDecisionAtARootAboveARemote: boss → front (both here) → the remote's
// assistant, which pauses. A decision sent to boss names the remote's
// call; it goes to front, the caller on this system of the remote call,
// which carries it to the remote: the call runs there once and the chain
// completes (before, boss looked for the remote's task on this system:
// 404 task_not_found).
func TestDecisionAtARootAboveARemote(t *testing.T) { onBothStores(t, testDecisionAtARootAboveARemote) }

func testDecisionAtARootAboveARemote(t *testing.T) {
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, extra: map[string]string{"boss.yaml": bossYAML}})
	inner, _ := json.Marshal(map[string]string{"message": appendLine("root.txt")})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	code, paused := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("boss: %d %v", code, paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	decision := `{"decisions":[{"tool_call_id":"` + pc["tool_call_id"].(string) + `","action":"approve"}]}`
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", decision)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("the decision at boss: %d %v", code, out)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "root.txt")); got != 1 {
		t.Errorf("append_file ran %d times on the remote, want 1", got)
	}
}

// TestDecisionsRaceAboveARemote: boss → front → the remote's assistant,
// paused. A reject at front's own URL reaches the remote first; while its
// answer is on the way back to front, an approve sent to boss names the
// same call. boss's leaves are all remote (through front), so its part
// goes first, before any claim: the remote refuses it (decided there),
// boss answers that refusal and changes nothing, and front records the
// reject its leaf took. Before, boss claimed boss and front with the
// approve and sent the part after: both callers recorded an approve the
// remote never took, and the reject, sent again, was a 409 (the torture
// test, xtop → rmid → a remote leaf).
func TestDecisionsRaceAboveARemote(t *testing.T) { onBothStores(t, testDecisionsRaceAboveARemote) }

func testDecisionsRaceAboveARemote(t *testing.T) {
	var p *pair
	var bossCode int
	var bossOut map[string]any
	var bossResume, approve string
	relay := &a2atest.Relay{Hold: func(_ context.Context, n int) bool {
		if n == 2 { // front's reject, taken by the remote
			bossCode, bossOut = httpCall(t, "POST", p.url+bossResume, "alice", approve)
		}
		return true
	}}
	p = startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay, extra: map[string]string{"boss.yaml": bossYAML}})
	inner, _ := json.Marshal(map[string]string{"message": appendLine("raced.txt")})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	code, paused := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("boss: %d %v", code, paused)
	}
	bossResume = paused["resume_url"].(string)
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	call := pc["tool_call_id"].(string)
	approve = `{"decisions":[{"tool_call_id":"` + call + `","action":"approve"}]}`
	_, list := httpCall(t, "GET", p.url+"/agents/front/tasks", "alice", "")
	frontID := list["tasks"].([]any)[0].(map[string]any)["task_id"].(string)
	fv := getTask(t, p.url, "front", frontID)
	frontURL := "/agents/front/tasks/" + frontID + "/requests/" + fv["requests"].([]any)[0].(map[string]any)["request_id"].(string) + "/resume"
	reject := `{"decisions":[{"tool_call_id":"` + call + `","action":"reject","reason":"no"}]}`
	code, out := httpCall(t, "POST", p.url+frontURL, "alice", reject)
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("the reject at front: %d %v", code, out)
	}
	if bossCode != 409 {
		t.Errorf("the approve at boss, the remote decided otherwise first: %d %v; want 409, nothing changed", bossCode, bossOut)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "raced.txt")); got != 0 {
		t.Errorf("append_file ran %d times on the remote; the reject was taken there first", got)
	}
	fv = getTask(t, p.url, "front", frontID)
	if got := recordedActions(fv); got != "reject" {
		t.Errorf("front records %q, want the reject its leaf took", got)
	}
	if code, again := httpCall(t, "POST", p.url+frontURL, "alice", reject); code != 200 {
		t.Errorf("the same reject sent again to front: %d %v, want 200 (a duplicate)", code, again)
	}
	var bossFinal map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if bossFinal = getTask(t, p.url, "boss", paused["task_id"].(string)); bossFinal["status"] != "Paused" && bossFinal["status"] != "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("boss is %v, want it ended: %v", bossFinal["status"], bossFinal)
		}
	}
	if got := recordedActions(bossFinal); strings.Contains(got, "approve") {
		t.Errorf("boss records %q: an approve its leaf never took", got)
	}
}

func getTask(t *testing.T, base, agentName, taskID string) map[string]any {
	t.Helper()
	code, v := httpCall(t, "GET", base+"/agents/"+agentName+"/tasks/"+taskID, "alice", "")
	if code != 200 {
		t.Fatalf("GET %s %s: %d %v", agentName, taskID, code, v)
	}
	return v
}

// TestPartTakenThenTheClaimLost: boss → front → the remote. The decision
// at boss sends its part first (every leaf is remote) and the remote takes
// it and runs it; before boss's claim lands, front hears of the remote's
// end (its poll) and moves on. The claim is a conflict, but the part ran:
// boss follows its chain and answers its outcome, never a refusal of a
// decision the remote took (before, read again, boss found front moved
// and answered 409).
func TestPartTakenThenTheClaimLost(t *testing.T) { onBothStores(t, testPartTakenThenTheClaimLost) }

func testPartTakenThenTheClaimLost(t *testing.T) {
	var p *pair
	var frontTask, frontReq string
	relay := &a2atest.Relay{Hold: func(_ context.Context, n int) bool {
		if n == 2 { // boss's part, taken: front's poll moves it on first
			// (Busy: the dispatcher's own poll of front moves it.)
			if run, err := p.engine.StartPoll(context.Background(), frontTask, frontReq); err != nil && !errors.Is(err, agent.ErrBusy) {
				t.Errorf("front's poll: %v", err)
			} else if run != nil {
				run.Execute(context.Background(), nil)
			}
		}
		return true
	}}
	p = startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay, extra: map[string]string{"boss.yaml": bossYAML}})
	inner, _ := json.Marshal(map[string]string{"message": appendLine("lost.txt")})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	code, paused := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("boss: %d %v", code, paused)
	}
	_, list := httpCall(t, "GET", p.url+"/agents/front/tasks", "alice", "")
	frontTask = list["tasks"].([]any)[0].(map[string]any)["task_id"].(string)
	frontReq = getTask(t, p.url, "front", frontTask)["requests"].([]any)[0].(map[string]any)["request_id"].(string)
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice",
		`{"decisions":[{"tool_call_id":"`+pc["tool_call_id"].(string)+`","action":"approve"}]}`)
	if code != 200 || out["status"] != "Completed" {
		t.Errorf("the decision at boss, its part taken and its claim lost: %d %v, want 200 Completed (the chain's outcome)", code, out)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "lost.txt")); got != 1 {
		t.Errorf("append_file ran %d times on the remote, want 1", got)
	}
}

// recordedActions lists the actions a task view's requests record, by
// call: "reject", or "approve,reject".
func recordedActions(v map[string]any) string {
	var out []string
	reqs, _ := v["requests"].([]any)
	for _, r := range reqs {
		decs, _ := r.(map[string]any)["decisions"].([]any)
		for _, d := range decs {
			calls, _ := d.(map[string]any)["calls"].([]any)
			for _, c := range calls {
				out = append(out, fmt.Sprint(c.(map[string]any)["action"]))
			}
		}
	}
	return strings.Join(out, ",")
}

// quickYAML keeps files here; its approvals expire within a second.
const quickYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: quick
version: 0.1
description: Keeps files, in a hurry.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [append_file]
        approval_ttl: 1s
`

// duoYAML calls quick (here) and the remote's assistant at once.
const duoYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: duo
version: 0.1
description: Hands work to two agents.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - agent: quick
      - agent: billing
        a2a: %s/a2a/assistant
        headers: {Authorization: env:HITCH_TEST_REMOTE_AUTH}
`

// duoPaused serves duo (quick here, whose approvals last ttl, and the
// remote's assistant as billing) and invokes it to append to q.txt and
// b.txt: duo pauses on both leaves' calls. It returns the remote, duo's
// server, its directory (quick's sandbox is there) and the pause.
func duoPaused(t *testing.T, ttl string) (*stack, *httptest.Server, string, map[string]any) {
	t.Helper()
	return duoPausedOn(t, ttl, agentYAML, appendLine("b.txt"), 2)
}

// duoPausedOn is duoPaused with the remote's definition, the message
// billing is sent and how many pending calls (approvals and inputs) duo
// shows.
func duoPausedOn(t *testing.T, ttl, remoteDef, billing string, pending int) (*stack, *httptest.Server, string, map[string]any) {
	t.Helper()
	remote := startStackYAML(t, remoteDef, false)
	t.Setenv("HITCH_TEST_REMOTE_AUTH", "Bearer bob")
	dir := t.TempDir()
	quick := strings.Replace(quickYAML, "approval_ttl: 1s", "approval_ttl: "+ttl, 1)
	for name, def := range map[string]string{"duo.yaml": fmt.Sprintf(duoYAML, remote.url), "quick.yaml": quick} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _, srv := serveDir(t, dir, time.Minute, false)
	q, _ := json.Marshal(map[string]string{"message": appendLine("q.txt")})
	b, _ := json.Marshal(map[string]string{"message": billing})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call quick " + string(q) + "\n/call billing " + string(b)}}})
	code, paused := httpCall(t, "POST", srv.URL+"/agents/duo/invoke", "alice", string(body))
	approvals, _ := paused["pending_approvals"].([]any)
	inputs, _ := paused["pending_inputs"].([]any)
	if code != 200 || paused["status"] != "Paused" || len(approvals)+len(inputs) != pending {
		t.Fatalf("duo: %d %v", code, paused)
	}
	return remote, srv, dir, paused
}

// TestRemoteChoiceCheckedAtAMixedCaller: duo waits on quick's approval
// (here) and the remote's question with choices. A decision approving
// quick's call and answering the remote with a word outside its choices
// is 400 invalid_input before anything is claimed: the remote's part is
// sent only after the local claims, so its choices are checked against
// duo's copy. Before, quick's call ran, duo answered 200 Paused (the
// remote refused later) and recorded an answer the remote never took
// (the torture test's hour, seed 604880427: rduo).
func TestRemoteChoiceCheckedAtAMixedCaller(t *testing.T) {
	onBothStores(t, testRemoteChoiceCheckedAtAMixedCaller)
}

func testRemoteChoiceCheckedAtAMixedCaller(t *testing.T) {
	asker := strings.Replace(askerYAML, "      - builtin: ask_user", "      - builtin: ask_user\n      - builtin: files\n        config: {root: ./sandbox}\n        requires_approval: [append_file]", 1)
	_, srv, dir, paused := duoPausedOn(t, "1h", asker, `/call ask_user {"question": "Which colour?", "choices": ["red", "blue"]}`, 2)
	var ds []string
	for _, p := range paused["pending_approvals"].([]any) {
		ds = append(ds, `{"tool_call_id":"`+p.(map[string]any)["tool_call_id"].(string)+`","action":"approve"}`)
	}
	for _, p := range paused["pending_inputs"].([]any) {
		ds = append(ds, `{"tool_call_id":"`+p.(map[string]any)["tool_call_id"].(string)+`","action":"answer","result":"green"}`)
	}
	code, out := httpCall(t, "POST", srv.URL+paused["resume_url"].(string), "alice", `{"decisions":[`+strings.Join(ds, ",")+`]}`)
	if e, _ := out["error"].(map[string]any); code != 400 || e["code"] != "invalid_input" {
		t.Errorf("a decision answering the remote outside its choices: %d %v, want 400 invalid_input", code, out)
	}
	if got := lines(t, filepath.Join(dir, "sandbox", "q.txt")); got != 0 {
		t.Errorf("quick's append ran %d times: a refused decision was half applied", got)
	}
	if _, v := httpCall(t, "GET", srv.URL+"/agents/duo/tasks/"+paused["task_id"].(string), "alice", ""); v["status"] != "Paused" || len(recordedActions(v)) != 0 {
		t.Errorf("duo after the refused decision: %v %q, want Paused, nothing recorded", v["status"], recordedActions(v))
	}
}

// TestExpiryCancelsTheRemoteLeaf: duo waits on quick (here, expiring in a
// second) and on the remote's assistant. Once quick's approval expired, a
// decision at duo is 410 and ends the chain — the remote's paused task
// too, canceled there: nothing is left paused below an ended root.
func TestExpiryCancelsTheRemoteLeaf(t *testing.T) { onBothStores(t, testExpiryCancelsTheRemoteLeaf) }

func testExpiryCancelsTheRemoteLeaf(t *testing.T) {
	remote, srv, _, paused := duoPaused(t, "1s")
	var remoteTask, remoteReq string
	for _, p := range paused["pending_approvals"].([]any) {
		if pc := p.(map[string]any); pc["agent"] == "billing" {
			remoteTask, remoteReq = pc["task_id"].(string), pc["request_id"].(string)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	code, out := httpCall(t, "POST", srv.URL+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 410 {
		t.Fatalf("approve at duo after quick expired: %d %v, want 410", code, out)
	}
	_, rv := httpCall(t, "GET", remote.url+"/agents/assistant/tasks/"+remoteTask, "bob", "")
	if rv["status"] != "Canceled" {
		t.Errorf("the remote task %s (request %s) is %v, want Canceled", remoteTask, remoteReq, rv["status"])
	}
	if got := lines(t, filepath.Join(remote.sandbox, "b.txt")); got != 0 {
		t.Errorf("the remote's append ran %d times", got)
	}
	// quick's call says its approval expired (quick ended by it); the
	// remote's call is outcome_unknown: its task there ends canceled, not
	// by the expiry, and it may have run tools before it paused (the
	// torture test's hour, seed 306654: rduo's leaf ran a peek first).
	results := callResults(t, srv.URL+"/agents/duo/tasks/"+paused["task_id"].(string))
	var got []string
	for _, txt := range results {
		switch {
		case strings.HasPrefix(txt, "outcome_unknown: the agent billing"):
			got = append(got, "billing: outcome_unknown")
		case strings.Contains(txt, "approval expired"):
			got = append(got, "quick: expired")
		default:
			got = append(got, txt)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"billing: outcome_unknown", "quick: expired"}, got); diff != "" {
		t.Errorf("duo's results (-want +got):\n%s", diff)
	}
}

// callResults reads a task's tool results by call id (their first text).
func callResults(t *testing.T, taskURL string) map[string]string {
	t.Helper()
	_, v := httpCall(t, "GET", taskURL, "alice", "")
	raw, _ := json.Marshal(v["items"])
	var items []struct {
		Content []struct {
			ToolUseID string `json:"tool_use_id"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	}
	_ = json.Unmarshal(raw, &items)
	results := map[string]string{}
	for _, it := range items {
		for _, c := range it.Content {
			if c.ToolUseID != "" && len(c.Content) > 0 {
				results[c.ToolUseID] = c.Content[0].Text
			}
		}
	}
	return results
}

// TestRemoteAgentAnswerLost: the caller's message reaches the remote (its
// task pauses there) but the answer never comes back, three sends in a
// row. The message may have landed, so the call is not closed with an
// error (which would leave the remote's task paused below a caller that
// moved on): the leg hands off, a new leg sends the message again with its
// id, the remote answers the task it made, and front pauses on it — one
// task at the remote.
func TestRemoteAgentAnswerLost(t *testing.T) { onBothStores(t, testRemoteAgentAnswerLost) }

func testRemoteAgentAnswerLost(t *testing.T) {
	relay := &a2atest.Relay{Hold: func(_ context.Context, n int) bool {
		if n <= sendAttempts {
			panic(http.ErrAbortHandler) // the connection breaks: the caller reads EOF
		}
		return true
	}}
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, relay: relay})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("lost.txt")))
	if code != 200 && code != 202 {
		t.Fatalf("front: %d %v", code, out)
	}
	if out["status"] == "Completed" {
		t.Fatalf("front completed with the remote's task left behind: %v", out)
	}
	v := p.waitStatus(t, out["task_id"].(string), "Paused")
	pa, _ := v["pending_approvals"].([]any)
	if len(pa) != 1 || pa[0].(map[string]any)["agent"] != "billing" {
		t.Fatalf("front's pending calls: %v", v["pending_approvals"])
	}
	remoteTask := pa[0].(map[string]any)["task_id"].(string)
	if reqs, _ := p.remoteTask(t, remoteTask)["requests"].([]any); len(reqs) != 1 {
		t.Errorf("the remote made %d requests, want 1 (the message taken once)", len(reqs))
	}
	if relay.Sent() <= sendAttempts {
		t.Errorf("%d sends reached the remote, want the message sent again after the lost answers", relay.Sent())
	}
}

// sendAttempts is how many sends of one message a leg makes (the engine's).
const sendAttempts = 3

// TestRemoteCancelOutlastsTheRemote: a caller canceled while its remote
// agent is down cannot cancel the remote's task then; the cancel's commit
// leaves a remote-cancel item, delivered once the remote is back, so the
// remote's task never waits below a chain that ended.
func TestRemoteCancelOutlastsTheRemote(t *testing.T) {
	onBothStores(t, testRemoteCancelOutlastsTheRemote)
}

func testRemoteCancelOutlastsTheRemote(t *testing.T) {
	p := startPair(t)
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("gone.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	addr := p.remote.srv.Listener.Addr().String()
	p.remote.srv.Listener.Close()
	p.remote.srv.CloseClientConnections()
	code, out := httpCall(t, "POST", p.url+"/agents/front/tasks/"+paused["task_id"].(string)+"/cancel", "alice", `{"reason":"not now"}`)
	if code != 200 && code != 202 {
		t.Fatalf("cancel at the caller while the remote is down: %d %v", code, out)
	}
	p.waitStatus(t, paused["task_id"].(string), "Canceled")
	time.Sleep(500 * time.Millisecond) // the direct cancel's attempts are spent
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the remote's address %s could not be taken again: %v", addr, err)
	}
	back := &http.Server{Handler: p.remote.srv.Config.Handler}
	go func() { _ = back.Serve(ln) }()
	t.Cleanup(func() { _ = back.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		rv := p.remoteTask(t, pc["task_id"].(string))
		if rv["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote task is %v 20 s after the remote came back, want Canceled", rv["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "gone.txt")); got != 0 {
		t.Errorf("append_file ran %d times", got)
	}
}

// TestRemoteThatNeverAnswers: a remote agent whose server reads each
// request and closes the connection (the message may have landed each
// time). Its caller re-sends it with its id on later legs, but not for
// ever: once request_timeout passed since the first send with no answer,
// the call is closed outcome_unknown with a remote-cancel item for its
// message id in the same write, and the caller goes on to Completed
// (docs/api.md, "Remote agents").
func TestRemoteThatNeverAnswers(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testRemoteThatNeverAnswers(t, 8*time.Second) })
}

// TestRemoteGoneForGoodHandsOffThrice: the same black hole with a
// request_timeout of an hour, so only the count can end it: the legs that
// hand the unanswered call on count on META like failed takeovers, and
// at MaxTakeovers the call is closed outcome_unknown with its
// remote-cancel item and the caller goes on (docs/api.md, "Remote
// agents"), within seconds — not after the hour, never in a loop.
func TestRemoteGoneForGoodHandsOffThrice(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testRemoteThatNeverAnswers(t, time.Hour) })
}

func testRemoteThatNeverAnswers(t *testing.T, legTimeout time.Duration) {
	var got atomic.Int32
	var idsMu sync.Mutex
	ids := map[string]bool{}
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) == nil && m.Params.Message.MessageID != "" {
			idsMu.Lock()
			ids[m.Params.Message.MessageID] = true
			idsMu.Unlock()
		}
		got.Add(1)
		panic(http.ErrAbortHandler) // read, then the connection closes
	}))
	t.Cleanup(gone.Close)
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, legTimeout: legTimeout, reaper: true,
		via: func(string) string { return gone.URL }})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("hello"))
	if code != 200 && code != 202 {
		t.Fatalf("front: %d %v", code, out)
	}
	taskID := out["task_id"].(string)
	// Three hand-offs, each a lease (and a sweep) apart.
	done := p.waitStatusWithin(t, taskID, "Completed", 3*(agent.LeaseDuration+agent.DefaultReapEvery)+20*time.Second)
	raw, _ := json.Marshal(done["items"])
	if result := string(raw); !strings.Contains(result, "outcome_unknown") || !strings.Contains(result, "may have received the message") {
		t.Errorf("front's history: %s, want outcome_unknown (the remote may have received the message)", result)
	}
	idsMu.Lock()
	sentIDs := len(ids)
	idsMu.Unlock()
	if got.Load() < 2 || sentIDs != 1 {
		t.Errorf("the remote read %d requests carrying %d message ids, want several with one id", got.Load(), sentIDs)
	}
	rid := done["requests"].([]any)[0].(map[string]any)["request_id"].(string)
	items, err := p.store.ListRequestOutbox(context.Background(), taskID, rid)
	if err != nil {
		t.Fatal(err)
	}
	var cancels []string
	for _, o := range items {
		if o.Kind == agent.OutboxRemoteCancel && o.Call != nil && o.Recipient == agent.RemoteCancelRecipient(o.Call.MessageID) {
			cancels = append(cancels, o.Call.MessageID)
		}
	}
	idsMu.Lock()
	defer idsMu.Unlock()
	if len(cancels) != 1 || !ids[cancels[0]] {
		t.Errorf("remote-cancel items for %v, want one for the message sent (%v)", cancels, ids)
	}
}

// TestRemoteGoneAfterItAnswered: the remote answers the send (the caller
// learns its task, working there) and then goes away for good: it reads
// each request and closes the connection. Reads that get nothing are no
// progress: the call is closed outcome_unknown, with a remote-cancel item
// for the task it learned, once request_timeout passed since the remote
// last answered — within about request_timeout plus a lease (docs/api.md,
// "Remote agents") — never a leg after leg reading nothing for ever.
func TestRemoteGoneAfterItAnswered(t *testing.T) { onBothStores(t, testRemoteGoneAfterItAnswered) }

func testRemoteGoneAfterItAnswered(t *testing.T) {
	const legTimeout = 6 * time.Second
	relay := &a2atest.Relay{}
	var gone atomic.Bool
	var reads atomic.Int32
	vanish := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if gone.Load() {
			reads.Add(1)
			panic(http.ErrAbortHandler) // read, then the connection closes
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		relay.ServeHTTP(rec, r)
		// The remote's task asks for an approval there; the caller is
		// told it is working, so that it reads it again.
		out := bytes.ReplaceAll(rec.Body.Bytes(), []byte("TASK_STATE_INPUT_REQUIRED"), []byte("TASK_STATE_WORKING"))
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
		if bytes.Contains(body, []byte(`"GetTask"`)) {
			gone.Store(true) // the send's answer read: the task is learned
		}
	})
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, reaper: true, legTimeout: legTimeout, via: func(remote string) string {
		relay.To = remote
		srv := httptest.NewServer(vanish)
		t.Cleanup(srv.Close)
		return srv.URL
	}})
	start := time.Now()
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("vanish.txt")))
	if code != 200 && code != 202 {
		t.Fatalf("front: %d %v", code, out)
	}
	taskID := out["task_id"].(string)
	done := p.waitStatusWithin(t, taskID, "Completed", legTimeout+agent.LeaseDuration+agent.DefaultReapEvery+15*time.Second)
	t.Logf("front Completed %s after the invoke; the gone remote read %d requests", time.Since(start).Round(time.Second), reads.Load())
	if !gone.Load() {
		t.Fatal("the remote never answered the send")
	}
	raw, _ := json.Marshal(done["items"])
	if result := string(raw); !strings.Contains(result, "outcome_unknown") {
		t.Errorf("front's history: %s, want the call outcome_unknown", result)
	}
	rid := done["requests"].([]any)[0].(map[string]any)["request_id"].(string)
	items, err := p.store.ListRequestOutbox(context.Background(), taskID, rid)
	if err != nil {
		t.Fatal(err)
	}
	var cancels []string
	for _, o := range items {
		if o.Kind == agent.OutboxRemoteCancel && o.Call != nil {
			cancels = append(cancels, o.Call.RequestID)
		}
	}
	if len(cancels) != 1 || cancels[0] == "" {
		t.Errorf("remote-cancel items for remote tasks %q, want one for the task learned", cancels)
	}
}

// TestRemoteAnswerNeverComes: the message lands at a Hitch remote (its
// task pauses there on an approval) but no answer to a send ever comes
// back. The call is closed outcome_unknown once request_timeout passed;
// its remote-cancel item, delivered by the dispatcher, sends the message
// again with its id (taken once: the task it made) and cancels that task,
// so nothing waits there below a caller that moved on.
func TestRemoteAnswerNeverComes(t *testing.T) { onBothStores(t, testRemoteAnswerNeverComes) }

func testRemoteAnswerNeverComes(t *testing.T) {
	relay := &a2atest.Relay{}
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if strings.Contains(string(body), `"SendStreamingMessage"`) {
			relay.ServeHTTP(httptest.NewRecorder(), r) // the remote takes it
			panic(http.ErrAbortHandler)                // its answer is lost
		}
		relay.ServeHTTP(w, r)
	})
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, legTimeout: 8 * time.Second, via: func(remote string) string {
		relay.To = remote
		srv := httptest.NewServer(cut)
		t.Cleanup(srv.Close)
		return srv.URL
	}})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("never.txt")))
	if code != 200 && code != 202 {
		t.Fatalf("front: %d %v", code, out)
	}
	p.waitStatus(t, out["task_id"].(string), "Completed")
	var tasks []any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, list := httpCall(t, "GET", p.remote.url+"/agents/assistant/tasks", "bob", "")
		tasks, _ = list["tasks"].([]any)
		if len(tasks) == 1 && tasks[0].(map[string]any)["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote's tasks: %v, want one, Canceled", list)
		}
	}
	rv := p.remoteTask(t, tasks[0].(map[string]any)["task_id"].(string))
	if reqs := rv["requests"].([]any); len(reqs) != 1 {
		t.Errorf("the remote task holds %d requests, want 1 (the message taken once)", len(reqs))
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "never.txt")); got != 0 {
		t.Errorf("append_file ran %d times", got)
	}
}

// TestRemotePollOutlivesTheOutbox: a caller paused on a remote approval
// that lasts 30 days is polled for as long as its round lasts: its poll
// item's ttl is the round's expiry plus a day, not the outbox's 7 days
// (docs/architecture.md, "Orchestration"), on the first pause of the call
// (whose poll was put with the call) and on a later one.
func TestRemotePollOutlivesTheOutbox(t *testing.T) { onBothStores(t, testRemotePollOutlivesTheOutbox) }

func testRemotePollOutlivesTheOutbox(t *testing.T) {
	p := startPairYAML(t, strings.Replace(agentYAML, "requires_approval: [write_file, append_file, delete_file]",
		"requires_approval: [write_file, append_file, delete_file]\n        approval_ttl: 720h", 1), true)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("month.txt")))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	items, err := p.store.ListRequestOutbox(context.Background(), paused["task_id"].(string), paused["request_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var longest time.Time
	for _, o := range items {
		if o.Event == agent.EventPoll && o.KeepUntil.After(longest) {
			longest = o.KeepUntil
		}
	}
	if want := time.Now().Add(30 * 24 * time.Hour); longest.Before(want) {
		t.Errorf("the poll items are kept until %v at the latest, want after the round's expiry (%v) — the outbox's 7 days end first", longest, want)
	}
}

// TestRemotePendingTooLargeToKeep: a remote leaf whose pending call holds
// 400 KB of input, below a chain (boss → front → the remote). What a pause
// keeps on META is bounded (64 KiB in all, docs/architecture.md, "Pauses
// for input"), the rest in JINP# items of at most 350 KiB
// each (agent.MaxInputItemBytes, under DynamoDB's 400 KB item limit):
// front cannot keep the copy, so it ends Failed internal — its call to the
// remote, which ran, recorded outcome_unknown (never "not run") and the
// remote's task canceled, so nothing waits there; boss gets front's
// failure as the call's result and goes on.
func TestRemotePendingTooLargeToKeep(t *testing.T) {
	onBothStores(t, testRemotePendingTooLargeToKeep)
}

func testRemotePendingTooLargeToKeep(t *testing.T) {
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, extra: map[string]string{"boss.yaml": bossYAML}})
	big, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("y", 400_000)})
	inner, _ := json.Marshal(map[string]string{"message": "/call append_file " + string(big)})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	code, out := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("boss: %d %v", code, out)
	}
	_, tasks := httpCall(t, "GET", p.url+"/agents/front/tasks", "alice", "")
	list, _ := tasks["tasks"].([]any)
	if len(list) != 1 {
		t.Fatalf("front's tasks: %v", tasks)
	}
	front := p.waitStatus(t, list[0].(map[string]any)["task_id"].(string), "Failed")
	req := front["requests"].([]any)[0].(map[string]any)
	if req["error"].(map[string]any)["code"] != "internal" {
		t.Errorf("front's request: %v", req)
	}
	raw, _ := json.Marshal(front["items"])
	if !strings.Contains(string(raw), "outcome_unknown") || strings.Contains(string(raw), "not run") {
		t.Errorf("front's history ends %s, want the remote call outcome_unknown, nothing 'not run'", raw[max(0, len(raw)-1500):])
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, rl := httpCall(t, "GET", p.remote.url+"/agents/assistant/tasks", "bob", "")
		rts, _ := rl["tasks"].([]any)
		if len(rts) == 1 && rts[0].(map[string]any)["status"] == "Canceled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote's tasks: %v, want one, Canceled", rl)
		}
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "big.txt")); got != 0 {
		t.Errorf("append_file ran (%d lines)", got)
	}
}

// TestRemotePartNotDelivered: boss → front → the remote's assistant,
// which pauses. The remote's system is down when the decision at boss is
// sent. Every leaf of the decision is remote, so its part goes before any
// claim: not delivered (a transport failure), the decision is 502
// remote_unavailable and nothing changed — boss and front still show the
// round, never a claim whose part the remote does not hold (before, boss
// claimed first and its legs sent the part again; the torture test's
// seed 637021813 found a caller asking again for a decision it took).
// Once the remote is back, the same decision is taken and the call runs
// once, as decided (docs/api.md, Agents as tools).
func TestRemotePartNotDelivered(t *testing.T) { onBothStores(t, testRemotePartNotDelivered) }

func testRemotePartNotDelivered(t *testing.T) {
	var down atomic.Bool
	relay := &a2atest.Relay{Refuse: func([]byte) bool { return down.Load() }}
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, legTimeout: 8 * time.Second, relay: relay,
		extra: map[string]string{"boss.yaml": bossYAML}})
	inner, _ := json.Marshal(map[string]string{"message": appendLine("part.txt")})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	code, paused := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("boss: %d %v", code, paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	decision := `{"decisions":[{"tool_call_id":"` + pc["tool_call_id"].(string) + `","action":"approve"}]}`
	down.Store(true)
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", decision)
	if e, _ := out["error"].(map[string]any); code != 502 || e["code"] != "remote_unavailable" {
		t.Fatalf("the decision at boss while the remote is down: %d %v (want 502 remote_unavailable, nothing changed)", code, out)
	}
	task := p.url + "/agents/boss/tasks/" + paused["task_id"].(string)
	if _, v := httpCall(t, "GET", task, "alice", ""); v["status"] != "Paused" || len(recordedActions(v)) != 0 {
		t.Fatalf("boss after a decision that reached nothing: %v %q, want it Paused, no decision recorded", v["status"], recordedActions(v))
	}
	down.Store(false)
	if code, out = httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", decision); code != 200 {
		t.Fatalf("the decision at boss once the remote is back: %d %v", code, out)
	}
	var done map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, done = httpCall(t, "GET", task, "alice", "")
		if done["status"] != "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("boss is still Running once the remote is back: %v", done)
		}
	}
	if done["status"] != "Completed" {
		t.Fatalf("boss once the remote is back: %v, want Completed", done)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "part.txt")); got != 1 {
		t.Errorf("append_file ran %d times on the remote, want 1 (as decided)", got)
	}
}

// TestRemoteDecidedThereBeforeItsExpiry: the remote's approval (a 2 s
// ttl) is decided at the remote's own URL in time, and its tool runs; a
// decision at the caller once the caller's copy of that expiry has passed
// must not end the chain approval_expired, which would leave the caller's
// history saying the call never ran (the torture test's invariant 4, seed
// 811358580). The caller reads the remote first: it moved on, so the
// remote's outcome is the call's result.
func TestRemoteDecidedThereBeforeItsExpiry(t *testing.T) {
	onBothStores(t, testRemoteDecidedThereBeforeItsExpiry)
}

func testRemoteDecidedThereBeforeItsExpiry(t *testing.T) {
	p := startPairYAML(t, strings.Replace(agentYAML, "requires_approval: [write_file, append_file, delete_file]",
		"requires_approval: [write_file, append_file, delete_file]\n        approval_ttl: 2s", 1), false)
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(appendLine("intime.txt")))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	if code, out := httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve"}`); code != 200 || out["status"] != "Completed" {
		t.Fatalf("approve at the remote: %d %v", code, out)
	}
	exp, err := time.Parse(time.RFC3339, pc["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(exp.Add(1500 * time.Millisecond)))
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 409 {
		// Decided at its own URL: as before the expiry, never 410.
		t.Errorf("approve at the caller after the copy's expiry, the remote decided in time: %d %v, want 409", code, out)
	}
	// Nothing delivers front's outbox here: its poll, as the notifier's.
	if run, err := p.engine.StartPoll(context.Background(), paused["task_id"].(string), paused["request_id"].(string)); err != nil {
		t.Fatalf("the poll: %v", err)
	} else if run != nil {
		run.Execute(context.Background(), nil)
	}
	v := p.waitStatus(t, paused["task_id"].(string), "Completed")
	raw, _ := json.Marshal(v)
	if strings.Contains(string(raw), "expired") {
		t.Errorf("front's task says the call expired, though it ran: %s", raw)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "intime.txt")); got != 1 {
		t.Errorf("append_file ran %d times, want 1", got)
	}
}

// TestRemoteDecidedThereBelowALocalCaller: as
// TestRemoteDecidedThereBeforeItsExpiry, one level down: boss → front →
// the remote (a 2 s approval), decided at the remote's own URL in time.
// A decision at boss past its copy of the expiry reads the remote through
// front (the leaf is no task of this system) and answers as the remote
// does, 409 — before, boss looked for the remote's task in its own store,
// found none, took the round for undecided and expired the whole chain,
// its history saying the call expired though it ran (the torture test:
// xtop → rmid → a remote leaf). With the remote down, the same decision
// is 502 remote_unavailable and changes nothing.
func TestRemoteDecidedThereBelowALocalCaller(t *testing.T) {
	onBothStores(t, testRemoteDecidedThereBelowALocalCaller)
}

func testRemoteDecidedThereBelowALocalCaller(t *testing.T) {
	var down atomic.Bool
	relay := &a2atest.Relay{Refuse: func([]byte) bool { return down.Load() }}
	p := startPairOpts(t, pairOpts{relay: relay, extra: map[string]string{"boss.yaml": bossYAML},
		def: strings.Replace(agentYAML, "requires_approval: [write_file, append_file, delete_file]",
			"requires_approval: [write_file, append_file, delete_file]\n        approval_ttl: 2s", 1)})
	inner, _ := json.Marshal(map[string]string{"message": appendLine("below.txt")})
	msg, _ := json.Marshal(map[string]string{"message": "/call billing " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call front " + string(msg)}}})
	_, paused := httpCall(t, "POST", p.url+"/agents/boss/invoke", "alice", string(body))
	if paused["status"] != "Paused" {
		t.Fatalf("boss: %v", paused)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	exp, err := time.Parse(time.RFC3339, pc["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	remoteURL := strings.Replace(pc["resume_url"].(string), p.relay.URL, p.remote.url, 1)
	if code, out := httpCall(t, "POST", remoteURL, "bob", `{"action":"approve"}`); code != 200 || out["status"] != "Completed" {
		t.Fatalf("approve at the remote: %d %v", code, out)
	}
	time.Sleep(time.Until(exp.Add(1500 * time.Millisecond)))
	down.Store(true)
	if code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`); code != 502 {
		t.Errorf("approve at boss past the copy's expiry, the remote down: %d %v, want 502 remote_unavailable", code, out)
	}
	if v := getTask(t, p.url, "boss", paused["task_id"].(string)); v["status"] != "Paused" {
		t.Errorf("boss after a decision that could read nothing: %v, want Paused", v["status"])
	}
	down.Store(false)
	if code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`); code != 409 {
		t.Errorf("approve at boss past the copy's expiry, the remote decided in time: %d %v, want 409", code, out)
	}
	bv := getTask(t, p.url, "boss", paused["task_id"].(string))
	if raw, _ := json.Marshal([]any{bv["items"], bv["requests"]}); bv["status"] != "Paused" || strings.Contains(string(raw), "expired") {
		t.Errorf("boss after the remote was decided in time: %v, its history %s; want it waiting on front's news, nothing expired", bv["status"], raw)
	}
	if got := lines(t, filepath.Join(p.remote.sandbox, "below.txt")); got != 1 {
		t.Errorf("append_file ran %d times, want 1", got)
	}
}

// TestRemoteEditCheckedWholeAtTheCaller: duo waits on a local leaf and a
// remote one. A decision at duo approving the local call and editing the
// remote's with an input its tool's schema refuses is refused whole,
// 400 invalid_input, before anything is claimed: the remote shows its
// tool's input schema with its pending call, and the caller checks the
// edit against it (docs/api.md, "Remote agents"). Before, the local leaf
// was claimed and ran, the caller answered 200, and the remote refused
// the edit later (the torture test's hour, seed 866707708).
func TestRemoteEditCheckedWholeAtTheCaller(t *testing.T) {
	onBothStores(t, testRemoteEditCheckedWholeAtTheCaller)
}

func testRemoteEditCheckedWholeAtTheCaller(t *testing.T) {
	remote, srv, dir, paused := duoPaused(t, "10m")
	var decisions []map[string]any
	var remoteTask string
	for _, p := range paused["pending_approvals"].([]any) {
		pc := p.(map[string]any)
		if pc["agent"] == "billing" {
			remoteTask = pc["task_id"].(string)
			decisions = append(decisions, map[string]any{"tool_call_id": pc["tool_call_id"], "action": "edit", "input": map[string]any{"path": 7}})
		} else {
			decisions = append(decisions, map[string]any{"tool_call_id": pc["tool_call_id"], "action": "approve"})
		}
	}
	raw, _ := json.Marshal(map[string]any{"decisions": decisions})
	code, out := httpCall(t, "POST", srv.URL+paused["resume_url"].(string), "alice", string(raw))
	if code != 400 || out["error"].(map[string]any)["code"] != "invalid_input" {
		t.Errorf("an edit the remote's schema refuses, with an approval of the local leaf: %d %v, want 400 invalid_input", code, out)
	}
	_, v := httpCall(t, "GET", srv.URL+"/agents/duo/tasks/"+paused["task_id"].(string), "alice", "")
	if v["status"] != "Paused" || len(v["pending_approvals"].([]any)) != 2 {
		t.Errorf("duo after the refused decision: %v %v", v["status"], v["pending_approvals"])
	}
	if _, rv := httpCall(t, "GET", remote.url+"/agents/assistant/tasks/"+remoteTask, "bob", ""); rv["status"] != "Paused" {
		t.Errorf("the remote task after the refused decision: %v", rv["status"])
	}
	time.Sleep(200 * time.Millisecond)
	if got := lines(t, filepath.Join(dir, "sandbox", "q.txt")); got != 0 {
		t.Errorf("the local leaf's append ran %d times", got)
	}
}

// TestExpiryKeepsARemoteLeafDecidedThere: duo waits on quick (here,
// expiring in a second) and on the remote's assistant. The remote's call is
// approved at its own URL and runs; quick is decided by nobody and
// expires, so a decision at duo is 410 and ends the chain. duo's history
// must not say its call of the remote "approval expired": that leaf ran.
// It gets outcome_unknown (the torture test's hour, seed 390242616).
func TestExpiryKeepsARemoteLeafDecidedThere(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testExpiryKeepsARemoteLeafDecidedThere(t, remoteUp) })
}

// TestExpiryWithTheRemoteDown: as TestExpiryKeepsARemoteLeafDecidedThere,
// but the remote's system is down when the chain expires: whether its
// call ran there cannot be read, so duo's history says outcome_unknown,
// never "approval expired" (before, an unread remote kept the expiry's
// text; the torture test found it true of a remote decided in time).
func TestExpiryWithTheRemoteDown(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testExpiryKeepsARemoteLeafDecidedThere(t, remoteDown) })
}

// TestExpiryWithTheRemoteTaskGone: as TestExpiryKeepsARemoteLeafDecidedThere,
// but the remote's task was canceled and deleted on its system before the
// chain expired: what ran there cannot be read, so duo's history says
// outcome_unknown. Before, a remote task not found kept the expiry's
// did-not-run text (the torture test's hour, seed 604880427: rduo).
func TestExpiryWithTheRemoteTaskGone(t *testing.T) {
	onBothStores(t, func(t *testing.T) { testExpiryKeepsARemoteLeafDecidedThere(t, remoteGone) })
}

// How the remote stands when duo's chain expires.
const (
	remoteUp = iota
	remoteDown
	remoteGone
)

func testExpiryKeepsARemoteLeafDecidedThere(t *testing.T, how int) {
	remote, srv, _, paused := duoPaused(t, "1s")
	for _, p := range paused["pending_approvals"].([]any) {
		pc := p.(map[string]any)
		if pc["agent"] != "billing" {
			continue
		}
		if how == remoteGone {
			resume := pc["resume_url"].(string)
			task := resume[:strings.Index(resume, "/requests/")]
			if code, out := httpCall(t, "POST", task+"/cancel", "bob", `{}`); code != 200 {
				t.Fatalf("cancel at the remote: %d %v", code, out)
			}
			if code, out := httpCall(t, "DELETE", task, "bob", ""); code != 204 {
				t.Fatalf("delete at the remote: %d %v", code, out)
			}
			continue
		}
		if code, out := httpCall(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve"}`); code != 200 || out["status"] != "Completed" {
			t.Fatalf("approve at the remote: %d %v", code, out)
		}
	}
	if how == remoteDown {
		remote.srv.Close()
	}
	time.Sleep(1100 * time.Millisecond) // quick's round expires
	if code, out := httpCall(t, "POST", srv.URL+paused["resume_url"].(string), "alice", `{"action":"approve"}`); code != 410 {
		t.Fatalf("approve at duo after quick expired: %d %v, want 410", code, out)
	}
	results := callResults(t, srv.URL+"/agents/duo/tasks/"+paused["task_id"].(string))
	found := 0
	for _, txt := range results {
		switch {
		case strings.HasPrefix(txt, "outcome_unknown: the agent billing"):
			found++
		case strings.Contains(txt, "billing") && strings.HasPrefix(txt, "approval expired"):
			t.Errorf("duo's call of billing, which ran at the remote: %q", txt)
		}
	}
	if found != 1 {
		t.Errorf("duo's results %q: want billing's call outcome_unknown", results)
	}
	want := 1
	if how == remoteGone {
		want = 0
	}
	if got := lines(t, filepath.Join(remote.sandbox, "b.txt")); got != want {
		t.Errorf("the remote's append ran %d times, want %d", got, want)
	}
}

// TestRemotePartTooLateAtAMixedCaller: duo waits on quick (here, an hour
// to decide) and the remote's assistant, whose approval expires in 2 s. A
// decision at duo sends the remote's part only after quick's claim, so
// one taken within RemotePartMargin of the remote's expiry could reach it
// after its round closed, and duo would record an approval the remote
// never took (the torture test's hour, seed 306654: five such). Within the
// margin the decision is 410 approval_expired and ends the chain: quick's
// call never runs, the remote's task is canceled there, nothing recorded
// as approved. Before, quick's append ran and duo answered 200.
func TestRemotePartTooLateAtAMixedCaller(t *testing.T) {
	onBothStores(t, testRemotePartTooLateAtAMixedCaller)
}

func testRemotePartTooLateAtAMixedCaller(t *testing.T) {
	remoteDef := strings.Replace(agentYAML, "requires_approval: [write_file, append_file, delete_file]",
		"requires_approval: [write_file, append_file, delete_file]\n        approval_ttl: 2s", 1)
	remote, srv, dir, paused := duoPausedOn(t, "1h", remoteDef, appendLine("b.txt"), 2)
	code, out := httpCall(t, "POST", srv.URL+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	if e, _ := out["error"].(map[string]any); code != 410 || e["code"] != "approval_expired" {
		t.Fatalf("approve at duo within the margin of the remote's expiry: %d %v, want 410 approval_expired", code, out)
	}
	if got := lines(t, filepath.Join(dir, "sandbox", "q.txt")); got != 0 {
		t.Errorf("quick's append ran %d times after a 410", got)
	}
	if got := lines(t, filepath.Join(remote.sandbox, "b.txt")); got != 0 {
		t.Errorf("the remote's append ran %d times after a 410", got)
	}
	_, v := httpCall(t, "GET", srv.URL+"/agents/duo/tasks/"+paused["task_id"].(string), "alice", "")
	if v["status"] != "Failed" || len(recordedActions(v)) != 0 {
		t.Errorf("duo after the 410: %v %q, want Failed, no decision recorded", v["status"], recordedActions(v))
	}
}
