package torture

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Waiters and deletes (docs/architecture.md, "The guarantees"): some
// invokes and resumes go through the invoke function's Lambda API (hitch
// serve --lambda-addr) carrying a Step Functions task token or a durable
// execution's callback id; each process answers them through the Step
// Functions and Lambda fakes the test runs (internal/sfnfake,
// internal/tools/fakelambda), which record every call. Some finished tasks
// are deleted, and some deletes are sent that must be refused (a task
// Paused, a child whose caller still waits on it).

// MethodLambda marks an op sent through the Lambda Invoke API: its Body is
// the direct payload.
const MethodLambda = "LAMBDA"

// OpDelete is a DELETE of a task; its Before and After are snapshots
// (snapshot) of the task read just before and just after it.
const OpDelete = "delete"

// Waiter kinds, as the direct payload names them.
const (
	WaiterTaskToken  = "task_token"
	WaiterCallbackID = "callback_id"
)

// A waiter call's operations.
const (
	WaiterSuccess   = "success"
	WaiterFailure   = "failure"
	WaiterHeartbeat = "heartbeat"
)

// WaiterCall is one call a process made to answer a waiter: SendTask* to
// the Step Functions fake, SendDurableExecutionCallback* to the Lambda
// fake.
type WaiterCall struct {
	Proc string `json:"proc"`
	Kind string `json:"kind"` // WaiterTaskToken or WaiterCallbackID
	ID   string `json:"id"`
	Op   string `json:"op"` // WaiterSuccess, WaiterFailure, WaiterHeartbeat
	// Status is the HTTP status the fake answered.
	Status int       `json:"status"`
	At     time.Time `json:"at"`
	// Result is the RequestResult sent: a success's, or a callback
	// failure's ErrorData.
	Result string `json:"result,omitempty"`
	// Error is a failure's Hitch.<code>.
	Error string `json:"error,omitempty"`
}

// Accepted is whether the fake answered 2xx.
func (w WaiterCall) Accepted() bool { return w.Status >= 200 && w.Status < 300 }

// directWaiter is the waiter a direct payload carries.
type directWaiter struct {
	Kind, ID, OnPause string
}

// waiterOf is the waiter of an op sent through the Lambda API, if any.
func waiterOf(op Op) (directWaiter, bool) {
	if op.Method != MethodLambda {
		return directWaiter{}, false
	}
	var p struct {
		TaskToken  *string `json:"task_token"`
		CallbackID *string `json:"callback_id"`
		OnPause    string  `json:"on_pause"`
	}
	if json.Unmarshal([]byte(op.Body), &p) != nil {
		return directWaiter{}, false
	}
	w := directWaiter{OnPause: p.OnPause}
	switch {
	case p.TaskToken != nil:
		w.Kind, w.ID = WaiterTaskToken, *p.TaskToken
	case p.CallbackID != nil:
		w.Kind, w.ID = WaiterCallbackID, *p.CallbackID
	default:
		return directWaiter{}, false
	}
	if w.OnPause == "" {
		w.OnPause = "wait"
	}
	return w, true
}

// taskSnapshot is a task as read just before or after a delete.
type taskSnapshot struct {
	// Code is the read's HTTP status: 200, or 404 once deleted.
	Code     int           `json:"code"`
	Status   string        `json:"status,omitempty"`
	Requests []snapshotReq `json:"requests,omitempty"`
	Items    int           `json:"items,omitempty"`
	Pending  []time.Time   `json:"pending_expiries,omitempty"`
}

type snapshotReq struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
}

// snapshot is a task's snapshot as JSON: t read with code (t nil when the
// read was not 200).
func snapshot(t *Task, code int) string {
	s := taskSnapshot{Code: code}
	if t != nil {
		s.Status, s.Items = t.Status, len(t.Items)
		for _, r := range t.Requests {
			sr := snapshotReq{ID: r.RequestID, Status: r.Status}
			if r.Error != nil {
				sr.Code = r.Error.Code
			}
			s.Requests = append(s.Requests, sr)
		}
		for _, p := range t.shown() {
			s.Pending = append(s.Pending, p.ExpiresAt)
		}
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func parseSnapshot(s string) (taskSnapshot, bool) {
	var ts taskSnapshot
	if s == "" || json.Unmarshal([]byte(s), &ts) != nil || ts.Code == 0 {
		return ts, false
	}
	return ts, true
}

// goneReq is a request of a task an accepted delete removed, as the read
// before the delete showed it ("" status for a request known only from
// the flow's operations: a child task deleted with its caller).
type goneReq struct {
	status, code string
	op           int
}

// findDeleted gathers the requests of tasks removed by an accepted
// delete (or one without an answer): those the read before it showed, and those the flow's
// operations on the same process named (the deleted task's local
// children go with it).
func (c *checker) findDeleted() {
	c.gone = map[string]goneReq{}
	c.goneTags = map[string]bool{}
	byFlow := map[int][]Op{}
	for _, op := range c.in.Ops {
		byFlow[op.Flow] = append(byFlow[op.Flow], op)
	}
	for _, op := range c.in.Ops {
		// A delete without an answer may have landed: its task's
		// requests are gone if the final state does not show them.
		if op.Kind != OpDelete || (op.Status != 0 && (op.Status < 200 || op.Status >= 300)) {
			continue
		}
		if before, ok := parseSnapshot(op.Before); ok {
			for _, r := range before.Requests {
				c.gone[r.ID] = goneReq{status: r.Status, code: r.Code, op: op.ID}
			}
		}
		for _, o := range byFlow[op.Flow] {
			if o.Proc != op.Proc {
				continue
			}
			for _, m := range tagInBody.FindAllStringSubmatch(o.Body, -1) {
				c.goneTags[m[1]] = true
			}
			for _, rid := range opRequests(o) {
				if _, ok := c.gone[rid]; !ok {
					c.gone[rid] = goneReq{op: op.ID}
				}
			}
		}
	}
}

// tagInBody finds the tags a flow's messages give their tool calls, at
// any depth of quoting ("tag":"t9", \"tag\":\"t9\", …).
var tagInBody = regexp.MustCompile(`tag\\*"\s*:\s*\\*"(t[0-9]+)\\*"`)

// goneByTag is whether a tool run or an answer of the tag, under a request
// the final state does not show, belongs to a flow an accepted delete
// emptied: a child task deleted with its caller is named by no operation,
// only by the tags of the message that made it.
func (c *checker) goneByTag(rid, tag string) bool {
	return c.w.Reqs[rid] == nil && tag != "" && c.goneTags[tag]
}

// isGone is whether rid is missing from the final state because an
// accepted delete removed its task.
func (c *checker) isGone(rid string) bool {
	if c.w.Reqs[rid] != nil {
		return false
	}
	_, ok := c.gone[rid]
	return ok
}

// finalStatus is a request's final status and error code: the final
// state's, or the read before the delete that removed it; "" when unknown.
func (c *checker) finalStatus(rid string) (string, string) {
	if r := c.w.Reqs[rid]; r != nil {
		return r.Status, r.ErrorCode
	}
	if g, ok := c.gone[rid]; ok {
		return g.status, g.code
	}
	return "", ""
}

// deletes judges the deletes (invariant 5: the answer is the truth): an
// accepted delete removed the task — the read after it is 404, the final
// state does not show it — and the task was neither Running nor Paused
// (the read before it showed it idle, or Paused on calls that expired
// before the delete); a refused delete changed nothing — the read after
// it shows every request and entry the read before it showed.
func (c *checker) deletes() {
	for _, op := range c.in.Ops {
		if op.Kind != OpDelete || op.Status == 0 {
			continue
		}
		tid := op.Path[strings.LastIndexByte(op.Path, '/')+1:]
		before, okB := parseSnapshot(op.Before)
		after, okA := parseSnapshot(op.After)
		var rids []string
		for _, r := range before.Requests {
			rids = append(rids, r.ID)
		}
		if op.Status >= 200 && op.Status < 300 {
			if t := c.w.Tasks[tid]; t != nil && t.Proc == op.Proc && survived(t, op.End) {
				c.add(5, rids, []int{op.ID}, nil, "a delete of %s %s answered %d, but the final state shows the task", op.Proc, short(tid), op.Status)
			}
			if okA && after.Code != 404 {
				c.add(5, rids, []int{op.ID}, nil, "a delete of %s %s answered %d, but the read after it answered %d", op.Proc, short(tid), op.Status, after.Code)
			}
			if okB && busy(before, op.End) && !c.endedAfterRead(op.Proc, before) {
				c.add(5, rids, []int{op.ID}, nil, "a delete of %s %s answered %d, but the task was %s just before it", op.Proc, short(tid), op.Status, before.Status)
			}
			continue
		}
		if !okB || !okA || before.Code != 200 {
			continue
		}
		if after.Code != 200 {
			c.add(5, rids, []int{op.ID}, nil, "a delete of %s %s answered %d %s, but the read after it answered %d", op.Proc, short(tid), op.Status, op.ErrorCode(), after.Code)
			continue
		}
		var missing []string
		for _, r := range before.Requests {
			if !slices.ContainsFunc(after.Requests, func(a snapshotReq) bool { return a.ID == r.ID }) {
				missing = append(missing, short(r.ID))
			}
		}
		if len(missing) > 0 || after.Items < before.Items {
			c.add(5, rids, []int{op.ID}, nil, "a delete of %s %s answered %d %s, but the task lost requests %v or entries (%d before, %d after)",
				op.Proc, short(tid), op.Status, op.ErrorCode(), missing, before.Items, after.Items)
		}
	}
}

// survived is whether a task in the final state holds a request from
// before the delete that ended at end: a task its caller made again
// under the same id after the delete (its next call of that sub-agent)
// holds only later ones.
func survived(t *Task, end time.Time) bool {
	if len(t.Requests) == 0 {
		return true
	}
	return slices.ContainsFunc(t.Requests, func(r Request) bool { return r.CreatedAt.Before(end) })
}

// endedAfterRead is whether a request the read before a delete showed
// Running or Paused ended after that read: a webhook told its end. A
// delete that was accepted came after that end (a deleted task's request
// ends no more), so the read was stale, not the answer wrong.
func (c *checker) endedAfterRead(proc string, before taskSnapshot) bool {
	for _, r := range before.Requests {
		if r.Status != "Running" && r.Status != "Paused" {
			continue
		}
		for _, d := range c.in.Deliveries {
			if _, end := webhookStatus[d.Type]; end && d.Proc == proc && d.RequestID == r.ID {
				return true
			}
		}
	}
	return false
}

// busy is whether a task read before a delete that ended at end was
// Running, or Paused on a call that had not expired by then. A read whose
// requests had all ended (its request ended between the task's read and
// its records': GET task shows the record) was not busy.
func busy(s taskSnapshot, end time.Time) bool {
	if len(s.Requests) > 0 && !slices.ContainsFunc(s.Requests, func(r snapshotReq) bool { return r.Status == "Running" || r.Status == "Paused" }) {
		return false
	}
	switch s.Status {
	case "Running":
		return true
	case "Paused":
		if len(s.Pending) == 0 {
			return true
		}
		for _, exp := range s.Pending {
			if exp.IsZero() || exp.After(end) {
				return true
			}
		}
	}
	return false
}

// waiterBinding is a waiter and the requests direct calls bound it to.
type waiterBinding struct {
	w    directWaiter
	rids []string
	ops  []int
	// sure is whether an answer showed the binding (a call answered with
	// its RequestResult): without one, the call may not have landed.
	sure bool
}

// answered is what a waiter's answer says: its status and request, and
// for a failure its code.
type answered struct {
	call   WaiterCall
	result *RequestResult
}

// waiters judges the waiters (invariant 7, "a token answered once"):
// every call to a fake answers a waiter some direct call gave; a waiter is
// answered (success or failure, accepted) at most once; the answer agrees
// with its request — Completed → success with the Completed
// RequestResult, Failed or Canceled → failure with Hitch.<code>, a pause →
// success with the Paused RequestResult only for on_pause return (or a
// round holding a client tool); and a waiter of a request that ended, or
// that is Paused with on_pause return, was answered.
func (c *checker) waiters() {
	binds := map[string]*waiterBinding{}
	var order []string
	for _, op := range c.in.Ops {
		w, ok := waiterOf(op)
		if !ok {
			continue
		}
		k := w.Kind + " " + w.ID
		b := binds[k]
		if b == nil {
			b = &waiterBinding{w: w}
			binds[k] = b
			order = append(order, k)
		}
		b.ops = append(b.ops, op.ID)
		if r := op.Result(); r != nil && op.Status == 200 {
			b.sure = true
			if !slices.Contains(b.rids, r.RequestID) {
				b.rids = append(b.rids, r.RequestID)
			}
		}
	}
	finals := map[string][]answered{}
	for _, call := range c.in.Waiters {
		k := call.Kind + " " + call.ID
		b := binds[k]
		if b == nil {
			c.add(7, nil, nil, nil, "%s sent %s %s for %s %q, which no operation gave", call.Proc, call.Kind, call.Op, call.Kind, call.ID)
			binds[k] = &waiterBinding{w: directWaiter{Kind: call.Kind, ID: call.ID}}
			continue
		}
		if call.Op == WaiterHeartbeat || !call.Accepted() {
			continue
		}
		a := answered{call: call}
		if call.Result != "" {
			var r RequestResult
			if json.Unmarshal([]byte(call.Result), &r) == nil && r.RequestID != "" {
				a.result = &r
			}
		}
		finals[k] = append(finals[k], a)
	}
	for _, k := range order {
		b := binds[k]
		as := finals[k]
		rids := b.rids
		var ops []int
		for _, rid := range rids {
			ops = append(ops, c.ridOps[rid]...)
		}
		ops = append(ops, b.ops...)
		if len(as) > 1 && !c.answeredAgainAfterAFault(as) {
			var parts []string
			for _, a := range as {
				parts = append(parts, fmt.Sprintf("%s %s at %s", a.call.Op, describe(a), a.call.At.Format("15:04:05.000")))
			}
			c.add(7, rids, ops, nil, "%s %q was answered %d times: %s", b.w.Kind, b.w.ID, len(as), strings.Join(parts, "; "))
		}
		for _, a := range as {
			c.waiterAnswerAgrees(b, a, rids, ops)
		}
		if len(as) > 0 || !b.sure {
			continue
		}
		for _, rid := range rids {
			status, _ := c.finalStatus(rid)
			switch {
			case Terminal(status):
				c.add(7, rids, ops, nil, "%s %q (on_pause %s) of %s, which ended %s, was never answered", b.w.Kind, b.w.ID, b.w.OnPause, short(rid), status)
			case status == "Paused" && b.w.OnPause == "return":
				c.add(7, rids, ops, nil, "%s %q (on_pause return) of %s, which is Paused, was never answered", b.w.Kind, b.w.ID, short(rid))
			}
		}
	}
}

// answeredAgainAfterAFault is whether a waiter's two answers are one
// answer sent again: the same outcome by the same process, which a fault
// stopped after the first answer went out and before its outbox item was
// deleted — the notifier delivers at least once (an API without an
// idempotency token cannot be told "once"). Step Functions closes a token
// at its first answer (a second gets TaskTimedOut); a third answer, or a
// second with no fault between, is a breach.
func (c *checker) answeredAgainAfterAFault(as []answered) bool {
	if len(as) != 2 {
		return false
	}
	first, second := as[0].call, as[1].call
	return first.Proc == second.Proc && first.Op == second.Op && describe(as[0]) == describe(as[1]) &&
		c.faultBetween(first.Proc, first.At, second.At)
}

func describe(a answered) string {
	switch {
	case a.call.Op == WaiterFailure:
		return a.call.Error
	case a.result != nil:
		return a.result.Status
	}
	return "?"
}

// waiterAnswerAgrees holds one accepted answer to its request's outcome.
func (c *checker) waiterAnswerAgrees(b *waiterBinding, a answered, rids []string, ops []int) {
	rid := ""
	if len(rids) > 0 {
		rid = rids[len(rids)-1]
	}
	if a.result != nil {
		if len(rids) > 0 && !slices.Contains(rids, a.result.RequestID) {
			c.add(7, append(rids, a.result.RequestID), ops, nil, "%s %q of %s was answered with the result of another request, %s",
				b.w.Kind, b.w.ID, short(rid), short(a.result.RequestID))
			return
		}
		rid = a.result.RequestID
	}
	status, code := c.finalStatus(rid)
	what := fmt.Sprintf("%s %q (on_pause %s) of %s", b.w.Kind, b.w.ID, b.w.OnPause, short(rid))
	switch a.call.Op {
	case WaiterSuccess:
		if a.result == nil {
			c.add(7, rids, ops, nil, "%s was answered success without a RequestResult: %s", what, clip(a.call.Result, 200))
			return
		}
		switch a.result.Status {
		case "Completed":
			if status != "" && status != "Completed" {
				c.add(7, rids, ops, nil, "%s was answered success Completed, but the request ended %s %s", what, status, code)
			}
		case "Paused":
			client := slices.ContainsFunc(a.result.Inputs, func(p PendingView) bool { return p.Name == ClientTool })
			if b.w.OnPause != "return" && !client {
				c.add(7, rids, ops, nil, "%s was answered success Paused (round %d), though it waits for the end and the round holds no client tool", what, a.result.Round)
			}
		default:
			c.add(7, rids, ops, nil, "%s was answered success with status %s", what, a.result.Status)
		}
	case WaiterFailure:
		if a.call.Error == "Hitch.task_not_found" && c.isGone(rid) {
			// Its task was deleted before the answer went out: the
			// notifier's answer for a gone task (docs/api.md, Delete a task).
			return
		}
		if a.result != nil && !Terminal(a.result.Status) {
			c.add(7, rids, ops, nil, "%s was answered failure with status %s", what, a.result.Status)
		}
		switch status {
		case "":
		case "Failed", "Canceled":
			want := "Hitch." + code
			if code == "" {
				want = "Hitch.canceled"
			}
			if a.call.Error != want {
				c.add(7, rids, ops, nil, "%s was answered failure %s, but the request ended %s %s", what, a.call.Error, status, code)
			}
		default:
			c.add(7, rids, ops, nil, "%s was answered failure %s, but the request is %s", what, a.call.Error, status)
		}
	}
}

// waiterShapes counts the waiters and deletes the workload made: direct
// calls by waiter kind and on_pause, the calls the fakes got, deletes by
// answer.
func waiterShapes(in Input, m map[string]int) {
	for _, op := range in.Ops {
		if w, ok := waiterOf(op); ok {
			m[fmt.Sprintf("direct %s with %s, on_pause %s", op.Kind, w.Kind, w.OnPause)]++
			if strings.HasSuffix(op.Note, " direct again") {
				m["direct resumes sent again with a waiter of their own"]++
			}
		}
		if op.Kind == OpDelete {
			a := fmt.Sprint(op.Status)
			if code := op.ErrorCode(); code != "" {
				a += " " + code
			}
			if op.Status == 0 {
				a = "without an answer"
			}
			m["deletes ("+strings.TrimPrefix(op.Note, "root ")+") "+a]++
		}
	}
	for _, wc := range in.Waiters {
		if wc.Accepted() {
			m["waiter calls "+wc.Kind+" "+wc.Op]++
		}
	}
}
