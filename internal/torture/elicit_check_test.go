package torture

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Hand-made histories of the form tool's elicitation rounds: a clean one,
// and the same with one thing wrong at a time.

const (
	formAccept1 = `{"action":"accept","content":{"pick":"p-t4-1","round":1}}`
	formAccept2 = `{"action":"accept"}`
)

// elicited is a leaf on A whose form call (tag t4, a form then a URL)
// asks round 1 (its request's round 1), is answered, asks round 2 (the
// request's round 2), is answered, runs and completes; the server got
// each answer once.
func elicited() Input {
	path := "/agents/leaf/tasks/" + tLeaf + "/requests/" + rLeaf + "/resume"
	key := rLeaf + "#c4"
	text := Marker(1) + " form t4 r1=accept" + `{"pick":"p-t4-1","round":1}` + " r2=accept"
	d1 := approve(1, User, at(1.0), "answer", "c4")
	d1.Calls[0].Result = json.RawMessage(formAccept1)
	d2 := approve(2, User, at(2.0), "answer", "c4")
	d2.Calls[0].Result = json.RawMessage(formAccept2)
	leaf := &Task{Proc: ProcA, TaskID: tLeaf, Agent: "leaf", Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rLeaf, Role: "user", Content: []Block{{Type: "text", Text: "/call fq_form …"}}},
			{Seq: 2, RequestID: rLeaf, Role: "assistant", Content: []Block{use("c4", FormTool, "t4", "a")}},
			{Seq: 3, RequestID: rLeaf, Role: "tool", Content: []Block{result("c4", "success", text)}},
		},
		Requests: []Request{{RequestID: rLeaf, Kind: "invoke", Status: "Completed", Decisions: []Decision{d1, d2}}},
	}
	answer := func(n, round int, action, content string, when float64) Answer {
		return Answer{N: n, Key: key, RequestID: rLeaf, ToolCallID: "c4", Process: ProcA, Tag: "t4", Round: round,
			Input: fmt.Sprintf("r%d", round), Action: action, Content: content, At: at(when)}
	}
	return Input{
		Tasks:  []*Task{leaf},
		Ledger: []Execution{{N: 1, Key: key, RequestID: rLeaf, ToolCallID: "c4", Tool: ToolForm, Process: ProcA, Tag: "t4", Value: "a", Start: at(2.1), End: at(2.2)}},
		Answers: []Answer{
			answer(1, 1, "accept", `{"pick":"p-t4-1","round":1}`, 1.1),
			answer(2, 2, "accept", "", 2.1),
		},
		Ops: []Op{
			{ID: 1, Kind: OpInvoke, Proc: ProcA, Method: "POST", Path: "/agents/leaf/invoke", Start: at(0), End: at(0.5), Status: 200, Resp: rr(rLeaf, tLeaf, "Paused", 1)},
			{ID: 2, Kind: OpResume, Proc: ProcA, Method: "POST", Path: path, Body: `{"round":1,"decisions":[{"tool_call_id":"c4","action":"answer","result":` + formAccept1 + `}]}`,
				Start: at(0.9), End: at(1.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Paused", 2),
				Decides: []CallDecision{{RequestID: rLeaf, ToolCallID: "c4", Action: "answer", V: formAccept1, ElicitRound: 1}}},
			{ID: 3, Kind: OpResume, Proc: ProcA, Method: "POST", Path: path, Body: `{"round":2,"decisions":[{"tool_call_id":"c4","action":"answer","result":` + formAccept2 + `}]}`,
				Start: at(1.9), End: at(2.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0),
				Decides: []CallDecision{{RequestID: rLeaf, ToolCallID: "c4", Action: "answer", V: formAccept2, ElicitRound: 2}}},
		},
		Deliveries: []Delivery{
			hook(ProcA, "msg_1", "request.paused", rLeaf, 1, 0.6),
			hook(ProcA, "msg_2", "request.paused", rLeaf, 2, 1.4),
			hook(ProcA, "msg_3", "request.completed", rLeaf, 0, 2.4),
		},
	}
}

// staleOp is round 1's answer sent again once the call asked round 2: a
// past round's decision, answered with that round's leg.
func staleOp(in *Input) Op {
	op := in.Ops[1]
	op.ID, op.Start, op.End, op.Note = 4, at(1.5), at(1.6), "leaf stale elicitation"
	return op
}

func TestCheckElicit(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(in *Input)
		want   []int
	}{
		{name: "clean", mutate: func(*Input) {}},
		{name: "a stale body sent again, answered with its round's leg", mutate: func(in *Input) {
			in.Ops = append(in.Ops, staleOp(in))
		}},
		{name: "round 1's answer reached the server twice", want: []int{1}, mutate: func(in *Input) {
			dup := in.Answers[0]
			dup.N, dup.At = 3, at(1.2)
			in.Answers = append(in.Answers, dup)
		}},
		{name: "a stale body reached the server as the next round's answer", want: []int{2, 5}, mutate: func(in *Input) {
			// Round 1's body, sent again after the call asked round 2,
			// reached the server with round 2's state.
			in.Ops = append(in.Ops, staleOp(in))
			in.Answers[1].Action, in.Answers[1].Content = "accept", `{"pick":"p-t4-1","round":1}`
			in.Tasks[0].Items[2].Content[0] = result("c4", "success", Marker(1)+` form t4 r1=accept{"pick":"p-t4-1","round":1} r2=accept{"pick":"p-t4-1","round":1}`)
		}},
		{name: "a decline no client sent for that round reached the server", want: []int{2, 4, 5}, mutate: func(in *Input) {
			in.Answers[1].Action = "decline"
		}},
		{name: "the leaf recorded another answer than the server got", want: []int{5}, mutate: func(in *Input) {
			in.Tasks[0].Requests[0].Decisions[0].Calls[0].Result = json.RawMessage(`{"action":"accept","content":{"pick":"p-t4-9","round":1}}`)
		}},
		{name: "the call's result disagrees with the answers the server got", want: []int{4}, mutate: func(in *Input) {
			in.Tasks[0].Items[2].Content[0] = result("c4", "success", Marker(1)+" form t4 r1=decline")
		}},
		{name: "an answer came with another call's request state", want: []int{5}, mutate: func(in *Input) {
			in.Answers[1].Problem = "the request state of another call (x#c9)"
			in.Ledger = nil // the tool refused it: an error result, no run
			in.Tasks[0].Items[2].Content[0] = result("c4", "error", "form: the request state of another call (x#c9)")
		}},
		{name: "an answer answered 200, the leaf recorded another for its round", want: []int{5}, mutate: func(in *Input) {
			other := `{"action":"decline"}`
			in.Ops = append(in.Ops, Op{ID: 4, Kind: OpResume, Proc: ProcA, Method: "POST", Path: in.Ops[2].Path,
				Body:  `{"round":2,"decisions":[{"tool_call_id":"c4","action":"answer","result":` + other + `}]}`,
				Start: at(1.9), End: at(2.3), Status: 200, Resp: rr(rLeaf, tLeaf, "Completed", 0),
				Decides: []CallDecision{{RequestID: rLeaf, ToolCallID: "c4", Action: "answer", V: other, ElicitRound: 2}}})
		}},
		{name: "a body without its round on a call asked again answered 200", want: []int{5}, mutate: func(in *Input) {
			op := in.Ops[2]
			op.ID, op.Body, op.Refuse, op.Decides, op.Note = 4, strings.Replace(op.Body, `"round":2,`, "", 1), true, nil, "leaf refused: elicit-no-round"
			in.Ops = append(in.Ops, op)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := elicited()
			tt.mutate(&in)
			checkWant(t, in, tt.want)
		})
	}
}
