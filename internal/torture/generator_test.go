package torture

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// generator runs the workload: workers, each with a random source of its
// own derived from the seed, running flows until the deadline.
type generator struct {
	c *cluster
	// chains are the chains flows pick from: Chains, or without the
	// callers of two children (TORTURE_FANOUT=0).
	chains   []Chain
	seed     uint64
	deadline time.Time
	flows    atomic.Int64
	tags     atomic.Int64
}

type worker struct {
	g   *generator
	id  int
	rng *rand.Rand
}

// flow is one task's story: its chain, its root task and current request.
type flow struct {
	id     int
	chain  Chain
	proc   string
	agent  string
	taskID string
	reqID  string
	msgs   int
	stale  []Op // decisions answered, to send again later (stale)
	// elicited are answers to elicitations answered 200, to send again
	// once their round passed (elicit_test.go).
	elicited []Op
	lastKey  string
	// unsure is when a decision or cancel of the flow last went
	// unanswered: it may still land, so for a while nothing is compared
	// before and after a refused body. (A decision below the root, which
	// its callers copy when their continuations run, is told apart by the
	// checker: copiedMeanwhile.)
	unsure time.Time
}

// BurstLegs is how many legs a burst runs at once: more than the 100 a
// page of the reaper's index holds.
const BurstLegs = 110

func (g *generator) run(workers int) {
	var wg sync.WaitGroup
	// One burst, a third of the way in: BurstLegs new tasks at once, each
	// running the slow tool, while the nemesis goes on.
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Until(g.deadline) / 3)
		var bw sync.WaitGroup
		for i := range BurstLegs {
			bw.Add(1)
			go func() {
				defer bw.Done()
				w := &worker{g: g, id: 1000 + i, rng: rand.New(rand.NewPCG(g.seed, uint64(1000+i)))}
				w.burst()
			}()
		}
		bw.Wait()
	}()
	// A remote gone for good mid-chain (gone_test.go).
	wg.Add(1)
	go func() { defer wg.Done(); g.goneFlows() }()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{g: g, id: i, rng: rand.New(rand.NewPCG(g.seed, uint64(i)+1))}
			for time.Now().Before(g.deadline) {
				w.flow()
			}
		}()
	}
	wg.Wait()
}

func (w *worker) op(f *flow, op Op) *Op {
	op.Worker, op.Flow = w.id, f.id
	done := w.g.c.do(op)
	if done.Status == 0 && done.Method == "POST" {
		f.unsure = time.Now()
	}
	return done
}

// pick chooses by weights.
func (w *worker) pick(weights map[string]int) string {
	keys := sortedKeys(weights)
	total := 0
	for _, k := range keys {
		total += weights[k]
	}
	n := w.rng.IntN(total)
	for _, k := range keys {
		if n < weights[k] {
			return k
		}
		n -= weights[k]
	}
	return keys[len(keys)-1]
}

// script is a leaf's message: one or two calls of the test tools, and
// perhaps a later one (/then) after their results.
func (w *worker) script() string {
	tools := map[string]int{"fx_effect": 30, "fx_upsert": 20, "fx_peek": 20, "ex_effect": 22, "qx_effect": 12}
	var lines []string
	call := func(verb string) {
		tag := fmt.Sprintf("t%d", w.g.tags.Add(1))
		in, _ := json.Marshal(map[string]string{"tag": tag, "v": "v" + tag})
		lines = append(lines, verb+" "+w.pick(tools)+" "+string(in))
	}
	if w.rng.IntN(8) == 0 {
		// A long stream: a word of reasoning is an event, in the leaf's
		// log and in every caller's (as child events).
		words := make([]string, 1000+w.rng.IntN(3000))
		for i := range words {
			words[i] = "w" + strconv.Itoa(i)
		}
		lines = append(lines, "/think "+strings.Join(words, " "))
	}
	for range 1 + w.rng.IntN(2) {
		call("/call")
	}
	if w.rng.IntN(4) == 0 {
		// A question (its tag in its text), answered like an approval.
		tag := fmt.Sprintf("t%d", w.g.tags.Add(1))
		in, _ := json.Marshal(map[string]any{"question": tag + "?", "choices": []string{"yes-" + tag, "no-" + tag}})
		lines = append(lines, "/call "+AskTool+" "+string(in))
	}
	if w.rng.IntN(6) == 0 {
		// A client tool: the client sends its result.
		tag := fmt.Sprintf("t%d", w.g.tags.Add(1))
		lines = append(lines, "/call "+ClientTool+` {"tag":"`+tag+`"}`)
	}
	if line := w.formCall(); line != "" {
		lines = append(lines, line)
	}
	if w.rng.IntN(10) < 4 {
		call("/then")
	}
	return strings.Join(lines, "\n")
}

// message is a new message for the chain's first agent: a leaf's script
// wrapped for each caller above it, or, for a chain that fans out, one
// call of each child in one turn, each with a script of its own.
func (w *worker) message(c Chain) string {
	if len(c.Fan) == 0 {
		return message(c, w.script())
	}
	var lines []string
	for _, child := range c.Fan {
		in, _ := json.Marshal(map[string]string{"message": w.script()})
		lines = append(lines, "/call "+child+" "+string(in))
	}
	return strings.Join(lines, "\n")
}

// message wraps a leaf's script for the chain's first agent.
func message(c Chain, script string) string {
	text := script
	for i := len(c.Agents) - 2; i >= 0; i-- {
		in, _ := json.Marshal(map[string]string{"message": text})
		text = "/call " + c.Agents[i+1] + " " + string(in)
	}
	return text
}

func itemsBody(taskID, text string) string {
	m := map[string]any{"items": []map[string]string{{"content": text}}}
	if taskID != "" {
		m["task_id"] = taskID
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// send sends a message (invoke, follow-on or edit) with an
// Idempotency-Key, and sends it again with the key while no answer came.
func (w *worker) send(f *flow, kind, path, body string) *RequestResult {
	f.msgs++
	key := fmt.Sprintf("torture-%d-%d-%d", w.g.seed, f.id, f.msgs)
	f.lastKey = key
	for try := 0; try < 4; try++ {
		op := w.op(f, Op{Kind: kind, Proc: f.proc, Method: "POST", Path: path, Body: body, Key: key})
		if op.Status == 0 || op.ErrorCode() == "request_lost" {
			// No outcome: the same message with the same key takes the
			// request over (or creates it, if it never was) — after
			// Retry-After, as a client is told to.
			if secs, err := strconv.Atoi(op.RetryAfter); err == nil && secs > 0 {
				time.Sleep(time.Duration(min(secs, 20)) * time.Second)
			}
			w.g.c.healthy(f.proc, 40*time.Second)
			continue
		}
		return op.Result()
	}
	return nil
}

func (w *worker) flow() {
	f := &flow{id: int(w.g.flows.Add(1))}
	f.chain = w.g.chains[w.rng.IntN(len(w.g.chains))]
	f.proc, f.agent = f.chain.Proc, f.chain.Agents[0]
	var res *RequestResult
	if w.rng.IntN(3) == 0 {
		// Through the Lambda API, with a task token or a callback id.
		res = w.sendDirect(f, w.message(f.chain))
	} else {
		res = w.send(f, OpInvoke, "/agents/"+f.agent+"/invoke", itemsBody("", w.message(f.chain)))
	}
	if res == nil {
		return
	}
	f.taskID, f.reqID = res.TaskID, res.RequestID
	for steps := 0; steps < 12 && time.Now().Before(w.g.deadline); steps++ {
		v := w.settle(f)
		if v == nil {
			return
		}
		if v.Status == "Paused" {
			if !w.decideStep(f, v) {
				return
			}
			continue
		}
		if len(f.stale) > 0 && w.rng.IntN(3) == 0 {
			w.sendStale(f)
		}
		if w.rng.IntN(3) == 0 {
			w.replay(f, f.agent, f.taskID, f.reqID)
		}
		// The request ended: a follow-on, an edit of an earlier message, or
		// the flow ends.
		switch n := w.rng.IntN(100); {
		case n < 35 && f.msgs < 3:
			res = w.send(f, OpFollow, "/agents/"+f.agent+"/invoke", itemsBody(f.taskID, w.message(f.chain)))
		case n < 50 && f.msgs < 3:
			var live []string
			for _, r := range v.Requests {
				if r.SupersededBy == nil {
					live = append(live, r.RequestID)
				}
			}
			if len(live) == 0 {
				return
			}
			rid := live[w.rng.IntN(len(live))]
			res = w.send(f, OpEdit, "/agents/"+f.agent+"/tasks/"+f.taskID+"/requests/"+rid+"/edit", itemsBody("", w.message(f.chain)))
		case n >= 82:
			// The task is done with: deleted (waiters_test.go).
			if w.hooksDelivered(f, v) {
				w.deleteTask(f, level{name: "root", proc: f.proc, agent: f.agent, taskID: f.taskID}, " finished")
			}
			return
		default:
			return
		}
		if res == nil || res.RequestID == "" {
			return
		}
		f.reqID = res.RequestID
	}
}

// burst is one leg of a burst: a leaf on A running the slow tool, read
// until it ends.
func (w *worker) burst() {
	f := &flow{id: int(w.g.flows.Add(1)), chain: Chains[0]}
	f.proc, f.agent = f.chain.Proc, f.chain.Agents[0]
	tag := fmt.Sprintf("t%d", w.g.tags.Add(1))
	in, _ := json.Marshal(map[string]string{"tag": tag, "v": "v" + tag})
	res := w.send(f, OpInvoke, "/agents/"+f.agent+"/invoke", itemsBody("", "/call fx_slow "+string(in)))
	if res == nil {
		return
	}
	f.taskID, f.reqID = res.TaskID, res.RequestID
	w.settle(f)
}

// get reads a task, recorded.
func (w *worker) get(f *flow, proc, agent, taskID string) *Task {
	op := w.op(f, Op{Kind: OpGet, Proc: proc, Method: "GET", Path: "/agents/" + agent + "/tasks/" + taskID})
	if op.Status != 200 {
		return nil
	}
	var t Task
	if json.Unmarshal([]byte(op.Resp), &t) != nil {
		return nil
	}
	t.Proc = proc
	return &t
}

// settle reads the root task until it is not Running (up to 40 s).
func (w *worker) settle(f *flow) *Task {
	deadline := time.Now().Add(40 * time.Second)
	for {
		t := w.get(f, f.proc, f.agent, f.taskID)
		if t != nil && t.Status != "Running" {
			return t
		}
		if t == nil {
			w.g.c.healthy(f.proc, 40*time.Second)
		}
		if time.Now().After(deadline) {
			return t
		}
		time.Sleep(time.Duration(200+w.rng.IntN(300)) * time.Millisecond)
	}
}

// level is where a decision or a cancel can be sent: the root, a caller
// in the middle, or the leaf.
type level struct {
	name   string
	proc   string
	agent  string
	taskID string
	reqID  string
	round  int
	// pending are the calls this level shows, which a decision sent here
	// decides.
	pending []PendingView
	// as is who decides here ("": the owner; else one of Approvers, with
	// its groups), chosen by sender.
	as string
}

// sender picks who decides at l: one of Approvers (of sre) two times in
// three when l shows a call of a QuorumTools tool, else the owner.
func (w *worker) sender(l level) level {
	if slices.ContainsFunc(l.pending, quorumCall) && w.rng.IntN(3) > 0 {
		l.as = Approvers[w.rng.IntN(len(Approvers))] + ";groups=sre"
	}
	return l
}

// quorumCall tells whether p is a call of a QuorumTools tool.
func quorumCall(p PendingView) bool { return QuorumTools[p.Name] > 0 }

// approverDecision is a decision by one of Approvers: of the calls they
// may decide (the QuorumTools tools'), approved, rejected or edited, by
// one action or call by call (always call by call where the round holds
// an input, which an action alone cannot settle).
func (w *worker) approverDecision(l level, kind string) (string, []CallDecision) {
	inputs := slices.ContainsFunc(l.pending, func(p PendingView) bool { return p.Kind != "" })
	var decides []CallDecision
	var ds []map[string]any
	for _, p := range l.pending {
		if !quorumCall(p) || p.Outcome != "" {
			continue
		}
		leaf := cmp.Or(p.RequestID, l.reqID)
		action := kind
		if kind != "approve" && kind != "reject" {
			action = []string{"approve", "approve", "reject"}[w.rng.IntN(3)]
		}
		d := map[string]any{"tool_call_id": p.ToolCallID, "action": action}
		cd := CallDecision{RequestID: leaf, ToolCallID: p.ToolCallID, Action: action}
		if action == "approve" && len(p.Approvals) == 0 && w.rng.IntN(5) == 0 {
			// An edit, only as a call's first decision.
			v := fmt.Sprintf("edited-%d", w.rng.IntN(1000))
			d["action"], d["input"] = "edit", map[string]string{"tag": tagOf(p), "v": v}
			cd.Action, cd.V = "edit", v
		} else if action == "approve" && p.InputHash != "" {
			d["input_hash"] = p.InputHash // an earlier approval may have edited it
		}
		ds = append(ds, d)
		decides = append(decides, cd)
	}
	if (kind == "approve" || kind == "reject") && !inputs && w.rng.IntN(2) == 0 {
		body := map[string]any{"action": kind, "round": l.round}
		b, _ := json.Marshal(body)
		for i := range decides {
			decides[i].Action, decides[i].V = kind, ""
		}
		return string(b), decides
	}
	b, _ := json.Marshal(map[string]any{"decisions": ds, "round": l.round})
	return string(b), decides
}

// tagOf is a test tool call's tag.
func tagOf(p PendingView) string {
	var in struct {
		Tag string `json:"tag"`
	}
	_ = json.Unmarshal(p.Input, &in)
	return in.Tag
}

func (l level) resumePath() string {
	return "/agents/" + l.agent + "/tasks/" + l.taskID + "/requests/" + l.reqID + "/resume"
}

// levels finds the levels of a paused chain, from its root's view.
func (w *worker) levels(f *flow, v *Task) []level {
	root := level{name: "root", proc: f.proc, agent: f.agent, taskID: f.taskID, round: v.Round, pending: v.shown()}
	for _, r := range v.Requests {
		if r.Status == "Paused" {
			root.reqID = r.RequestID
		}
	}
	if root.reqID == "" || len(root.pending) == 0 {
		return nil
	}
	out := []level{root}
	// The leaves the root shows, in the order first shown: one for a
	// chain, two for a caller that called two children in one turn.
	var leafReqs []PendingView
	for _, p := range root.pending {
		if p.RequestID == "" || p.RequestID == root.reqID {
			continue
		}
		if !slices.ContainsFunc(leafReqs, func(q PendingView) bool { return q.RequestID == p.RequestID }) {
			leafReqs = append(leafReqs, p)
		}
	}
	for i, p := range leafReqs {
		leafProc, _ := w.g.c.procOf(p.ResumeURL)
		if leafProc == "" {
			leafProc = f.proc
		}
		leaf := level{name: "leaf", proc: leafProc, agent: p.Agent, taskID: p.TaskID, reqID: p.RequestID}
		lt := w.get(f, leaf.proc, leaf.agent, leaf.taskID)
		if i == 0 && f.chain.Depth() == 3 {
			if mid, ok := w.mid(f, leaf, lt); ok {
				out = append(out, mid)
			}
		}
		if lt != nil && lt.Status == "Paused" {
			leaf.round, leaf.pending = lt.Round, lt.shown()
			out = append(out, leaf)
		}
	}
	return out
}

// mid finds the caller between the root and the leaf: the leaf's parent
// when it is local to the leaf, else the mid agent's task whose parent is
// the root task.
func (w *worker) mid(f *flow, leaf level, lt *Task) (level, bool) {
	midAgent, midProc := f.chain.Agents[1], f.chain.ProcessOf(1)
	var taskID string
	if lt != nil {
		for _, r := range lt.Requests {
			if r.RequestID == leaf.reqID && r.Parent != nil && r.Parent.Agent == midAgent {
				taskID = r.Parent.TaskID
			}
		}
	}
	if taskID == "" {
		op := w.op(f, Op{Kind: OpGet, Proc: midProc, Method: "GET", Path: "/agents/" + midAgent + "/tasks?limit=50"})
		var list struct {
			Tasks []struct {
				TaskID       string `json:"task_id"`
				ParentTaskID string `json:"parent_task_id"`
			} `json:"tasks"`
		}
		_ = json.Unmarshal([]byte(op.Resp), &list)
		for _, t := range list.Tasks {
			if t.ParentTaskID == f.taskID {
				taskID = t.TaskID
			}
		}
	}
	if taskID == "" {
		return level{}, false
	}
	mt := w.get(f, midProc, midAgent, taskID)
	if mt == nil || mt.Status != "Paused" {
		return level{}, false
	}
	l := level{name: "mid", proc: midProc, agent: midAgent, taskID: taskID, round: mt.Round, pending: mt.shown()}
	for _, r := range mt.Requests {
		if r.Status == "Paused" {
			l.reqID = r.RequestID
		}
	}
	return l, l.reqID != ""
}

// decision makes a resume body for the calls shown, at a level: one
// action for all (with the level's round) or a decision per call.
func (w *worker) decision(l level, kind string) (string, []CallDecision) {
	if l.as != "" {
		return w.approverDecision(l, kind)
	}
	// The owner may not approve a QuorumTools call (four eyes): an
	// approval leaves it out, a rejection (any) takes it.
	var pending []PendingView
	for _, p := range l.pending {
		if (!quorumCall(p) || kind == "reject") && p.Outcome == "" {
			pending = append(pending, p)
		}
	}
	leafOf := func(p PendingView) string {
		if p.RequestID != "" {
			return p.RequestID
		}
		return l.reqID
	}
	var decides []CallDecision
	inputs := slices.ContainsFunc(pending, func(p PendingView) bool { return p.Kind != "" })
	switch {
	case inputs && kind != "mixed":
		// A round holding inputs is settled call by call: approvals as
		// kind says, inputs answered (or, with reject, rejected).
		var ds []map[string]any
		for _, p := range pending {
			d := map[string]any{"tool_call_id": p.ToolCallID, "action": kind}
			cd := CallDecision{RequestID: leafOf(p), ToolCallID: p.ToolCallID, Action: kind}
			if p.Kind != "" && kind == "approve" {
				cd.Action, cd.V = w.answer(p)
				d["action"], d["result"] = cd.Action, resultValue(p, cd.V)
			}
			ds = append(ds, d)
			decides = append(decides, cd)
		}
		b, _ := json.Marshal(map[string]any{"decisions": ds, "round": l.round})
		return string(b), decides
	case kind == "approve" || kind == "reject":
		for _, p := range pending {
			decides = append(decides, CallDecision{RequestID: leafOf(p), ToolCallID: p.ToolCallID, Action: kind})
		}
		body := map[string]any{"action": kind, "round": l.round}
		if kind == "reject" {
			body["reason"] = "torture"
		}
		b, _ := json.Marshal(body)
		return string(b), decides
	}
	var ds []map[string]any
	for _, p := range pending {
		d := map[string]any{"tool_call_id": p.ToolCallID}
		if p.Kind != "" {
			action, v := w.answer(p)
			if w.rng.IntN(4) == 0 {
				action, v = "reject", ""
			}
			d["action"] = action
			if action == "answer" {
				d["result"] = resultValue(p, v)
			}
			decides = append(decides, CallDecision{RequestID: leafOf(p), ToolCallID: p.ToolCallID, Action: action, V: v})
			ds = append(ds, d)
			continue
		}
		switch w.rng.IntN(4) {
		case 0, 1:
			d["action"] = "approve"
		case 2:
			d["action"] = "reject"
		default:
			var in struct {
				Tag string `json:"tag"`
			}
			_ = json.Unmarshal(p.Input, &in)
			v := fmt.Sprintf("edited-%d", w.rng.IntN(1000))
			d["action"], d["input"] = "edit", map[string]string{"tag": in.Tag, "v": v}
			decides = append(decides, CallDecision{RequestID: leafOf(p), ToolCallID: p.ToolCallID, Action: "edit", V: v})
			ds = append(ds, d)
			continue
		}
		decides = append(decides, CallDecision{RequestID: leafOf(p), ToolCallID: p.ToolCallID, Action: d["action"].(string)})
		ds = append(ds, d)
	}
	body := map[string]any{"decisions": ds}
	if w.rng.IntN(2) == 0 {
		body["round"] = l.round
	}
	b, _ := json.Marshal(body)
	return string(b), decides
}

// answer picks an answer to an input: one of a question's choices, or a
// client tool's result ({"pick": …}, as compact JSON).
func (w *worker) answer(p PendingView) (string, string) {
	if p.Kind == "elicitation" {
		return w.elicitAnswer(p)
	}
	if p.Name == ClientTool {
		var in struct {
			Tag string `json:"tag"`
		}
		_ = json.Unmarshal(p.Input, &in)
		return "answer", fmt.Sprintf(`{"pick":"%s-%d"}`, in.Tag, w.rng.IntN(100))
	}
	if len(p.Choices) == 0 {
		return "answer", "fine"
	}
	return "answer", p.Choices[w.rng.IntN(len(p.Choices))]
}

// resultValue is an answer as a decision's result: a client tool's
// result is a JSON object, a question's answer a string.
func resultValue(p PendingView, v string) any {
	if p.Name == ClientTool || p.Kind == "elicitation" {
		return json.RawMessage(v)
	}
	return v
}

func (w *worker) resume(f *flow, l level, body string, decides []CallDecision, note string) *Op {
	decides = elicitMarked(l, decides)
	op := w.op(f, Op{Kind: OpResume, Proc: l.proc, Method: "POST", Path: l.resumePath(), Body: body, Decides: decides, Note: l.name + note, User: l.as})
	if op.Status == 200 {
		if r := op.Result(); r != nil && r.Status != "Running" && len(f.stale) < 4 {
			f.stale = append(f.stale, *op)
		}
		f.noteElicited(op)
	}
	return op
}

func (w *worker) cancel(f *flow, l level, note string) *Op {
	return w.op(f, Op{Kind: OpCancel, Proc: l.proc, Method: "POST", Path: "/agents/" + l.agent + "/tasks/" + l.taskID + "/cancel",
		Body: `{"reason":"torture"}`, Note: l.name + note})
}

// refusedShapes are the bodies refused makes, each of which the API must
// answer 4xx, changing nothing.
var refusedShapes = []string{"action+decisions", "unknown-field", "wrong-type", "bad-json", "bad-action",
	"decided-twice", "answer-not-a-choice", "edit-breaks-schema", "client-result-breaks-schema"}

// refused sends, at a level, a body the API must refuse — malformed,
// contradictory, or deciding one call wrongly beside valid decisions of
// the others — and reads the level's decisions before and after: a 2xx,
// or any decision recorded, is a violation (invariant 5). Its Decides are
// empty: it approves nothing.
func (w *worker) refused(f *flow, l level) {
	shape := refusedShapes[w.rng.IntN(len(refusedShapes))]
	var body string
	switch shape {
	case "action+decisions":
		// A body saying one thing with action and the other with
		// decisions: neither may win.
		// The decisions are valid on their own (every call decided, each
		// question answered with a choice): only the mix is wrong, so
		// a server that lets either part win answers 2xx.
		ds := w.validDecisions(l)
		if len(ds) == 0 {
			return
		}
		action := "reject"
		if slices.ContainsFunc(ds, func(d map[string]any) bool { return d["action"] == "reject" }) {
			action = "approve"
		}
		m := map[string]any{"action": action, "reason": "torture", "decisions": ds}
		if w.rng.IntN(2) == 0 {
			m["round"] = l.round
		}
		if len(ds) > 1 && w.rng.IntN(2) == 0 {
			ds = ds[:1] // decisions that leave calls to the action
			m["decisions"] = ds
		}
		b, _ := json.Marshal(m)
		body = string(b)
	case "unknown-field":
		body = fmt.Sprintf(`{"action":"approve","round":%d,"approve_all":true}`, l.round)
	case "wrong-type":
		body = []string{fmt.Sprintf(`{"action":"approve","round":"%d"}`, l.round), `{"decisions":{"action":"approve"}}`, `{"action":true}`, `[]`}[w.rng.IntN(4)]
	case "bad-json":
		body = fmt.Sprintf(`{"action":"approve","round":%d`, l.round)
	case "bad-action":
		body = fmt.Sprintf(`{"action":"maybe","round":%d}`, l.round)
	default:
		// Valid decisions of every call shown, then one part made wrong.
		ds := w.validDecisions(l)
		if len(ds) == 0 {
			return
		}
		switch shape {
		case "decided-twice":
			ds = append(ds, ds[w.rng.IntN(len(ds))])
		case "answer-not-a-choice":
			i := slices.IndexFunc(l.pending, func(p PendingView) bool { return len(p.Choices) > 0 })
			if i < 0 {
				shape = "decided-twice"
				ds = append(ds, ds[0])
				break
			}
			ds[i] = map[string]any{"tool_call_id": l.pending[i].ToolCallID, "action": "answer", "result": "none-of-these"}
		case "client-result-breaks-schema":
			i := slices.IndexFunc(l.pending, func(p PendingView) bool { return p.Name == ClientTool })
			if i < 0 {
				shape = "decided-twice"
				ds = append(ds, ds[0])
				break
			}
			ds[i] = map[string]any{"tool_call_id": l.pending[i].ToolCallID, "action": "answer", "result": map[string]any{"pick": 5, "extra": true}}
		case "edit-breaks-schema":
			i := slices.IndexFunc(l.pending, func(p PendingView) bool { return p.Kind == "" })
			if i < 0 {
				shape = "decided-twice"
				ds = append(ds, ds[0])
				break
			}
			ds[i] = map[string]any{"tool_call_id": l.pending[i].ToolCallID, "action": "edit", "input": map[string]any{"tag": 7, "v": []int{1}}}
		}
		b, _ := json.Marshal(map[string]any{"decisions": ds, "round": l.round})
		body = string(b)
	}
	w.sendRefused(f, l, body, shape)
}

// sendRefused sends a body the API must refuse at a level, reading the
// level's decisions before and after it.
func (w *worker) sendRefused(f *flow, l level, body, shape string) {
	// The decisions are compared where nothing else records one meanwhile:
	// not across a remote system, whose caller learns of decisions late.
	compare := f.chain.Remote == 0 && f.chain.FanRemote < 0 && time.Since(f.unsure) > 30*time.Second
	var before string
	if compare {
		before = userDecisions(w.get(f, l.proc, l.agent, l.taskID))
	}
	op := w.op(f, Op{Kind: OpResume, Proc: l.proc, Method: "POST", Path: l.resumePath(), Body: body,
		Note: l.name + " refused: " + shape, Refuse: true, Before: before})
	if compare && before != "" {
		after := userDecisions(w.get(f, l.proc, l.agent, l.taskID))
		w.g.c.rec.Amend(op, func(op *Op) { op.After = after })
	}
}

// validDecisions decide every call a level shows validly: approvals
// approved or rejected, questions answered with one of their choices.
func (w *worker) validDecisions(l level) []map[string]any {
	var ds []map[string]any
	for _, p := range l.pending {
		d := map[string]any{"tool_call_id": p.ToolCallID, "action": []string{"approve", "reject"}[w.rng.IntN(2)]}
		if p.Kind != "" {
			action, v := w.answer(p)
			d["action"], d["result"] = action, resultValue(p, v)
		}
		ds = append(ds, d)
	}
	return ds
}

// userDecisions is a task's decisions by people (not expiry), one line
// each, in a canonical order; "" when the task could not be read.
func userDecisions(t *Task) string {
	if t == nil {
		return ""
	}
	var lines []string
	for _, r := range t.Requests {
		for _, d := range r.Decisions {
			if d.Approver == ApproverExpiry {
				continue
			}
			line := fmt.Sprintf("%s r%d %s %s:", short(r.RequestID), d.Round, d.Approver, d.Action)
			for _, c := range d.Calls {
				line += " " + c.ToolCallID + "=" + c.Action
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d decisions: %s", len(lines), strings.Join(lines, "; "))
}

// sendStale sends an earlier decision again, after its round passed.
func (w *worker) sendStale(f *flow) {
	old := f.stale[w.rng.IntN(len(f.stale))]
	w.op(f, Op{Kind: OpResume, Proc: old.Proc, Method: "POST", Path: old.Path, Body: old.Body, Decides: old.Decides, Note: "stale"})
}

// decideStep takes one action on a paused flow; false ends the flow.
func (w *worker) decideStep(f *flow, v *Task) bool {
	ls := w.levels(f, v)
	if len(ls) == 0 {
		return false
	}
	pending := v.Pending
	expiring := false
	for _, p := range pending {
		if strings.HasPrefix(p.Name, "ex_") {
			expiring = true
		}
	}
	at := func() level { return w.sender(ls[w.rng.IntN(len(ls))]) }
	kinds := map[string]int{"approve": 30, "reject": 8, "mixed": 14, "twice": 8, "race": 8, "conflict": 7,
		"cancel": 10, "cancel-race": 5, "stale": 4, "abandon": 3, "refused": 8, "direct": 8, "delete": 6}
	leaves := 0
	for _, l := range ls {
		if l.name == "leaf" {
			leaves++
		}
	}
	if leaves > 1 {
		kinds["leaves-race"] = 10
	}
	if expiring {
		kinds["expire"] = 10
	}
	if eliciting(ls) {
		kinds["elicit"] = 16
	}
	time.Sleep(time.Duration(w.rng.IntN(400)) * time.Millisecond)
	switch k := w.pick(kinds); k {
	case "approve", "reject", "mixed":
		l := at()
		body, ds := w.decision(l, k)
		w.resume(f, l, body, ds, "")
	case "twice":
		l := at()
		body, ds := w.decision(l, []string{"approve", "reject", "mixed"}[w.rng.IntN(3)])
		w.resume(f, l, body, ds, " twice")
		w.resume(f, l, body, ds, " twice")
	case "race", "conflict":
		type send struct {
			l    level
			body string
			ds   []CallDecision
		}
		var sends []send
		n := 2 + w.rng.IntN(2)
		l := at()
		body, ds := w.decision(l, "approve")
		for i := range n {
			if i > 0 && w.rng.IntN(2) == 0 {
				l = at()
				body, ds = w.decision(l, "approve")
			}
			if k == "conflict" && i == n-1 {
				body, ds = w.decision(l, []string{"reject", "mixed"}[w.rng.IntN(2)])
			}
			sends = append(sends, send{l, body, ds})
		}
		var wg sync.WaitGroup
		for _, s := range sends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.resume(f, s.l, s.body, s.ds, " "+k)
			}()
		}
		wg.Wait()
	case "refused":
		w.refused(f, at())
	case "elicit":
		w.elicitStep(f, ls)
	case "direct":
		// A decision at the root through the Lambda API, with a waiter.
		body, ds := w.decision(ls[0], []string{"approve", "mixed"}[w.rng.IntN(2)])
		w.resumeDirect(f, ls[0], body, ds)
	case "delete":
		// A delete of a Paused task, or of a child its caller waits on:
		// refused, changing nothing (waiters_test.go).
		w.deleteTask(f, at(), " while paused")
	case "leaves-race":
		// A decision at each leaf's own URL and one at the root, at once:
		// the root's is all or nothing, whatever the leaves' did.
		var wg sync.WaitGroup
		for _, l := range ls {
			l = w.sender(l)
			body, ds := w.decision(l, []string{"approve", "mixed"}[w.rng.IntN(2)])
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.resume(f, l, body, ds, " racing the other levels")
			}()
		}
		wg.Wait()
	case "cancel":
		w.cancel(f, at(), "")
	case "cancel-race":
		l, c := at(), at()
		body, ds := w.decision(l, "approve")
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); w.resume(f, l, body, ds, " racing a cancel") }()
		go func() { defer wg.Done(); w.cancel(f, c, " racing a decision") }()
		wg.Wait()
	case "stale":
		if len(f.stale) == 0 {
			l := at()
			body, ds := w.decision(l, "approve")
			w.resume(f, l, body, ds, "")
			break
		}
		w.sendStale(f)
	case "expire":
		var exp time.Time
		for _, p := range pending {
			if exp.IsZero() || p.ExpiresAt.Before(exp) {
				exp = p.ExpiresAt
			}
		}
		time.Sleep(time.Until(exp) + time.Duration(500+w.rng.IntN(1500))*time.Millisecond)
		if w.rng.IntN(2) == 0 {
			l := at()
			body, ds := w.decision(l, "approve")
			w.resume(f, l, body, ds, " after expiry")
		}
	case "abandon":
		return false
	}
	return true
}
