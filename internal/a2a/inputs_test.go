package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

const askerYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: assistant
version: 0.1
description: Asks.
spec:
  agent:
    model: local
    tools:
      - builtin: ask_user
`

// TestQuestionOverA2A: an agent's question (docs/api.md, "Pauses for
// input") is an input-required status whose text part asks it and whose
// data part holds pending_inputs; a plain text reply answers it, checked
// like any answer ("approve" included, when the round holds only the
// question).
func TestQuestionOverA2A(t *testing.T) {
	s := startStackYAML(t, askerYAML, false)
	c := s.client(t, "alice")
	paused := send(t, c, text(`/call ask_user {"question": "Which colour?", "choices": ["red", "blue"]}`))
	if paused.Status.State != a2a.TaskStateInputRequired || paused.Status.Message == nil {
		t.Fatalf("state %s", paused.Status.State)
	}
	var said string
	var inputs []any
	for _, p := range paused.Status.Message.Parts {
		if d, ok := p.Data().(map[string]any); ok {
			inputs, _ = d["pending_inputs"].([]any)
		} else {
			said += p.Text()
		}
	}
	if !strings.Contains(said, "Which colour? (one of: red, blue)") || len(inputs) != 1 || inputs[0].(map[string]any)["kind"] != "question" {
		t.Fatalf("the status message: %q %v", said, inputs)
	}
	wrong := text("purple")
	wrong.TaskID = paused.ID
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: wrong}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("an answer that is not a choice: %v, want invalid params", err)
	}
	reply := text("blue")
	reply.TaskID = paused.ID
	done := send(t, c, reply)
	if done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), "ask_user success: blue") {
		t.Fatalf("after the reply: %s %q", done.Status.State, artifactText(done))
	}

	open := send(t, c, text(`/call ask_user {"question": "Anything else?"}`))
	yes := text("approve")
	yes.TaskID = open.ID
	if done := send(t, c, yes); !strings.Contains(artifactText(done), "ask_user success: approve") {
		t.Errorf("\"approve\" answering a question: %s %q", done.Status.State, artifactText(done))
	}
}

// TestJSClientInputs: the official A2A JavaScript SDK's client answers an
// agent's questions (tools/a2a-js/inputs.mjs), over 1.0 and over 0.3: a
// round holding one question by a plain text reply, a question with a
// schema by a data part's decisions (after two refused ones). Each answer
// reaches the model once, as the call's tool result: text for the text,
// JSON for the object.
func TestJSClientInputs(t *testing.T) {
	node, script := jsClient(t, "inputs.mjs")
	for _, protocol := range []string{"1.0", "0.3"} {
		t.Run(protocol, func(t *testing.T) {
			m := &modelLog{}
			s := startStackModel(t, askerYAML, true, func(in agent.Model) agent.Model { m.Model = in; return m })
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, script, s.url, "assistant", "alice", protocol).CombinedOutput()
			t.Logf("node inputs.mjs (%s):\n%s", protocol, out)
			if err != nil || !strings.Contains(string(out), "ALL OK inputs "+protocol) {
				t.Fatalf("the JS client's inputs failed: %v", err)
			}
			answered := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == "ANSWERED" {
					answered[f[1]] = f[2]
				}
			}
			want := map[string]agent.Block{
				"text": {Type: agent.BlockText, Text: "Q3 numbers"},
				"data": {Type: agent.BlockJSON, JSON: json.RawMessage(`{"copies":3,"duplex":true}`)},
			}
			for how, block := range want {
				id := answered[how]
				if id == "" {
					t.Errorf("the script did not say which call its %s answer was for", how)
					continue
				}
				given, dup := m.given(id)
				if len(given) != 1 || dup != 0 {
					t.Errorf("%s answer %s: the model was given %d results for it (%d requests carried it twice), want 1", how, id, len(given), dup)
					continue
				}
				r := given[0]
				if r.Status != agent.ResultSuccess || len(r.Content) != 1 {
					t.Errorf("%s answer: the model's result %+v", how, r)
					continue
				}
				got := r.Content[0]
				if got.Type != block.Type || got.Text != block.Text || !sameJSON(got.JSON, block.JSON) {
					t.Errorf("%s answer: the model was given %s %q %s, want %s %q %s", how, got.Type, got.Text, got.JSON, block.Type, block.Text, block.JSON)
				}
			}
			if n := m.count(); n != 4 {
				t.Errorf("%d model calls, want 4: a question and the answer's results, twice", n)
			}
		})
	}
}

// jsClient finds node and the script name of tools/a2a-js, skipping the test
// when the SDK is not installed (failing it under CI). HITCH_A2A_JS
// overrides where the SDK is installed (a directory holding node_modules).
func jsClient(t *testing.T, name string) (node, script string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "tools", "a2a-js", name))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("HITCH_A2A_JS"); dir != "" {
		// The script beside that node_modules (ES modules resolve from
		// the script's directory).
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		script = filepath.Join(dir, strings.TrimSuffix(name, ".mjs")+"-test.mjs")
		if err := os.WriteFile(script, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(script) })
	}
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@a2a-js", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the A2A JS client is not installed (make tools): %v", err)
		}
		t.Skipf("the A2A JS client is not installed (make tools): %v", err)
	}
	return node, script
}

// modelLog is a model that keeps a copy of every request it is sent.
type modelLog struct {
	agent.Model
	mu   sync.Mutex
	reqs [][]agent.Message
}

func (m *modelLog) Converse(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	var msgs []agent.Message
	if b, err := json.Marshal(req.Messages); err == nil {
		_ = json.Unmarshal(b, &msgs)
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, msgs)
	m.mu.Unlock()
	return m.Model.Converse(ctx, req, on)
}

func (m *modelLog) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// given is the tool results for call id that the model was given as news
// (in a request's last message), and the number of requests whose messages
// carried more than one result for it.
func (m *modelLog) given(id string) (results []agent.Block, dup int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msgs := range m.reqs {
		n := 0
		for i, msg := range msgs {
			for _, b := range msg.Content {
				if b.Type != agent.BlockToolResult || b.ToolUseID != id {
					continue
				}
				n++
				if i == len(msgs)-1 {
					results = append(results, b)
				}
			}
		}
		if n > 1 {
			dup++
		}
	}
	return results, dup
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// TestReplyThatDecidesNothing: a text reply to a round of approvals that is
// neither approve nor reject is invalid params, not an internal error.
func TestReplyThatDecidesNothing(t *testing.T) {
	s := startStack(t)
	c := s.client(t, "alice")
	paused := send(t, c, text(`/call delete_file {"path": "old.log"}`))
	m := text("maybe")
	m.TaskID = paused.ID
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("a reply that decides nothing: %v, want invalid params", err)
	}
}

// TestRemoteAgentsQuestion: a remote Hitch agent's question is a pending
// input of its caller (kind question, the remote's references); answered
// at the caller, the answer reaches the remote once, through its
// decision, and both ends complete.
func TestRemoteAgentsQuestion(t *testing.T) { onBothStores(t, testRemoteAgentsQuestion) }

func testRemoteAgentsQuestion(t *testing.T) {
	p := startPairYAML(t, askerYAML, true)
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice",
		callBilling(`/call ask_user {"question": "Which colour?", "choices": ["red", "blue"]}`))
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %v", code, paused)
	}
	ins, _ := paused["pending_inputs"].([]any)
	if len(ins) != 1 {
		t.Fatalf("front's pending inputs: %v", paused)
	}
	in := ins[0].(map[string]any)
	if in["agent"] != "billing" || in["kind"] != "question" || in["question"] != "Which colour?" ||
		!strings.HasPrefix(in["resume_url"].(string), p.remote.url+"/agents/assistant/tasks/") {
		t.Fatalf("front's pending input: %v", in)
	}
	url := p.url + paused["resume_url"].(string)
	id := in["tool_call_id"].(string)
	if code, out := httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+id+`","action":"answer","result":"green"}]}`); code != 400 || out["error"].(map[string]any)["code"] != "invalid_input" {
		t.Errorf("an answer that is not a choice: %d %v", code, out)
	}
	if rv := p.remoteTask(t, in["task_id"].(string)); rv["status"] != "Paused" {
		t.Fatalf("the remote after a refused answer: %v", rv["status"])
	}
	code, out := httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+id+`","action":"answer","result":"blue"}]}`)
	if code != 200 || out["status"] != "Completed" || !strings.Contains(out["output"].(string), "ask_user success: blue") {
		t.Fatalf("the answer at the caller: %d %v", code, out)
	}
	rv := p.remoteTask(t, in["task_id"].(string))
	if rv["status"] != "Completed" || strings.Count(fmt.Sprint(rv["items"]), "text:blue") != 1 {
		t.Errorf("the remote task: %v %v", rv["status"], rv["items"])
	}
}

// TestAnotherVendorsQuestion: another vendor's question (input-required
// without Hitch's data, the A2A SDK's own server) is a pending input of
// kind question at the caller; answered there, twenty times at once, the
// answer reaches the vendor once, as a message, and the call completes.
func TestAnotherVendorsQuestion(t *testing.T) { onBothStores(t, testAnotherVendorsQuestion) }

func testAnotherVendorsQuestion(t *testing.T) {
	var answers atomic.Int32
	vendor := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(vendorExecutor{answers: &answers})))
	t.Cleanup(vendor.Close)
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, via: func(string) string { return vendor.URL + "/vendor" }})
	code, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("which?"))
	ins, _ := paused["pending_inputs"].([]any)
	if code != 200 || paused["status"] != "Paused" || len(ins) != 1 {
		t.Fatalf("front: %d %v", code, paused)
	}
	in := ins[0].(map[string]any)
	if in["kind"] != "question" || in["question"] != "which account?" || in["agent"] != "billing" || in["name"] != "billing" ||
		in["resume_url"] != vendor.URL+"/vendor/a2a/assistant" {
		t.Fatalf("the pending input: %v", in)
	}
	url := p.url + paused["resume_url"].(string)
	id := in["tool_call_id"].(string)
	if code, out := httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+id+`","action":"answer","result":7}]}`); code != 400 {
		t.Errorf("an answer that is not text: %d %v", code, out)
	}
	if code, out := httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+id+`","action":"approve"}]}`); code != 400 {
		t.Errorf("an approval of a question: %d %v", code, out)
	}
	body := `{"decisions":[{"tool_call_id":"` + id + `","action":"answer","result":"savings"}]}`
	var wg sync.WaitGroup
	codes := make([]int, 20)
	outs := make([]map[string]any, 20)
	for i := range codes {
		wg.Go(func() { codes[i], outs[i] = httpCall(t, "POST", url, "alice", body) })
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != 200 || (outs[i]["status"] != "Completed" && outs[i]["status"] != "Running") {
			t.Errorf("answer %d: %d %v", i, codes[i], outs[i])
		}
	}
	done := p.waitStatus(t, paused["task_id"].(string), "Completed")
	if !strings.Contains(fmt.Sprint(done["items"]), "account savings") {
		t.Errorf("front's history: %v", done["items"])
	}
	if n := answers.Load(); n != 1 {
		t.Errorf("the vendor got %d answers, want 1", n)
	}
}

// TestAnotherVendorsQuestionExpires: the caller's copy of another
// vendor's question expires after the a2a tool's input_ttl: the caller
// ends Failed input_expired without a model call, and the vendor's task
// is canceled.
func TestAnotherVendorsQuestionExpires(t *testing.T) {
	vendor := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(vendorExecutor{})))
	t.Cleanup(vendor.Close)
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, via: func(string) string { return vendor.URL + "/vendor" }, inputTTL: "1s"})
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("which?"))
	if paused["status"] != "Paused" {
		t.Fatalf("front: %v", paused)
	}
	done := p.waitStatus(t, paused["task_id"].(string), "Failed")
	req := done["requests"].([]any)[0].(map[string]any)
	if req["error"].(map[string]any)["code"] != "input_expired" {
		t.Errorf("front's request: %v", req)
	}
	id := paused["pending_inputs"].([]any)[0].(map[string]any)["tool_call_id"].(string)
	code, out := httpCall(t, "POST", p.url+paused["resume_url"].(string), "alice", `{"decisions":[{"tool_call_id":"`+id+`","action":"answer","result":"late"}]}`)
	if code != 410 || out["error"].(map[string]any)["code"] != "input_expired" {
		t.Errorf("an answer after the expiry: %d %v, want 410 input_expired (one round, one outcome)", code, out)
	}
}

// TestAnotherVendorAsksTwice: the vendor's second question (after the
// first answer) pauses the caller again, in a new round; its answer
// completes the call.
func TestAnotherVendorAsksTwice(t *testing.T) {
	var answers atomic.Int32
	vendor := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(vendorExecutor{answers: &answers})))
	t.Cleanup(vendor.Close)
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, via: func(string) string { return vendor.URL + "/vendor" }})
	_, paused := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("twice?"))
	url := p.url + paused["resume_url"].(string)
	first := paused["pending_inputs"].([]any)[0].(map[string]any)
	code, out := httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+first["tool_call_id"].(string)+`","action":"answer","result":"savings"}]}`)
	if code != 200 || out["status"] != "Paused" || out["round"] != float64(2) {
		t.Fatalf("after the first answer: %d %v", code, out)
	}
	second := out["pending_inputs"].([]any)[0].(map[string]any)
	if second["question"] != "which branch for savings?" || second["tool_call_id"] == first["tool_call_id"] {
		t.Fatalf("the second question: %v (the first %v)", second, first)
	}
	code, out = httpCall(t, "POST", url, "alice", `{"decisions":[{"tool_call_id":"`+second["tool_call_id"].(string)+`","action":"answer","result":"north"}]}`)
	if code != 200 || out["status"] != "Completed" || !strings.Contains(out["output"].(string), "account north") {
		t.Fatalf("after the second answer: %d %v", code, out)
	}
	if n := answers.Load(); n != 2 {
		t.Errorf("the vendor got %d answers, want 2", n)
	}
}
