package a2a_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
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
	if code != 409 {
		t.Errorf("an answer after the expiry: %d %v", code, out)
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
