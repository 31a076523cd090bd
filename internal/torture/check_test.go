package torture

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Hand-made histories: a clean one, and the same with one thing wrong at a
// time. Each check of the checker must fire on its breach, and none on the
// clean history.

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const (
	tLeaf = "00000000-0000-7000-8000-00000000a001"
	rLeaf = "00000000-0000-7000-8000-00000000b001"
	tTop  = "00000000-0000-7000-8000-00000000a002"
	rTop  = "00000000-0000-7000-8000-00000000b002"
	tRem  = "00000000-0000-7000-8000-00000000a003"
	rRem  = "00000000-0000-7000-8000-00000000b003"
)

func use(id, name, tag, v string) Block {
	in, _ := json.Marshal(map[string]string{"tag": tag, "v": v})
	return Block{Type: "tool_use", ID: id, Name: name, Input: in}
}

func useAgent(id, name, message string) Block {
	in, _ := json.Marshal(map[string]string{"message": message})
	return Block{Type: "tool_use", ID: id, Name: name, Input: in}
}

func result(id, status, text string) Block {
	return Block{Type: "tool_result", ToolUseID: id, Status: status, Content: []Block{{Type: "text", Text: text}}}
}

func ran(id string, n int, tool, tag string) Block {
	j, _ := json.Marshal(map[string]string{"ran": fmt.Sprintf("%s %s %s", Marker(n), tool, tag)})
	return Block{Type: "tool_result", ToolUseID: id, Status: "success", Content: []Block{{Type: "json", JSON: j}}}
}

func approve(round int, by string, when time.Time, action string, ids ...string) Decision {
	d := Decision{Round: round, Approver: by, DecidedAt: when, Action: action}
	for _, id := range ids {
		d.Calls = append(d.Calls, DecisionCall{ToolCallID: id, Action: action})
	}
	return d
}

func rr(rid, tid, status string, round int) string {
	b, _ := json.Marshal(map[string]any{"task_id": tid, "request_id": rid, "status": status, "round": round})
	return string(b)
}

func hook(proc, id, typ, rid string, round int, start float64) Delivery {
	return Delivery{Proc: proc, ID: id, Type: typ, RequestID: rid, Round: round, Start: at(start), End: at(start + 0.01), Code: 204, Verified: true}
}

// clean is a history without a breach: a leaf on A pauses on fx_effect
// (with fx_peek beside it), is approved, both run once, it completes; the
// webhooks of the pause and the end arrive in order.
// checkWant checks in and fails t unless the invariants violated are
// want, listing every violation.
func checkWant(t *testing.T, in Input, want []int) *Result {
	t.Helper()
	res := Check(in)
	if diff := cmp.Diff(want, invariants(res)); diff != "" {
		var lines []string
		for _, v := range res.Violations {
			lines = append(lines, fmt.Sprintf("  %d: %s", v.Invariant, v.What))
		}
		t.Errorf("invariants violated (-want +got):\n%s%s", diff, strings.Join(lines, "\n"))
	}
	return res
}

func clean() Input {
	leaf := &Task{Proc: ProcA, TaskID: tLeaf, Agent: "leaf", Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rLeaf, Role: "user", Content: []Block{{Type: "text", Text: "/call fx_effect …"}}},
			{Seq: 2, RequestID: rLeaf, Role: "assistant", Content: []Block{use("c1", "fx_effect", "t1", "a"), use("c2", "fx_peek", "t2", "b")}},
			{Seq: 3, RequestID: rLeaf, Role: "tool", Content: []Block{ran("c1", 1, "effect", "t1"), ran("c2", 2, "peek", "t2")}},
		},
		Requests: []Request{{RequestID: rLeaf, Kind: "invoke", Status: "Completed",
			Decisions: []Decision{approve(1, User, at(1.0), "approve", "c1")}}},
	}
	return Input{
		Tasks: []*Task{leaf},
		Ledger: []Execution{
			{N: 1, Key: rLeaf + "#c1", RequestID: rLeaf, ToolCallID: "c1", Tool: ToolEffect, Process: ProcA, Tag: "t1", Value: "a", Start: at(1.1), End: at(1.2)},
			{N: 2, Key: rLeaf + "#c2", RequestID: rLeaf, ToolCallID: "c2", Tool: ToolPeek, Process: ProcA, Tag: "t2", Value: "b", Start: at(1.1), End: at(1.2)},
		},
		Ops: []Op{
			{ID: 1, Kind: OpInvoke, Proc: ProcA, Method: "POST", Path: "/agents/leaf/invoke", Start: at(0), End: at(0.5), Status: 200, Resp: rr(rLeaf, tLeaf, "Paused", 1)},
			{ID: 2, Kind: OpResume, Proc: ProcA, Method: "POST", Path: "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/resume",
				Body: `{"action":"approve","round":1}`, Start: at(0.9), End: at(1.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0),
				Decides: []CallDecision{{RequestID: rLeaf, ToolCallID: "c1", Action: "approve"}}},
		},
		Deliveries: []Delivery{
			hook(ProcA, "msg_1", "request.paused", rLeaf, 1, 0.6),
			hook(ProcA, "msg_2", "request.completed", rLeaf, 0, 1.4),
		},
	}
}

// chain is a history of a caller on A (rmid) whose remote leaf on B runs
// fx_effect after an approval at the caller; the leaf is found by its
// message.
func chain() Input {
	msg := "/call fx_effect {\"tag\":\"t9\",\"v\":\"a\"}"
	top := &Task{Proc: ProcA, TaskID: tTop, Agent: "rmid", Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rTop, Role: "user", Content: []Block{{Type: "text", Text: "/call leaf …"}}},
			{Seq: 2, RequestID: rTop, Role: "assistant", Content: []Block{useAgent("k1", "leaf", msg)}},
			{Seq: 3, RequestID: rTop, Role: "tool", Content: []Block{result("k1", "success", "results: fx_effect success")}},
		},
		Requests: []Request{{RequestID: rTop, Kind: "invoke", Status: "Completed",
			Decisions: []Decision{approve(1, User, at(1.0), "approve", "c9")}}},
	}
	rem := &Task{Proc: ProcB, TaskID: tRem, Agent: "leaf", Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rRem, Role: "user", Content: []Block{{Type: "text", Text: msg}}},
			{Seq: 2, RequestID: rRem, Role: "assistant", Content: []Block{use("c9", "fx_effect", "t9", "a")}},
			{Seq: 3, RequestID: rRem, Role: "tool", Content: []Block{ran("c9", 1, "effect", "t9")}},
		},
		Requests: []Request{{RequestID: rRem, Kind: "invoke", Status: "Completed",
			Decisions: []Decision{approve(1, User, at(1.0), "approve", "c9")}}},
	}
	return Input{
		Tasks: []*Task{top, rem},
		Ledger: []Execution{
			{N: 1, Key: rRem + "#c9", RequestID: rRem, ToolCallID: "c9", Tool: ToolEffect, Process: ProcB, Tag: "t9", Value: "a", Start: at(1.1), End: at(1.2)},
		},
		Ops: []Op{
			{ID: 1, Kind: OpInvoke, Proc: ProcA, Path: "/agents/rmid/invoke", Start: at(0), End: at(0.5), Status: 200, Resp: rr(rTop, tTop, "Paused", 1)},
			{ID: 2, Kind: OpResume, Proc: ProcA, Path: "/agents/rmid/tasks/" + tTop + "/requests/" + rTop + "/resume",
				Body: `{"action":"approve","round":1}`, Start: at(0.9), End: at(1.5), Status: 200, Resp: rr(rTop, tTop, "Completed", 0),
				Decides: []CallDecision{{RequestID: rRem, ToolCallID: "c9", Action: "approve"}}},
		},
		Deliveries: []Delivery{
			hook(ProcA, "msg_1", "request.paused", rTop, 1, 0.6),
			hook(ProcA, "msg_2", "request.completed", rTop, 0, 1.6),
			hook(ProcB, "msg_3", "request.paused", rRem, 1, 0.6),
			hook(ProcB, "msg_4", "request.completed", rRem, 0, 1.4),
		},
	}
}

// asked is clean with a question beside the approval: answered "yes-t3"
// in the same round, and the answer reached the model once.
func asked() Input {
	in := clean()
	leaf := leafTask(&in)
	q, _ := json.Marshal(map[string]any{"question": "t3?", "choices": []string{"yes-t3", "no-t3"}})
	leaf.Items[1].Content = append(leaf.Items[1].Content, Block{Type: "tool_use", ID: "c3", Name: AskTool, Input: q})
	leaf.Items[2].Content = append(leaf.Items[2].Content, result("c3", "success", "yes-t3"))
	d := approve(1, User, at(1.0), "approve", "c1")
	d.Action = "mixed"
	d.Calls = append(d.Calls, DecisionCall{ToolCallID: "c3", Action: "answer", Result: json.RawMessage(`"yes-t3"`)})
	leaf.Requests[0].Decisions = []Decision{d}
	in.Ops[1].Body = `{"decisions":[{"tool_call_id":"c1","action":"approve"},{"tool_call_id":"c3","action":"answer","result":"yes-t3"}]}`
	in.Ops[1].Decides = append(in.Ops[1].Decides, CallDecision{RequestID: rLeaf, ToolCallID: "c3", Action: "answer", V: "yes-t3"})
	return in
}

// picked is clean with a client tool beside the approval, its result sent
// with the decision and given to the model as JSON.
func picked() Input {
	in := clean()
	leaf := leafTask(&in)
	leaf.Items[1].Content = append(leaf.Items[1].Content, Block{Type: "tool_use", ID: "c3", Name: ClientTool, Input: json.RawMessage(`{"tag":"t3"}`)})
	leaf.Items[2].Content = append(leaf.Items[2].Content, Block{Type: "tool_result", ToolUseID: "c3", Status: "success",
		Content: []Block{{Type: "json", JSON: json.RawMessage(`{"pick": "t3-1"}`)}}})
	d := approve(1, User, at(1.0), "approve", "c1")
	d.Action = "mixed"
	d.Calls = append(d.Calls, DecisionCall{ToolCallID: "c3", Action: "answer", Result: json.RawMessage(`{"pick":"t3-1"}`)})
	leaf.Requests[0].Decisions = []Decision{d}
	in.Ops[1].Body = `{"decisions":[{"tool_call_id":"c1","action":"approve"},{"tool_call_id":"c3","action":"answer","result":{"pick":"t3-1"}}]}`
	in.Ops[1].Decides = append(in.Ops[1].Decides, CallDecision{RequestID: rLeaf, ToolCallID: "c3", Action: "answer", V: `{"pick":"t3-1"}`})
	return in
}

func leafTask(in *Input) *Task { return in.Tasks[0] }

// quorum is clean with its call a qx_effect (two approvals, four eyes):
// tq1's approval is recorded (answered Paused, the call still pending),
// tq2's settles the round; tq1 sends its body again and gets the outcome.
func quorum() Input {
	in := clean()
	leaf := leafTask(&in)
	leaf.Items[1].Content[0].Name = "qx_effect"
	d := approve(1, "tq2", at(1.0), "approve", "c1")
	d.Calls[0].Approvals = append(d.Calls[0].Approvals,
		struct {
			By     string `json:"by"`
			Action string `json:"action"`
		}{"tq1", "approve"},
		struct {
			By     string `json:"by"`
			Action string `json:"action"`
		}{"tq2", "approve"})
	leaf.Requests[0].Decisions = []Decision{d}
	path := "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/resume"
	pending, _ := json.Marshal(map[string]any{"task_id": tLeaf, "request_id": rLeaf, "status": "Paused", "round": 1,
		"pending_approvals": []map[string]any{{"tool_call_id": "c1", "name": "qx_effect", "needed": 2, "approvals": []map[string]string{{"by": "tq1"}}}}})
	decides := []CallDecision{{RequestID: rLeaf, ToolCallID: "c1", Action: "approve"}}
	in.Ops = []Op{
		in.Ops[0],
		{ID: 2, Kind: OpResume, Proc: ProcA, Method: "POST", Path: path, Body: `{"action":"approve","round":1}`, User: "tq1;groups=sre",
			Start: at(0.5), End: at(0.6), Status: 200, Resp: string(pending), Decides: decides},
		{ID: 3, Kind: OpResume, Proc: ProcA, Method: "POST", Path: path, Body: `{"action":"approve","round":1}`, User: "tq2;groups=sre",
			Start: at(0.9), End: at(1.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0), Decides: decides},
		{ID: 4, Kind: OpResume, Proc: ProcA, Method: "POST", Path: path, Body: `{"action":"approve","round":1}`, User: "tq1;groups=sre",
			Start: at(1.4), End: at(1.5), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0), Decides: decides},
	}
	return in
}

// remoteRejected makes chain's remote leaf rejected on its own system at
// when (the caller's approval is op #2, sent at 0.9), its tool not run.
func remoteRejected(in *Input, when time.Time) {
	rem := in.Tasks[1]
	rem.Requests[0].Decisions = []Decision{approve(1, User, when, "reject", "c9")}
	rem.Items[2].Content[0] = result("c9", "error", "rejected by tort")
	in.Ledger = nil
	in.Ops = append(in.Ops, Op{ID: 3, Kind: OpResume, Proc: ProcB, Path: "/agents/leaf/tasks/" + tRem + "/requests/" + rRem + "/resume",
		Body: `{"action":"reject","round":1}`, Start: when.Add(-50 * time.Millisecond), End: when.Add(50 * time.Millisecond), Status: 200, Resp: rr(rRem, tRem, "Completed", 0),
		Decides: []CallDecision{{RequestID: rRem, ToolCallID: "c9", Action: "reject"}}})
}

func invariants(res *Result) []int {
	set := map[int]bool{}
	for _, v := range res.Violations {
		set[v.Invariant] = true
	}
	var out []int
	for i := range set {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// refusedOp is a body the API must refuse, sent to the leaf of clean
// after its decision, with the decisions read before and after it.
func refusedOp(id, status int, before, after string) Op {
	resp := `{"error":{"code":"invalid_decisions","message":"…"}}`
	if status == 200 {
		resp = rr(rLeaf, tLeaf, "Completed", 0)
	}
	return Op{ID: id, Kind: OpResume, Proc: ProcA, Method: "POST", Path: "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/resume",
		Body: `{"action":"reject","round":1,"decisions":[{"tool_call_id":"c1","action":"approve"}]}`, Start: at(2), End: at(2.1),
		Status: status, Resp: resp, Note: "leaf refused: action+decisions", Refuse: true, Before: before, After: after}
}

// deleteOp is a delete of clean's leaf task at 2, answered 204, with the
// read before it and a 404 after it.
func deleteOp(id int, before string) Op {
	return Op{ID: id, Kind: OpDelete, Proc: ProcA, Method: "DELETE", Path: "/agents/leaf/tasks/" + tLeaf,
		Start: at(2), End: at(2.1), Status: 204, Note: "leaf delete", Before: before, After: `{"code":404}`}
}

// replayOp is a replay of clean's leaf request, with what its reader found.
func replayOp(id int, problem string) Op {
	return Op{ID: id, Kind: OpReplay, Proc: ProcA, Method: "GET", Path: "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/events",
		Start: at(2), End: at(2.1), Status: 200, Note: "replay", Problem: problem, Events: 9}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		base   func() Input
		mutate func(in *Input)
		want   []int
		apart  int
	}{
		{name: "clean", base: clean, mutate: func(*Input) {}},
		{name: "clean chain, remote leaf found by its message", base: chain, mutate: func(*Input) {}},
		{name: "clean question", base: asked, mutate: func(*Input) {}},
		{name: "clean quorum: a recorded approval is no outcome", base: quorum, mutate: func(*Input) {}},
		{name: "clean quorum: edited by one, approved as edited by another", base: quorum, mutate: func(in *Input) {
			c := &leafTask(in).Requests[0].Decisions[0].Calls[0]
			c.Action, c.Input = "edit", json.RawMessage(`{"tag":"t1","v":"b"}`)
			c.Approvals[0].Action = "edit"
			in.Ledger[0].Value = "b"
			in.Ops[1].Body = `{"decisions":[{"tool_call_id":"c1","action":"edit","input":{"tag":"t1","v":"b"}}],"round":1}`
			in.Ops[1].Decides = []CallDecision{{RequestID: rLeaf, ToolCallID: "c1", Action: "edit", V: "b"}}
		}},
		{name: "a quorum call ran with one approval", base: quorum, want: []int{2}, mutate: func(in *Input) {
			c := &leafTask(in).Requests[0].Decisions[0].Calls[0]
			c.Approvals = c.Approvals[1:]
		}},
		{name: "a quorum call ran with its requester's approval", base: quorum, want: []int{2}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Decisions[0].Calls[0].Approvals[0].By = User
			in.Ops[1].User = ""
		}},
		{name: "a quorum call ran with an approval nobody had sent yet", base: quorum, want: []int{2}, mutate: func(in *Input) {
			in.Ops[2].Start = at(1.2)
		}},
		{name: "a recorded approval answered the outcome of a different round", base: quorum, want: []int{5, 7}, mutate: func(in *Input) {
			in.Ops[3].Resp = rr(rLeaf, tLeaf, "Failed", 0)
		}},
		{name: "the model got another answer than the one recorded", base: asked, want: []int{2}, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[2] = result("c3", "success", "no-t3")
		}},
		{name: "an answer no client sent was recorded and reached the model", base: asked, want: []int{2, 5}, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[2] = result("c3", "success", "no-t3")
			leafTask(in).Requests[0].Decisions[0].Calls[1].Result = json.RawMessage(`"no-t3"`)
		}},
		{name: "an answer reached the model though the question was rejected", base: asked, want: []int{2}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Decisions[0].Calls[1] = DecisionCall{ToolCallID: "c3", Action: "reject"}
			in.Ops[1].Decides[1] = CallDecision{RequestID: rLeaf, ToolCallID: "c3", Action: "reject"}
		}},
		{name: "the answer is in the history twice", base: asked, want: []int{1}, mutate: func(in *Input) {
			lt := leafTask(in)
			lt.Items = append(lt.Items, Item{Seq: 4, RequestID: rLeaf, Role: "tool", Content: []Block{result("c3", "success", "yes-t3")}})
		}},
		{name: "a non-idempotent call ran twice", base: clean, want: []int{1}, mutate: func(in *Input) {
			e := in.Ledger[0]
			e.N, e.Start = 3, at(1.5)
			in.Ledger = append(in.Ledger, e)
		}},
		{name: "an idempotent call ran again with no fault between", base: clean, want: []int{1}, mutate: func(in *Input) {
			leafTask(in).Items[1].Content[0].Name = "fx_upsert"
			e := in.Ledger[0]
			e.N, e.Start = 3, at(1.5)
			in.Ledger = append(in.Ledger, e)
		}},
		{name: "an idempotent call ran again after its process was killed", base: clean, mutate: func(in *Input) {
			leafTask(in).Items[1].Content[0].Name = "fx_upsert"
			e := in.Ledger[0]
			e.N, e.Start = 3, at(20)
			in.Ledger = append(in.Ledger, e)
			in.Faults = []Fault{{Kind: FaultKillAfter, Proc: ProcA, Start: at(1.15), End: at(2)}}
		}},
		{name: "one tag ran under two calls", base: clean, want: []int{1, 4}, mutate: func(in *Input) {
			in.Ledger = append(in.Ledger, Execution{N: 3, Key: rLeaf + "#c7", RequestID: rLeaf, ToolCallID: "c7", Tool: ToolEffect, Process: ProcA, Tag: "t1", Value: "a", Start: at(2)})
		}},
		{name: "ran after its rejection", base: clean, want: []int{2, 4}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Decisions = []Decision{approve(1, User, at(1.0), "reject", "c1")}
			leafTask(in).Items[2].Content[0] = result("c1", "error", "rejected by tort")
			in.Ops[1].Body, in.Ops[1].Decides[0].Action = `{"action":"reject","round":1}`, "reject"
		}},
		{name: "ran though its round expired", base: clean, want: []int{2, 5}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Decisions = []Decision{approve(1, ApproverExpiry, at(1.0), "reject", "c1")}
		}},
		{name: "ran before its decision", base: clean, want: []int{2}, mutate: func(in *Input) {
			in.Ledger[0].Start = at(0.95)
		}},
		{name: "ran with no approval sent", base: clean, want: []int{2}, mutate: func(in *Input) {
			in.Ops[1].Decides = nil
		}},
		{name: "ran with only an approval answered 400", base: clean, want: []int{2}, mutate: func(in *Input) {
			// The body approving it was refused (it said reject as well):
			// a refused body approves nothing.
			in.Ops[1].Status, in.Ops[1].Resp = 400, `{"error":{"code":"invalid_decisions","message":"…"}}`
		}},
		{name: "a refused body answered 400 and changed nothing", base: clean, mutate: func(in *Input) {
			in.Ops = append(in.Ops, refusedOp(3, 400, "1 decisions: x", "1 decisions: x"))
		}},
		{name: "a contradictory body was answered 200", base: clean, want: []int{5}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, refusedOp(3, 200, "", ""))
		}},
		{name: "a body answered 400 recorded a decision", base: clean, want: []int{5}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, refusedOp(3, 400, "0 decisions: ", "1 decisions: …b001 r1 tort approve: c1=approve"))
		}},
		{name: "a delete answered 204 while the task was paused", base: clean, want: []int{5}, mutate: func(in *Input) {
			in.Tasks, in.Deliveries = nil, in.Deliveries[:1]
			in.Ops = append(in.Ops, deleteOp(3, `{"code":200,"status":"Paused","requests":[{"id":"`+rLeaf+`","status":"Paused"}],"pending_expiries":["2026-01-02T04:00:00Z"]}`))
		}},
		{name: "a delete after a read its request's end made stale", base: clean, mutate: func(in *Input) {
			// The webhook of the end tells it: the read was before it.
			in.Tasks = nil
			in.Ops = append(in.Ops, deleteOp(3, `{"code":200,"status":"Paused","requests":[{"id":"`+rLeaf+`","status":"Paused"}],"pending_expiries":["2026-01-02T04:00:00Z"]}`))
		}},
		{name: "a delete after a read whose request had ended", base: clean, mutate: func(in *Input) {
			// GET task read META (Paused), then the request's record.
			in.Tasks = nil
			in.Ops = append(in.Ops, deleteOp(3, `{"code":200,"status":"Paused","requests":[{"id":"`+rLeaf+`","status":"Completed"}],"pending_expiries":["2026-01-02T04:00:00Z"]}`))
		}},
		{name: "a deleted task its caller made again", base: clean, mutate: func(in *Input) {
			// Its next call of the sub-agent: only requests after the delete.
			leafTask(in).Requests[0].CreatedAt = at(2.5)
			in.Ops = append(in.Ops, deleteOp(3, `{"code":200,"status":"Completed","requests":[{"id":"`+rLeaf+`","status":"Completed"}]}`))
		}},
		{name: "a deleted task still in the final state", base: clean, want: []int{5}, mutate: func(in *Input) {
			leafTask(in).Requests[0].CreatedAt = at(0)
			in.Ops = append(in.Ops, deleteOp(3, `{"code":200,"status":"Completed","requests":[{"id":"`+rLeaf+`","status":"Completed"}]}`))
		}},
		{name: "a refused body while a leaf's decision is copied at its level", base: chain, mutate: func(in *Input) {
			// The caller's continuation records its copy of the leaf's
			// decision, taken at the leaf's own URL, between the reads.
			in.Ops = append(in.Ops, Op{ID: 9, Kind: OpResume, Proc: ProcA, Method: "POST",
				Path: "/agents/rmid/tasks/" + tTop + "/requests/" + rTop + "/resume", Body: `{"action":"bogus"}`, Start: at(2), End: at(2.1),
				Status: 400, Resp: `{"error":{"code":"invalid_decisions","message":"…"}}`, Note: "root refused: bad-action", Refuse: true,
				Before: "0 decisions: ", After: "1 decisions: …" + rTop[len(rTop)-8:] + " r1 tort approve: c9=approve"})
			in.Ops[1].Path = "/agents/leaf/tasks/" + tRem + "/requests/" + rRem + "/resume"
		}},
		{name: "a caller says its agent call did not run, though the child ran", base: chain, want: []int{4}, mutate: func(in *Input) {
			// A cancel of the caller that met the child's run (§10 Cancel).
			in.Tasks[0].Items[2].Content[0] = result("k1", "error", "not run: the request was canceled by tort")
		}},
		{name: "a caller's chain expiry says its agent call expired, though the child ran", base: chain, want: []int{4}, mutate: func(in *Input) {
			// Seed 124578079: a decision at the leaf's own URL claimed it
			// while the chain's expiry closed the caller's call (§17 inv. 4).
			in.Tasks[0].Items[2].Content[0] = result("k1", "error", "approval expired at 2026-01-02T03:04:06Z")
		}},
		{name: "a caller's expiry text for a child that itself expired after running a round", base: chain, mutate: func(in *Input) {
			// The child's own end is the expiry: its earlier round's runs
			// do not make the caller's copy of it a lie.
			in.Tasks[0].Items[2].Content[0] = result("k1", "error", "approval expired at 2026-01-02T03:04:06Z")
			in.Tasks[1].Requests[0].Status, in.Tasks[1].Status = "Failed", "Failed"
			in.Tasks[1].Requests[0].Error = &ErrorView{Code: "approval_expired", Message: "approval expired at 2026-01-02T03:04:06Z"}
			in.Deliveries[3].Type = "request.failed"
		}},
		{name: "a caller's part refused by the remote leaf's earlier decision", base: chain, mutate: func(in *Input) {
			remoteRejected(in, at(0.5))
		}},
		{name: "a caller's part refused by a remote decision taken while it was sent", base: chain, mutate: func(in *Input) {
			remoteRejected(in, at(1.2))
		}},
		{name: "a caller's decision answered 200, the remote leaf recorded another after it", base: chain, want: []int{5}, mutate: func(in *Input) {
			remoteRejected(in, at(1.7))
		}},
		{name: "clean client tool", base: picked, mutate: func(*Input) {}},
		{name: "a client tool's result reached the model other than sent", base: picked, want: []int{2}, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[2].Content[0].JSON = json.RawMessage(`{"pick":"t3-2"}`)
		}},
		{name: "a client tool's result is in the history twice", base: picked, want: []int{1}, mutate: func(in *Input) {
			lt := leafTask(in)
			lt.Items = append(lt.Items, Item{Seq: 4, RequestID: rLeaf, Role: "tool", Content: []Block{lt.Items[2].Content[2]}})
		}},
		{name: "a whole replay", base: clean, mutate: func(in *Input) {
			in.Ops = append(in.Ops, replayOp(3, ""))
		}},
		{name: "a replay cut short", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, replayOp(3, "the replay after 12: ended with thinking (id 3440), not request_complete"))
		}},
		{name: "ran with another input than the edit approved", base: clean, want: []int{2}, mutate: func(in *Input) {
			d := &leafTask(in).Requests[0].Decisions[0]
			d.Action, d.Calls[0].Action, d.Calls[0].Input = "edit", "edit", json.RawMessage(`{"tag":"t1","v":"edited"}`)
			in.Ops[1].Decides[0].Action = "edit"
		}},
		{name: "a rejection answered 200, yet the call ran", base: clean, want: []int{2, 5}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpResume, Proc: ProcA, Path: in.Ops[1].Path, Body: `{"action":"reject","round":1}`,
				Start: at(0.9), End: at(1.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0),
				Decides: []CallDecision{{RequestID: rLeaf, ToolCallID: "c1", Action: "reject"}}})
		}},
		{name: "ran after a cancel answered 200 Canceled", base: clean, want: []int{3, 5, 7}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpCancel, Proc: ProcA, Path: "/agents/leaf/tasks/" + tLeaf + "/cancel",
				Start: at(0.95), End: at(1.05), Status: 200, Resp: rr(rLeaf, tLeaf, "Canceled", 0)})
		}},
		{name: "ran after a cancel, by a holder frozen past its lease", base: clean, want: []int{5, 7}, apart: 2, mutate: func(in *Input) {
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpCancel, Proc: ProcA, Path: "/agents/leaf/tasks/" + tLeaf + "/cancel",
				Start: at(0.95), End: at(1.05), Status: 200, Resp: rr(rLeaf, tLeaf, "Canceled", 0)})
			in.Faults = []Fault{{Kind: FaultStallCont, Proc: ProcA, Start: at(0.5), End: at(1.0)}}
		}},
		{name: "a remote leaf ran after its caller's cancel answered", base: chain, want: []int{3, 5, 7}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpCancel, Proc: ProcA, Path: "/agents/rmid/tasks/" + tTop + "/cancel",
				Start: at(0.95), End: at(1.05), Status: 200, Resp: rr(rTop, tTop, "Canceled", 0)})
		}},
		{name: "the history says not run, but it ran", base: clean, want: []int{4}, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[0] = result("c1", "error", "not run: the request was lost (its lease expired)")
		}},
		{name: "outcome_unknown for a call that ran is the truth", base: clean, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[0] = result("c1", "error", "outcome_unknown: the request was interrupted while this call ran")
		}},
		{name: "a success result no run produced", base: clean, want: []int{4}, mutate: func(in *Input) {
			leafTask(in).Items[2].Content[1] = ran("c2", 1, "peek", "t2")
		}},
		{name: "a call ran that no history shows", base: clean, want: []int{4}, mutate: func(in *Input) {
			in.Ledger = append(in.Ledger, Execution{N: 3, Key: "00000000-0000-7000-8000-0000000000ff#c5", RequestID: "00000000-0000-7000-8000-0000000000ff", ToolCallID: "c5", Tool: ToolPeek, Process: ProcA, Tag: "t5", Start: at(2)})
		}},
		{name: "a call ran, its request ended without its result", base: clean, want: []int{4}, mutate: func(in *Input) {
			leafTask(in).Items = leafTask(in).Items[:2]
		}},
		{name: "answers to the same decision disagree", base: clean, want: []int{5, 7}, mutate: func(in *Input) {
			dup := in.Ops[1]
			dup.ID, dup.Resp = 3, rr(rLeaf, tLeaf, "Paused", 2)
			in.Ops = append(in.Ops, dup)
		}},
		{name: "the same decision answered decision_conflict", base: clean, want: []int{5}, mutate: func(in *Input) {
			dup := in.Ops[1]
			dup.ID, dup.Status, dup.Resp = 3, 409, `{"error":{"code":"decision_conflict","message":"x"}}`
			in.Ops = append(in.Ops, dup)
		}},
		{name: "GET task disagrees with an answer", base: clean, want: []int{5, 7}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Status, leafTask(in).Requests[0].Error = "Failed", &ErrorView{Code: "lease_expired"}
			in.Deliveries[1].Type = "request.failed"
		}},
		{name: "still Running", base: clean, want: []int{5, 6}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Status = "Running"
		}},
		{name: "Paused with nothing to decide", base: clean, want: []int{5, 6, 7}, mutate: func(in *Input) {
			leafTask(in).Requests[0].Status, leafTask(in).Round = "Paused", 2
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_9", "request.paused", rLeaf, 2, 1.45))
		}},
		{name: "a leaf Paused below a finished root", base: chain, want: []int{6}, mutate: func(in *Input) {
			in.Tasks[1].Requests[0].Status, in.Tasks[1].Round = "Paused", 1
			in.Tasks[1].Pending = []PendingView{{ToolCallID: "c9", Round: 1}}
		}},
		{name: "a caller waits on a leaf that ended", base: chain, want: []int{5, 6, 7}, mutate: func(in *Input) {
			in.Tasks[0].Requests[0].Status, in.Tasks[0].Round = "Paused", 2
			in.Tasks[0].WaitingOn = []WaitingOn{{Agent: "leaf", TaskID: tRem, RequestID: rRem}}
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_9", "request.paused", rTop, 2, 1.65))
		}},
		{name: "a created request no task shows", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpInvoke, Proc: ProcA, Path: "/agents/leaf/invoke", Start: at(3), End: at(3.5), Status: 200,
				Resp: rr("00000000-0000-7000-8000-0000000000ee", tLeaf, "Paused", 1)})
		}},
		{name: "a lost webhook", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries = in.Deliveries[:1]
		}},
		{name: "a webhook refused every time is lost", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries[1].Code = 500
		}},
		{name: "webhooks out of commit order", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries[1].Start, in.Deliveries[1].End = at(0.55), at(0.56)
		}},
		{name: "a delivery overlapping the previous one's", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries[0].End = at(1.45)
		}},
		{name: "a webhook whose signature does not verify", base: clean, want: []int{7}, mutate: func(in *Input) {
			bad := in.Deliveries[1]
			bad.Verified, bad.Problem, bad.Code = false, "signature: no match", 401
			in.Deliveries = append(in.Deliveries, bad)
		}},
		{name: "one commit notified under two ids", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_3", "request.completed", rLeaf, 0, 1.5))
		}},
		{name: "a redelivery of an accepted id is counted, not a violation", base: clean, mutate: func(in *Input) {
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_2", "request.completed", rLeaf, 0, 1.5))
		}},
		{name: "two outcomes of one request", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_3", "request.canceled", rLeaf, 0, 1.5))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.base()
			tt.mutate(&in)
			res := checkWant(t, in, tt.want)
			if len(res.Apart) != tt.apart {
				t.Errorf("%d reported apart, want %d: %+v", len(res.Apart), tt.apart, res.Apart)
			}
		})
	}
}

func TestCheckRequestLostIsNoOutcome(t *testing.T) {
	in := clean()
	lost := in.Ops[1]
	lost.ID, lost.Resp = 3, `{"task_id":"`+tLeaf+`","request_id":"`+rLeaf+`","status":"Failed","error":{"code":"request_lost","message":"x"}}`
	in.Ops = append(in.Ops, lost)
	if res := Check(in); len(res.Violations) != 0 {
		t.Errorf("a request_lost answer was taken for an outcome: %+v", res.Violations)
	}
}

// copied is clean with a local caller (rmid's rTop on A) above the leaf:
// the leaf was approved at its own URL and the caller, continued, holds
// its copy of that decision (docs/api.md, Agents as tools).
func copied() Input {
	in := clean()
	lt := leafTask(&in)
	lt.ParentTaskID = tTop
	lt.Requests[0].Parent = &ParentRef{Agent: "rmid", TaskID: tTop, RequestID: rTop, ToolCallID: "k1"}
	top := &Task{Proc: ProcA, TaskID: tTop, Agent: "rmid", Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rTop, Role: "user", Content: []Block{{Type: "text", Text: "/call leaf …"}}},
			{Seq: 2, RequestID: rTop, Role: "assistant", Content: []Block{useAgent("k1", "leaf", "/call fx_effect …")}},
			{Seq: 3, RequestID: rTop, Role: "tool", Content: []Block{result("k1", "success", "results: fx_effect success")}},
		},
		Requests: []Request{{RequestID: rTop, Kind: "invoke", Status: "Completed",
			Decisions: []Decision{approve(1, User, at(1.0), "approve", "c1")}}},
	}
	in.Tasks = append(in.Tasks, top)
	in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_5", "request.paused", rTop, 1, 0.7), hook(ProcA, "msg_6", "request.completed", rTop, 0, 1.6))
	return in
}

// pausedChain is chain paused: the caller on A waits on its remote leaf's
// round 1, which the caller shows (its pending_approvals name the leaf
// and its round).
func pausedChain() Input {
	in := chain()
	top, rem := in.Tasks[0], in.Tasks[1]
	top.Status, top.Round, top.Items = "Paused", 1, top.Items[:2]
	top.Requests[0].Status, top.Requests[0].Decisions = "Paused", nil
	top.Pending = []PendingView{{ToolCallID: "c9", Name: "fx_effect", Round: 1, Agent: "leaf", TaskID: tRem, RequestID: rRem}}
	top.WaitingOn = []WaitingOn{{Agent: "leaf", TaskID: tRem, RequestID: rRem}}
	rem.Status, rem.Round, rem.Items = "Paused", 1, rem.Items[:2]
	rem.Requests[0].Status, rem.Requests[0].Decisions = "Paused", nil
	rem.Pending = []PendingView{{ToolCallID: "c9", Name: "fx_effect", Round: 1}}
	in.Ledger, in.Ops = nil, in.Ops[:1]
	in.Deliveries = []Delivery{hook(ProcA, "msg_1", "request.paused", rTop, 1, 0.6), hook(ProcB, "msg_3", "request.paused", rRem, 1, 0.6)}
	return in
}

// leftRound makes pausedChain's leaf leave the round its caller shows:
// rejected at its own URL, it paused again in round 2 on another call.
func leftRound(in *Input) {
	rem := in.Tasks[1]
	rem.Round = 2
	rem.Items = append(rem.Items,
		Item{Seq: 3, RequestID: rRem, Role: "tool", Content: []Block{result("c9", "error", "rejected by tort")}},
		Item{Seq: 4, RequestID: rRem, Role: "assistant", Content: []Block{use("c10", "fx_effect", "t10", "b")}})
	rem.Requests[0].Decisions = []Decision{approve(1, User, at(1.0), "reject", "c9")}
	rem.Pending = []PendingView{{ToolCallID: "c10", Name: "fx_effect", Round: 2}}
	in.Ops = append(in.Ops, Op{ID: 2, Kind: OpResume, Proc: ProcB, Path: "/agents/leaf/tasks/" + tRem + "/requests/" + rRem + "/resume",
		Body: `{"action":"reject","round":1}`, Start: at(0.9), End: at(1.2), Status: 200, Resp: rr(rRem, tRem, "Paused", 2),
		Decides: []CallDecision{{RequestID: rRem, ToolCallID: "c9", Action: "reject"}}})
	in.Deliveries = append(in.Deliveries, hook(ProcB, "msg_4", "request.paused", rRem, 2, 1.3))
}

func TestCheckAcrossCopies(t *testing.T) {
	tests := []struct {
		name   string
		base   func() Input
		mutate func(in *Input)
		want   []int
	}{
		{name: "a caller's copy agrees with its leaf", base: copied, mutate: func(*Input) {}},
		{name: "a caller's copy says reject, its leaf approved", base: copied, want: []int{5}, mutate: func(in *Input) {
			in.Tasks[1].Requests[0].Decisions = []Decision{approve(1, User, at(1.0), "reject", "c1")}
		}},
		{name: "a caller's copy has another edit than its leaf's", base: copied, want: []int{5}, mutate: func(in *Input) {
			d := &leafTask(in).Requests[0].Decisions[0]
			d.Action, d.Calls[0].Action, d.Calls[0].Input = "edit", "edit", json.RawMessage(`{"tag":"t1","v":"a"}`)
			in.Ops[1].Decides[0].Action = "edit"
			c := &in.Tasks[1].Requests[0].Decisions[0]
			c.Action, c.Calls[0].Action, c.Calls[0].Input = "edit", "edit", json.RawMessage(`{"tag":"t1","v":"z"}`)
		}},
		{name: "a caller's copy holds another answer's hash", base: copied, want: []int{5}, mutate: func(in *Input) {
			q, _ := json.Marshal(map[string]any{"question": "t3?", "choices": []string{"yes-t3", "no-t3"}})
			lt := leafTask(in)
			lt.Items[1].Content = append(lt.Items[1].Content, Block{Type: "tool_use", ID: "c3", Name: AskTool, Input: q})
			lt.Items[2].Content = append(lt.Items[2].Content, result("c3", "success", "yes-t3"))
			lt.Requests[0].Decisions[0].Calls = append(lt.Requests[0].Decisions[0].Calls,
				DecisionCall{ToolCallID: "c3", Action: "answer", Result: json.RawMessage(`"yes-t3"`), ResultHash: "h-yes"})
			in.Ops[1].Decides = append(in.Ops[1].Decides, CallDecision{RequestID: rLeaf, ToolCallID: "c3", Action: "answer", V: "yes-t3"})
			in.Tasks[1].Requests[0].Decisions[0].Calls = append(in.Tasks[1].Requests[0].Decisions[0].Calls,
				DecisionCall{ToolCallID: "c3", Action: "answer", ResultHash: "h-no"})
		}},
		{name: "a caller's copy of a decision its local leaf never took", base: copied, want: []int{5}, mutate: func(in *Input) {
			in.Tasks[1].Requests[0].Decisions[0].Calls = append(in.Tasks[1].Requests[0].Decisions[0].Calls, DecisionCall{ToolCallID: "c2", Action: "approve"})
		}},
		{name: "a caller's copy refused by a remote decision taken there first", base: chain, mutate: func(in *Input) {
			remoteRejected(in, at(0.5))
		}},
		{name: "a remote leaf recorded another decision that no one sent there", base: chain, want: []int{5}, mutate: func(in *Input) {
			// answersAgree spares the caller's 200 (the leaf's decision came
			// first); but no client decided at the leaf's system.
			rem := in.Tasks[1]
			rem.Requests[0].Decisions = []Decision{approve(1, User, at(0.5), "reject", "c9")}
			rem.Items[2].Content[0] = result("c9", "error", "rejected by tort")
			in.Ledger = nil
		}},
		{name: "a Paused caller shows its leaf's round", base: pausedChain, mutate: func(*Input) {}},
		{name: "a Paused caller shows a round its leaf has left", base: pausedChain, want: []int{6}, mutate: leftRound},
		{name: "a Paused caller shows a round its leaf has left, caught up", base: pausedChain, mutate: func(in *Input) {
			leftRound(in)
			in.Tasks[0].Pending = []PendingView{{ToolCallID: "c10", Name: "fx_effect", Round: 2, Agent: "leaf", TaskID: tRem, RequestID: rRem}}
			in.Tasks[0].Round = 2
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_5", "request.paused", rTop, 2, 1.4))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.base()
			tt.mutate(&in)
			checkWant(t, in, tt.want)
		})
	}
}

// killedMidResume is clean with the approval's process killed while it
// ran (0.7 to 1.0): the approval got no answer, and the request was taken
// over and completed; observations show it Running at runningAt and
// Completed a second later, its tools run between.
func killedMidResume(runningAt float64) Input {
	in := clean()
	in.Ops[1].Start, in.Ops[1].End, in.Ops[1].Status, in.Ops[1].Resp, in.Ops[1].Err = at(0.6), at(0.7), 0, "", "EOF"
	in.Faults = []Fault{{Kind: FaultKill, Proc: ProcA, Start: at(0.7), End: at(1.0)}}
	in.Observations = []Observation{
		{At: at(runningAt), RequestID: rLeaf, Status: "Running"},
		{At: at(runningAt + 1), RequestID: rLeaf, Status: "Completed"},
	}
	in.Deliveries[1] = hook(ProcA, "msg_2", "request.completed", rLeaf, 0, runningAt+1)
	for i := range in.Ledger {
		in.Ledger[i].Start, in.Ledger[i].End = at(runningAt+0.2), at(runningAt+0.3)
	}
	return in
}

// expired is clean with its round closed by the reaper's expiry at
// appliedAt: the round expired at 3 s (the invoke's answer showed it).
func expired(appliedAt float64) Input {
	in := clean()
	lt := leafTask(&in)
	lt.Status = "Failed"
	lt.Requests[0].Status, lt.Requests[0].Error = "Failed", &ErrorView{Code: "approval_expired"}
	lt.Requests[0].Decisions = []Decision{approve(1, ApproverExpiry, at(appliedAt), "reject", "c1")}
	lt.Items[2].Content[0] = result("c1", "error", "approval expired at …")
	in.Ledger = in.Ledger[1:]
	in.Ops = in.Ops[:1]
	in.Ops[0].Resp = fmt.Sprintf(`{"task_id":%q,"request_id":%q,"status":"Paused","round":1,"pending_approvals":[{"tool_call_id":"c1","name":"fx_effect","round":1,"expires_at":%q}]}`,
		tLeaf, rLeaf, at(3).Format(time.RFC3339Nano))
	in.Deliveries[1] = hook(ProcA, "msg_2", "request.failed", rLeaf, 0, appliedAt+0.1)
	return in
}

func TestCheckRecoveryBound(t *testing.T) {
	late := 1.0 + (RecoveryBound + RecoveryMargin).Seconds() + 5
	tests := []struct {
		name string
		in   func() Input
		want []int
	}{
		{name: "a dead leg taken over within the bound", in: func() Input { return killedMidResume(5) }},
		{name: "a dead leg still Running past the bound", want: []int{6}, in: func() Input { return killedMidResume(late) }},
		{name: "a dead leg past the bound, a request_lost answer between is no rest", want: []int{6}, in: func() Input {
			in := killedMidResume(late)
			lost := `{"task_id":"` + tLeaf + `","request_id":"` + rLeaf + `","status":"Failed","error":{"code":"request_lost","message":"x"}}`
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpGet, Proc: ProcA, Method: "GET", Path: "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/events",
				Start: at(2), End: at(3), Status: 503, Resp: lost})
			in.Observations = append([]Observation{{At: at(3), RequestID: rLeaf, Status: "Failed"}}, in.Observations...)
			return in
		}},
		{name: "a new request's leg dead past the bound, its invoke unanswered", want: []int{6}, in: func() Input {
			// The invoke got no answer: the request is found by its message.
			in := clean()
			lt := leafTask(&in)
			lt.Items[1].Content = lt.Items[1].Content[1:]
			lt.Items[2].Content = lt.Items[2].Content[1:]
			lt.Requests[0].Decisions = nil
			in.Ledger = in.Ledger[1:]
			in.Ledger[0].Start, in.Ledger[0].End = at(late+0.2), at(late+0.3)
			in.Ops = []Op{{ID: 1, Kind: OpInvoke, Proc: ProcA, Method: "POST", Path: "/agents/leaf/invoke", Body: `{"items":[{"content":"/call fx_effect …"}]}`,
				Start: at(0.6), End: at(0.7), Err: "EOF"}}
			in.Faults = []Fault{{Kind: FaultKill, Proc: ProcA, Start: at(0.7), End: at(1.0)}}
			in.Observations = []Observation{{At: at(late), RequestID: rLeaf, Status: "Running"}, {At: at(late + 1), RequestID: rLeaf, Status: "Completed"}}
			in.Deliveries = []Delivery{hook(ProcA, "msg_2", "request.completed", rLeaf, 0, late+1)}
			return in
		}},
		{name: "a dead leg taken over within the bound, its tool run late", in: func() Input {
			in := killedMidResume(late)
			in.Ledger[0].Start, in.Ledger[0].End = at(12), at(12.1)
			return in
		}},
		{name: "a dead leg past the bound, a later fault restarted the clock", in: func() Input {
			in := killedMidResume(late)
			in.Faults = append(in.Faults, Fault{Kind: FaultKill, Proc: ProcB, Start: at(30), End: at(31)})
			return in
		}},
		{name: "a dead leg past the bound, a client moved it meanwhile", in: func() Input {
			in := killedMidResume(late)
			in.Ops = append(in.Ops, Op{ID: 3, Kind: OpResume, Proc: ProcA, Method: "POST", Path: in.Ops[1].Path, Body: in.Ops[1].Body,
				Start: at(late - 2), End: at(late + 0.5), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0), Decides: in.Ops[1].Decides})
			return in
		}},
		{name: "an expiry applied within the sweep", in: func() Input { return expired(6) }},
		{name: "an expiry applied long after it was due", want: []int{6}, in: func() Input { return expired(3 + (DefaultSweep + RecoveryMargin).Seconds() + 5) }},
		{name: "an expiry applied late, its process down meanwhile", in: func() Input {
			in := expired(3 + (DefaultSweep + RecoveryMargin).Seconds() + 5)
			in.Faults = []Fault{{Kind: FaultStallKill, Proc: ProcA, Start: at(4), End: at(24)}}
			return in
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkWant(t, tt.in(), tt.want)
		})
	}
}
