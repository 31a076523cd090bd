package torture

import (
	"encoding/json"
	"testing"
)

// Hand-made histories of waiters (task tokens, durable callbacks),
// webhook redeliveries and deletes: clean ones, and one breach each.

// waited is clean with its invoke sent directly (the Lambda API) with a
// task token, on_pause wait: the token gets a heartbeat at the pause and
// one SendTaskSuccess with the Completed RequestResult.
func waited(kind, onPause string) func() Input {
	return func() Input {
		in := clean()
		body := map[string]any{"agent": "leaf", "user_id": User, "items": []map[string]string{{"content": "/call fx_effect …"}}, kind: "w1"}
		if onPause != "" {
			body["on_pause"] = onPause
		}
		b, _ := json.Marshal(body)
		in.Ops[0].Method, in.Ops[0].Body = MethodLambda, string(b)
		in.Waiters = []WaiterCall{
			waiterCall(kind, "w1", WaiterHeartbeat, "", 0.6),
			waiterCall(kind, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 1.4),
		}
		return in
	}
}

func waiterCall(kind, id, op, result string, when float64) WaiterCall {
	return WaiterCall{Proc: ProcA, Kind: kind, ID: id, Op: op, Status: 200, At: at(when), Result: result}
}

// failure is a waiter's failure answer for a request of leaf.
func failure(kind, id, code string, when float64) WaiterCall {
	c := waiterCall(kind, id, WaiterFailure, "", when)
	c.Error = "Hitch." + code
	if kind == WaiterCallbackID {
		c.Result = `{"task_id":"` + tLeaf + `","request_id":"` + rLeaf + `","status":"Failed","error":{"code":"` + code + `"}}`
	}
	return c
}

// deleted is clean with the leaf task deleted once it ended: answered
// 204, the task read before (Completed) and after (404); the final state
// has no such task.
func deleted() Input {
	in := clean()
	before := snapshot(&Task{TaskID: tLeaf, Status: "Completed", Items: leafTask(&in).Items, Requests: leafTask(&in).Requests}, 200)
	in.Ops = append(in.Ops, Op{ID: 3, Kind: OpDelete, Proc: ProcA, Method: "DELETE", Path: "/agents/leaf/tasks/" + tLeaf,
		Start: at(2), End: at(2.1), Status: 204, Before: before, After: snapshot(nil, 404)})
	in.Tasks = nil
	return in
}

// childRun makes the invoke call a child (mid) whose leaf ran fx_peek
// with tag t9 under a request no task shows: a child deleted with its
// caller, or a run no history shows.
func childRun(in *Input) {
	in.Ops[0].Body = `{"items":[{"content":"/call leaf {\"message\":\"/call fx_peek {\\\"tag\\\":\\\"t9\\\",\\\"v\\\":\\\"x\\\"}\"}"}]}`
	in.Ledger = append(in.Ledger, Execution{N: 3, Key: "r-kid#k1", RequestID: "r-kid", ToolCallID: "k1", Tool: ToolPeek, Process: ProcA, Tag: "t9", Value: "x", Start: at(1.1), End: at(1.2)})
}

// refusedDelete is clean with a delete of the leaf task while it was
// Paused (between the invoke and the approval): 409 task_paused, the task
// read before and after it alike.
func refusedDelete() Input {
	in := clean()
	lt := *leafTask(&in)
	lt.Status, lt.Items = "Paused", lt.Items[:2]
	lt.Requests = []Request{{RequestID: rLeaf, Kind: "invoke", Status: "Paused"}}
	lt.Pending = []PendingView{{ToolCallID: "c1", Name: "fx_effect", Round: 1, ExpiresAt: at(3600)}}
	snap := snapshot(&lt, 200)
	in.Ops = append(in.Ops, Op{ID: 3, Kind: OpDelete, Proc: ProcA, Method: "DELETE", Path: "/agents/leaf/tasks/" + tLeaf,
		Start: at(0.7), End: at(0.75), Status: 409, Resp: `{"error":{"code":"task_paused","message":"…"}}`, Before: snap, After: snap})
	return in
}

func TestCheckWaitersAndDeletes(t *testing.T) {
	tests := []struct {
		name   string
		base   func() Input
		mutate func(in *Input)
		want   []int
	}{
		{name: "a task token answered once, at the end", base: waited(WaiterTaskToken, ""), mutate: func(*Input) {}},
		{name: "a callback answered once, at the end", base: waited(WaiterCallbackID, "wait"), mutate: func(*Input) {}},
		{name: "a task token answered twice", base: waited(WaiterTaskToken, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = append(in.Waiters, waiterCall(WaiterTaskToken, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 1.5))
		}},
		{name: "a callback answered again after its process died before recording the answer", base: waited(WaiterCallbackID, ""), mutate: func(in *Input) {
			in.Waiters = append(in.Waiters, waiterCall(WaiterCallbackID, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 2.5))
			in.Faults = append(in.Faults, Fault{Kind: "kill at a random moment", Proc: ProcA, Start: at(1.45), End: at(2.2)})
		}},
		{name: "a callback answered three times across faults", base: waited(WaiterCallbackID, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = append(in.Waiters, waiterCall(WaiterCallbackID, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 2.5),
				waiterCall(WaiterCallbackID, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 3.5))
			in.Faults = append(in.Faults, Fault{Kind: "kill at a random moment", Proc: ProcA, Start: at(1.45), End: at(2.2)},
				Fault{Kind: "kill at a random moment", Proc: ProcA, Start: at(2.6), End: at(3.2)})
		}},
		{name: "a callback answered with success and failure", base: waited(WaiterCallbackID, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = append(in.Waiters, failure(WaiterCallbackID, "w1", "internal", 1.5))
		}},
		{name: "a refused attempt, then the answer: once", base: waited(WaiterTaskToken, ""), mutate: func(in *Input) {
			first := waiterCall(WaiterTaskToken, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Completed", 0), 1.35)
			first.Status = 500
			in.Waiters = append(in.Waiters, first)
		}},
		{name: "the waiter of an ended request never answered", base: waited(WaiterTaskToken, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = in.Waiters[:1]
		}},
		{name: "the waiter's only answer was refused", base: waited(WaiterCallbackID, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters[1].Status = 500
		}},
		{name: "a task token failed for a request that completed", base: waited(WaiterTaskToken, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters[1] = failure(WaiterTaskToken, "w1", "internal", 1.4)
		}},
		{name: "a callback's answer names another request", base: waited(WaiterCallbackID, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters[1].Result = rr("00000000-0000-7000-8000-0000000000ee", tLeaf, "Completed", 0)
		}},
		{name: "on_pause return: answered Paused at the pause, not again", base: waited(WaiterTaskToken, "return"), mutate: func(in *Input) {
			in.Waiters = []WaiterCall{waiterCall(WaiterTaskToken, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Paused", 1), 0.6)}
		}},
		{name: "on_pause wait answered with a Paused result", base: waited(WaiterTaskToken, "wait"), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = []WaiterCall{waiterCall(WaiterTaskToken, "w1", WaiterSuccess, rr(rLeaf, tLeaf, "Paused", 1), 0.6)}
		}},
		{name: "on_pause return, the request Paused, never answered", base: waited(WaiterCallbackID, "return"), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = in.Waiters[:1]
			leafTask(in).Requests[0].Status, leafTask(in).Status = "Paused", "Paused"
			leafTask(in).Pending = []PendingView{{ToolCallID: "c1", Round: 1}}
			leafTask(in).Round = 1
			in.Ops, in.Ledger, in.Deliveries = in.Ops[:1], nil, in.Deliveries[:1]
			leafTask(in).Items = leafTask(in).Items[:2]
			leafTask(in).Requests[0].Decisions = nil
		}},
		{name: "an answer to a token no operation gave", base: waited(WaiterTaskToken, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters = append(in.Waiters, waiterCall(WaiterTaskToken, "w9", WaiterHeartbeat, "", 1.0))
		}},
		{name: "a webhook redelivered once after a 2xx", base: clean, mutate: func(in *Input) {
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_2", "request.completed", rLeaf, 0, 1.5))
		}},
		{name: "a webhook redelivered twice after a 2xx", base: clean, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries = append(in.Deliveries, hook(ProcA, "msg_2", "request.completed", rLeaf, 0, 1.5),
				hook(ProcA, "msg_2", "request.completed", rLeaf, 0, 1.6))
		}},
		{name: "a finished task deleted", base: deleted, mutate: func(*Input) {}},
		{name: "a child's tool run under a deleted caller", base: deleted, mutate: func(in *Input) { childRun(in) }},
		{name: "a child's tool run no history shows, nothing deleted", base: clean, want: []int{4}, mutate: func(in *Input) { childRun(in) }},
		{name: "a finished task deleted, with its token answered", base: func() Input {
			in := deleted()
			w := waited(WaiterTaskToken, "")()
			in.Ops[0], in.Waiters = w.Ops[0], w.Waiters
			return in
		}, mutate: func(*Input) {}},
		{name: "a deleted task's token never answered", base: func() Input {
			in := deleted()
			w := waited(WaiterTaskToken, "")()
			in.Ops[0], in.Waiters = w.Ops[0], w.Waiters[:1]
			return in
		}, want: []int{7}, mutate: func(*Input) {}},
		{name: "a deleted task's token answered task_not_found", base: func() Input {
			in := deleted()
			w := waited(WaiterTaskToken, "")()
			in.Ops[0], in.Waiters = w.Ops[0], append(w.Waiters[:1], failure(WaiterTaskToken, "w1", "task_not_found", 2.2))
			return in
		}, mutate: func(*Input) {}},
		{name: "a live task's token answered task_not_found", base: waited(WaiterTaskToken, ""), want: []int{7}, mutate: func(in *Input) {
			in.Waiters[1] = failure(WaiterTaskToken, "w1", "task_not_found", 1.4)
		}},
		{name: "a deleted task's end webhook lost", base: deleted, want: []int{7}, mutate: func(in *Input) {
			in.Deliveries = in.Deliveries[:1]
		}},
		{name: "a delete answered 204 left the task", base: deleted, want: []int{5}, mutate: func(in *Input) {
			in.Tasks = clean().Tasks
		}},
		{name: "a delete answered 204, the task still read after it", base: deleted, want: []int{5}, mutate: func(in *Input) {
			in.Ops[2].After = in.Ops[2].Before
		}},
		{name: "a paused task deleted", base: refusedDelete, want: []int{5}, mutate: func(in *Input) {
			in.Ops[2].Status, in.Ops[2].Resp, in.Ops[2].After = 204, "", snapshot(nil, 404)
			// A deleted task's request ends no more: no webhook tells an end.
			in.Tasks, in.Deliveries = nil, in.Deliveries[:1]
		}},
		{name: "a delete without an answer that landed", base: deleted, mutate: func(in *Input) {
			in.Ops[2].Status, in.Ops[2].After, in.Ops[2].Err = 0, "", "EOF"
		}},
		{name: "a delete without an answer that did not land", base: deleted, mutate: func(in *Input) {
			in.Ops[2].Status, in.Ops[2].After, in.Ops[2].Err = 0, "", "EOF"
			in.Tasks = clean().Tasks
		}},
		{name: "a caller's decision answered 200 Paused while its remote leaf's process was down", base: chain, mutate: func(in *Input) {
			// Seed 673102469: the caller's part for the remote leaf could
			// not be sent, and the caller paused again on that call alone.
			in.Tasks[1].Requests[0].Status, in.Tasks[1].Requests[0].Decisions = "Paused", nil
			in.Tasks[1].Items = in.Tasks[1].Items[:2]
			in.Tasks[1].Status, in.Tasks[1].Round = "Paused", 1
			in.Tasks[1].Pending = []PendingView{{ToolCallID: "c9", Name: "fx_effect", Round: 1, ExpiresAt: at(3600)}}
			in.Tasks[0].Requests[0].Status, in.Tasks[0].Status, in.Tasks[0].Round = "Paused", "Paused", 2
			in.Tasks[0].Items = in.Tasks[0].Items[:2]
			in.Tasks[0].WaitingOn = []WaitingOn{{Agent: "leaf", TaskID: tRem, RequestID: rRem}}
			in.Tasks[0].Requests[0].Decisions = nil
			in.Ledger = nil
			in.Ops[1].Resp = rr(rTop, tTop, "Paused", 2)
			in.Deliveries = []Delivery{hook(ProcA, "msg_1", "request.paused", rTop, 1, 0.6), hook(ProcA, "msg_2", "request.paused", rTop, 2, 1.6),
				hook(ProcB, "msg_3", "request.paused", rRem, 1, 0.6)}
			in.Faults = []Fault{{Kind: FaultKillBefore, Proc: ProcB, Start: at(0.8), End: at(2)}}
		}},
		{name: "a refused delete changed nothing", base: refusedDelete, mutate: func(*Input) {}},
		{name: "a refused delete took the history", base: refusedDelete, want: []int{5}, mutate: func(in *Input) {
			lt := *leafTask(in)
			lt.Status, lt.Items = "Paused", nil
			lt.Requests = []Request{{RequestID: rLeaf, Kind: "invoke", Status: "Paused"}}
			in.Ops[2].After = snapshot(&lt, 200)
		}},
		{name: "a refused delete took the task", base: refusedDelete, want: []int{5}, mutate: func(in *Input) {
			in.Ops[2].After = snapshot(nil, 404)
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
