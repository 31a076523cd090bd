package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/hitch-agents/hitch/internal/chaos"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/sfnfake"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

// waiterFakes are one process's Step Functions and Lambda fakes (where it
// answers task tokens and callbacks: one pair per process, so a call
// tells which process made it) and the Lambda API it serves direct
// payloads on (--lambda-addr).
type waiterFakes struct {
	sfn    *sfnfake.Server
	fn     *fakelambda.Server
	addr   string
	client *lambda.Client
}

// startWaiters starts the fakes of process name and says how to point the
// process at them: its environment and its arguments.
func (c *cluster) startWaiters(t *testing.T, name string) (env, args []string) {
	t.Helper()
	addr, err := chaos.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	wf := &waiterFakes{sfn: sfnfake.New(t), fn: fakelambda.New(t), addr: addr,
		client: lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1,
			HTTPClient: &http.Client{Timeout: 3 * time.Minute}})}
	if c.waiters == nil {
		c.waiters = map[string]*waiterFakes{}
	}
	c.waiters[name] = wf
	env = []string{"AWS_ENDPOINT_URL_SFN=" + wf.sfn.URL, "AWS_ENDPOINT_URL_LAMBDA=" + wf.fn.URL,
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1"}
	return env, []string{"--lambda-addr", addr}
}

// waiterCalls are the calls both processes made to their fakes, in time
// order.
func (c *cluster) waiterCalls() []WaiterCall {
	var out []WaiterCall
	for _, name := range []string{ProcA, ProcB} {
		wf := c.waiters[name]
		if wf == nil {
			continue
		}
		for _, s := range wf.sfn.Calls() {
			wc := WaiterCall{Proc: name, Kind: WaiterTaskToken, ID: s.Token, Status: s.Status, At: s.At}
			switch s.Op {
			case "SendTaskSuccess":
				wc.Op, wc.Result = WaiterSuccess, s.Output
			case "SendTaskFailure":
				wc.Op, wc.Error = WaiterFailure, s.Error
			default:
				wc.Op = WaiterHeartbeat
			}
			out = append(out, wc)
		}
		for _, cb := range wf.fn.Callbacks() {
			wc := WaiterCall{Proc: name, Kind: WaiterCallbackID, ID: cb.ID, Status: cb.Status, At: cb.At}
			switch cb.Op {
			case "succeed":
				wc.Op, wc.Result = WaiterSuccess, string(cb.Body)
			case "fail":
				var e struct {
					ErrorType string
					ErrorData string
				}
				_ = json.Unmarshal(cb.Body, &e)
				wc.Op, wc.Error, wc.Result = WaiterFailure, e.ErrorType, e.ErrorData
			default:
				wc.Op = WaiterHeartbeat
			}
			out = append(out, wc)
		}
	}
	sortWaiterCalls(out)
	return out
}

func sortWaiterCalls(cs []WaiterCall) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].At.Before(cs[j-1].At); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// direct sends one recorded op through a process's Lambda API: op.Body is
// the direct payload. A function error (Hitch.<code>) is recorded as the
// HTTP route would answer it: the code's status, {"error": {"code", "message"}}.
func (c *cluster) direct(op Op) *Op {
	op.Method = MethodLambda
	rec := c.rec.Begin(op)
	wf := c.waiters[op.Proc]
	out, err := wf.client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("hitch-invoke"), Payload: []byte(op.Body)})
	if err != nil {
		c.rec.Finish(rec, 0, "", err)
		return rec
	}
	status, resp := 200, string(out.Payload)
	if out.FunctionError != nil {
		var fe struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		code := strings.TrimPrefix(fe.ErrorType, "Hitch.")
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": fe.ErrorMessage}})
		status, resp = httpapi.StatusOf(code), string(b)
	}
	c.rec.Finish(rec, status, resp, nil)
	c.observe(rec.End, out.Payload)
	return rec
}

// waiter makes a fresh waiter for a direct call: a task token or a
// callback id (the Lambda API's [A-Za-z0-9+/]), on_pause wait (the
// default, sometimes said), or return.
func (w *worker) waiter(f *flow, payload map[string]any) {
	n := w.g.tags.Add(1)
	if w.rng.IntN(2) == 0 {
		payload[WaiterTaskToken] = fmt.Sprintf("tok-%d-%d-%d", w.g.seed, f.id, n)
	} else {
		payload[WaiterCallbackID] = fmt.Sprintf("cb%dx%dx%d", w.g.seed, f.id, n)
	}
	switch w.rng.IntN(3) {
	case 0:
		payload["on_pause"] = "return"
	case 1:
		payload["on_pause"] = "wait"
	}
}

// sendDirect is send's invoke through the Lambda API, with a waiter: the
// same payload (its idempotency_key, its waiter) again while no answer
// came, as a state machine's Retry does.
func (w *worker) sendDirect(f *flow, text string) *RequestResult {
	f.msgs++
	key := fmt.Sprintf("torture-%d-%d-%d", w.g.seed, f.id, f.msgs)
	f.lastKey = key
	payload := map[string]any{"agent": f.agent, "user_id": User, "items": []map[string]string{{"content": text}}, "idempotency_key": key}
	w.waiter(f, payload)
	body, _ := json.Marshal(payload)
	for try := 0; try < 4; try++ {
		op := Op{Kind: OpInvoke, Proc: f.proc, Path: "/agents/" + f.agent + "/invoke", Body: string(body), Key: key, Note: "direct"}
		op.Worker, op.Flow = w.id, f.id
		done := w.g.c.direct(op)
		if done.Status == 0 || done.ErrorCode() == "request_lost" {
			// The Lambda API has no Retry-After: wait about a lease, as
			// the HTTP route's Retry-After would say, then take it over.
			if done.Status != 0 {
				time.Sleep(time.Duration(8+w.rng.IntN(5)) * time.Second)
			}
			w.g.c.healthy(f.proc, 40*time.Second)
			continue
		}
		return done.Result()
	}
	return nil
}

// resumeDirect sends a decision at the root through the Lambda API, with a
// waiter of its own bound to the request.
func (w *worker) resumeDirect(f *flow, l level, body string, decides []CallDecision) {
	var payload map[string]any
	if json.Unmarshal([]byte(body), &payload) != nil {
		return
	}
	payload["op"], payload["agent"], payload["user_id"], payload["task_id"], payload["request_id"] = "resume", l.agent, User, l.taskID, l.reqID
	w.waiter(f, payload)
	b, _ := json.Marshal(payload)
	op := Op{Kind: OpResume, Proc: l.proc, Path: l.resumePath(), Body: string(b), Decides: elicitMarked(l, decides), Note: l.name + " direct"}
	op.Worker, op.Flow = w.id, f.id
	w.g.c.direct(op)
	if w.rng.IntN(3) == 0 {
		// The same decision again with a waiter of its own (another
		// branch of the state machine): a duplicate that waits, in flight
		// or after the end, binds its waiter as the first call did
		// (seed 811358580: a callback of a duplicate never answered).
		w.waiter(f, payload)
		b, _ := json.Marshal(payload)
		again := Op{Kind: OpResume, Proc: l.proc, Path: l.resumePath(), Body: string(b), Decides: elicitMarked(l, decides), Note: l.name + " direct again"}
		again.Worker, again.Flow = w.id, f.id
		w.g.c.direct(again)
	}
}

// deleteTask deletes a task, reading it just before and just after (the
// snapshots the checker compares).
func (w *worker) deleteTask(f *flow, l level, note string) *Op {
	read := func() string {
		op := w.op(f, Op{Kind: OpGet, Proc: l.proc, Method: "GET", Path: "/agents/" + l.agent + "/tasks/" + l.taskID})
		if op.Status != 200 {
			return snapshot(nil, op.Status)
		}
		var t Task
		if json.Unmarshal([]byte(op.Resp), &t) != nil {
			return ""
		}
		return snapshot(&t, 200)
	}
	before := read()
	op := w.op(f, Op{Kind: OpDelete, Proc: l.proc, Method: "DELETE", Path: "/agents/" + l.agent + "/tasks/" + l.taskID, Note: l.name + note, Before: before})
	if op.Status == 0 {
		return op
	}
	after := read()
	w.g.c.rec.Amend(op, func(op *Op) { op.After = after })
	return op
}

// hooksDelivered waits (up to 20 s) until the receiver accepted the end
// webhook of each request the finished task shows. A webhook still owed
// when its task is deleted is dropped (docs/api.md, Delete a task: its
// result went with the task), so the workload deletes a task only once
// its webhooks are in; false leaves it.
func (w *worker) hooksDelivered(f *flow, v *Task) bool {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]bool{}
		for _, d := range w.g.c.recv.Deliveries() {
			if d.Proc == f.proc && d.Accepted() && d.Verified {
				got[d.RequestID+" "+d.Type] = true
			}
		}
		done := true
		for _, r := range v.Requests {
			if Terminal(r.Status) && !got[r.RequestID+" request."+strings.ToLower(r.Status)] {
				done = false
			}
		}
		if done {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
