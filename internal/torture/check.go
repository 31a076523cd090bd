package torture

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The recovery bound (docs/architecture.md, "The reaper"): a request
// whose leg died is taken over once its lease ended and a sweep found it,
// and a paused round past its expiry is expired by the next sweep. The
// servers of cluster_test.go run with the defaults of both.
const (
	DefaultLease  = 15 * time.Second // agent.LeaseDuration
	DefaultSweep  = 5 * time.Second  // agent.DefaultReapEvery, hitch serve --reap-every
	RecoveryBound = DefaultLease + DefaultSweep
	// RecoveryMargin is what invariant 6 grants on top of the bound: the
	// request's own work once taken over (a tool of up to 6 s, a chain's
	// continuation, an A2A poll of 1 s) on a 2-core machine shared with
	// builds and tests, where the torture's burst alone runs 110 legs at
	// once. The hour's slowest clean recovery took 30.7 s (README,
	// "Torture test"); under the burst with six other test runs beside it
	// (seed 750611353), a leaf taken over 14 s after its process came back
	// lost its lease twice to the load alone (renewals that could not land)
	// and was read Running 68.8 s after the fault.
	RecoveryMargin = 60 * time.Second
)

// Input is what the checker judges: the operations recorded, the ledger
// the tools wrote, the final state of both processes, the webhook
// deliveries and the faults.
type Input struct {
	Ops          []Op
	Ledger       []Execution
	Answers      []Answer // the form tool's elicitation answers (elicit.go)
	Tasks        []*Task
	Deliveries   []Delivery
	Faults       []Fault
	Observations []Observation
	// Gone is what the relay of a remote gone for good saw (gone.go).
	Gone *Gone
	// Waiters are the calls the processes made to answer task tokens and
	// durable callbacks (waiters.go).
	Waiters []WaiterCall
}

// Violation is a breach of one of the seven invariants (docs/architecture.md, "The guarantees").
type Violation struct {
	Invariant int
	What      string
	// Ops, Execs and Requests point at the history around it.
	Ops      []int
	Execs    []int
	Requests []string
}

// Result is the checker's verdict.
type Result struct {
	World      *World
	Violations []Violation
	// Apart are calls started by a holder frozen past its lease after a
	// cancel answered (invariant 3: reported apart, not violations).
	Apart []Violation
	// Redelivered counts attempts of a webhook-id already accepted.
	Redelivered int
	// BoundReads counts the requests a fault hit that a read showed
	// Running after the fault's end (what the recovery bound judged);
	// Expiries the expiries judged against their due time, ExpiryLag the
	// longest wait of one past it.
	BoundReads, Expiries int
	ExpiryLag            time.Duration
}

// ByInvariant counts the violations of each invariant.
func (r *Result) ByInvariant() map[int]int {
	m := map[int]int{}
	for _, v := range r.Violations {
		m[v.Invariant]++
	}
	return m
}

type checker struct {
	in     Input
	w      *World
	execs  map[string][]Execution // by key
	byN    map[int]Execution
	res    *Result
	ridOps map[string][]int // request id → ops naming it
	// decides are the resume ops deciding a call (request id/call id);
	// paused the rounds answers showed a request Paused in. Both are read
	// once: an hour's history has tens of thousands of ops.
	decides map[string][]Op
	paused  map[string]map[int]bool
	// canceledAt is when a cancel answered 200 Canceled for a request,
	// the first time.
	canceledAt map[string]time.Time
	// gone are the requests of tasks an accepted delete removed
	// (waiters.go).
	gone map[string]goneReq
	// goneTags are the tags of the flows an accepted delete emptied.
	goneTags map[string]bool
}

// Check judges the history.
func Check(in Input) *Result {
	c := &checker{in: in, w: NewWorld(in.Tasks), execs: byKey(in.Ledger), byN: map[int]Execution{}, ridOps: map[string][]int{}}
	c.res = &Result{World: c.w}
	for _, e := range in.Ledger {
		c.byN[e.N] = e
	}
	c.decides, c.paused, c.canceledAt = map[string][]Op{}, map[string]map[int]bool{}, map[string]time.Time{}
	for _, op := range in.Ops {
		if res := op.Result(); op.Kind == OpCancel && op.Status == 200 && res != nil && res.Status == "Canceled" {
			if at, ok := c.canceledAt[res.RequestID]; !ok || op.End.Before(at) {
				c.canceledAt[res.RequestID] = op.End
			}
		}
		for _, rid := range opRequests(op) {
			c.ridOps[rid] = append(c.ridOps[rid], op.ID)
		}
		if op.Kind == OpResume && !refusedStatus(op.Status) {
			for _, d := range op.Decides {
				k := d.RequestID + "/" + d.ToolCallID
				if n := len(c.decides[k]); n == 0 || c.decides[k][n-1].ID != op.ID {
					c.decides[k] = append(c.decides[k], op)
				}
			}
		}
		if res := op.Result(); res != nil && res.Status == "Paused" && res.Round > 0 {
			if c.paused[res.RequestID] == nil {
				c.paused[res.RequestID] = map[int]bool{}
			}
			c.paused[res.RequestID][res.Round] = true
		}
	}
	c.findDeleted()
	c.atMostOnce()
	c.onlyApproved()
	c.onlyAnswered()
	c.cancelMeansCancel()
	c.historyTellsTruth()
	c.answersAgree()
	c.copiesAgree()
	c.refusalsChangeNothing()
	c.elicitAnswers()
	c.replaysWhole()
	c.nothingHangs()
	c.decidable()
	c.recoveredInBound()
	c.expiredInBound()
	c.nothingLost()
	c.remoteGone()
	c.waiters()
	c.deletes()
	return c.res
}

func (c *checker) add(inv int, reqs []string, ops []int, execs []int, format string, args ...any) {
	c.res.Violations = append(c.res.Violations, Violation{Invariant: inv, What: fmt.Sprintf(format, args...), Ops: uniq(ops), Execs: uniq(execs), Requests: reqs})
}

// uniq is a sorted copy of ns without repeats.
func uniq(ns []int) []int {
	s := append([]int(nil), ns...)
	sort.Ints(s)
	var out []int
	for i, n := range s {
		if i == 0 || n != s[i-1] {
			out = append(out, n)
		}
	}
	return out
}

var reqInPath = regexp.MustCompile(`/requests/([0-9a-f-]{36})/`)

// opRequests are the request ids an op names: in its path, its answer.
func opRequests(op Op) []string {
	var out []string
	if m := reqInPath.FindStringSubmatch(op.Path); m != nil {
		out = append(out, m[1])
	}
	if r := op.Result(); r != nil && (len(out) == 0 || out[0] != r.RequestID) {
		out = append(out, r.RequestID)
	}
	for _, d := range op.Decides {
		out = append(out, d.RequestID)
	}
	return out
}

func execNs(es []Execution) []int {
	var ns []int
	for _, e := range es {
		ns = append(ns, e.N)
	}
	return ns
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// toolName is the call's name as the model gave it, from the history, or
// from the ledger when no history shows the call.
func (c *checker) toolName(e Execution) string {
	if call := c.w.Calls[e.Key]; call != nil {
		return call.Name
	}
	return "fx_" + e.Tool
}

// down is whether proc was down (killed, stopped or restarting) at some
// moment of [from, to].
func (c *checker) down(proc string, from, to time.Time) bool {
	for _, f := range c.in.Faults {
		if f.Proc == proc && !f.Start.After(to) && (f.End.IsZero() || !f.End.Before(from)) {
			return true
		}
	}
	return false
}

// faultBetween is whether a fault of proc began in [from, to].
func (c *checker) faultBetween(proc string, from, to time.Time) bool {
	for _, f := range c.in.Faults {
		if f.Proc == proc && !f.Start.Before(from) && !f.Start.After(to) {
			return true
		}
	}
	return false
}

// remotePartRefused is whether op, a decision at a caller answered 200,
// may have had its part for call refused by the leaf's own system: call is
// a leaf's on the other system, decided or canceled there before op was
// answered. A caller's part for a remote leaf is sent after the caller's
// commit, and a decision (or a cancel) taken on the remote system before
// it arrives refuses it (docs/api.md, Agents as tools): the caller's
// answer then reports the chain's outcome, not that part. A leaf decision
// taken after op was answered is still held to it.
func (c *checker) remotePartRefused(op Op, call *Call) bool {
	if op.Status != 200 || call.Req.Proc == op.Proc {
		return false
	}
	if r := op.Result(); r != nil && r.Status == "Paused" && call.Decision == nil && c.down(call.Req.Proc, op.Start, op.End) {
		// The leaf's system was down while the part was to be sent: the
		// caller paused again on that call alone (docs/api.md, Agents as
		// tools), its 200 Paused claiming nothing of it (seed 673102469).
		return true
	}
	if d := call.Decision; d != nil {
		return d.Approver != ApproverExpiry && d.DecidedAt.Before(op.End)
	}
	at, ok := c.canceledAt[call.Req.ID]
	return ok && at.Before(op.End)
}

// refusedStatus is whether an answer refused its body: such a decision
// took no effect, so it counts as no one's approval or answer.
func refusedStatus(status int) bool {
	return status == 400 || status == 413 || status == 422
}

// 5, for bodies the API must refuse: a malformed or contradictory body,
// or one deciding a call wrongly beside valid decisions of the others, is
// answered 4xx and changes nothing — no decision is recorded at its level
// between the reads just before and just after it.
func (c *checker) refusalsChangeNothing() {
	for _, op := range c.in.Ops {
		if !op.Refuse || op.Status == 0 {
			continue
		}
		rids := opRequests(op)
		if op.Status < 300 {
			c.add(5, rids, []int{op.ID}, nil, "a body the API must refuse (%s) was answered %d: %s", op.Note, op.Status, clip(op.Resp, 300))
			continue
		}
		if op.Before != "" && op.After != "" && op.Before != op.After && !c.copiedMeanwhile(op) {
			c.add(5, rids, []int{op.ID}, nil, "a body answered %d %s (%s) changed the decisions recorded at its level: before %s; after %s",
				op.Status, op.ErrorCode(), op.Note, op.Before, op.After)
		}
	}
}

// copiedMeanwhile is whether what changed at a refused body's level
// between the reads around it is only copies of decisions taken at other
// levels' own URLs before the read after it (a caller records its copy of
// a leaf's decision when its continuation runs): every decision added
// names only calls another accepted resume of another task decided the
// same way, and none was removed.
func (c *checker) copiedMeanwhile(op Op) bool {
	before, after := decisionLines(op.Before), decisionLines(op.After)
	for l := range before {
		if !after[l] {
			return false
		}
	}
	task := ""
	if m := taskInPath.FindStringSubmatch(op.Path); m != nil {
		task = m[1]
	}
	for l := range after {
		if before[l] {
			continue
		}
		_, calls, ok := strings.Cut(l, ":")
		if !ok {
			return false
		}
		for _, call := range strings.Fields(calls) {
			id, action, _ := strings.Cut(call, "=")
			if !c.decidedElsewhere(task, id, action, op.End.Add(time.Second)) {
				return false
			}
		}
	}
	return true
}

// decidedElsewhere is whether an accepted resume of a task other than
// task, started before by, decided call id with action.
func (c *checker) decidedElsewhere(task, id, action string, by time.Time) bool {
	for _, o := range c.in.Ops {
		if o.Kind != OpResume || o.Status < 200 || o.Status >= 300 || !o.Start.Before(by) || strings.Contains(o.Path, "/"+task+"/") {
			continue
		}
		for _, d := range o.Decides {
			if d.ToolCallID == id && d.Action == action {
				return true
			}
		}
	}
	return false
}

// decisionLines are the lines of a level's decisions as userDecisions
// writes them ("N decisions: a; b").
func decisionLines(s string) map[string]bool {
	out := map[string]bool{}
	_, rest, _ := strings.Cut(s, ": ")
	for _, l := range strings.Split(rest, "; ") {
		if l != "" {
			out[l] = true
		}
	}
	return out
}

// 7, for event streams: a replay holds every event after its id once, in
// order, and ends with the leg's request_complete or error; two replays of
// one request agree (docs/api.md, Server-Sent Events).
func (c *checker) replaysWhole() {
	for _, op := range c.in.Ops {
		if op.Kind == OpReplay && op.Problem != "" {
			c.add(7, opRequests(op), []int{op.ID}, nil, "a replay of the events of %s was not whole: %s", short(reqOfPath(op.Path)), op.Problem)
		}
	}
}

var reqInEventsPath = regexp.MustCompile(`/requests/([0-9a-f-]{36})/events`)

// reqOfPath is the request an events path names.
func reqOfPath(path string) string {
	if m := reqInEventsPath.FindStringSubmatch(path); m != nil {
		return m[1]
	}
	return path
}

// clip cuts s to n bytes for a report.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// 1. At most once.
func (c *checker) atMostOnce() {
	for _, key := range sortedKeys(c.execs) {
		es := c.execs[key]
		if len(es) < 2 {
			continue
		}
		name := c.toolName(es[0])
		if !IdempotentTools[name] {
			c.add(1, []string{es[0].RequestID}, c.ridOps[es[0].RequestID], execNs(es),
				"%s (tag %s, not idempotent) ran %d times under one call %s", name, es[0].Tag, len(es), key)
			continue
		}
		for i := 1; i < len(es); i++ {
			if !c.faultBetween(es[i-1].Process, es[i-1].Start, es[i].Start) {
				c.add(1, []string{es[0].RequestID}, c.ridOps[es[0].RequestID], execNs(es[i-1:i+1]),
					"idempotent %s (tag %s) ran again (#%d after #%d) with no fault of its process between: no takeover can have found it outcome_unknown", name, es[0].Tag, es[i].N, es[i-1].N)
			}
		}
	}
	byTag := map[string][]Execution{}
	for _, e := range c.in.Ledger {
		if e.Tag != "" {
			byTag[e.Tag] = append(byTag[e.Tag], e)
		}
	}
	for _, tag := range sortedKeys(byTag) {
		keys := map[string]bool{}
		var rids []string
		for _, e := range byTag[tag] {
			if !keys[e.Key] {
				rids = append(rids, e.RequestID)
			}
			keys[e.Key] = true
		}
		if len(keys) > 1 {
			var ops []int
			for _, rid := range rids {
				ops = append(ops, c.ridOps[rid]...)
			}
			c.add(1, rids, ops, execNs(byTag[tag]),
				"the call tagged %s ran under %d different calls (%s): a message or a sub-agent call was run twice", tag, len(keys), strings.Join(sortedKeys(keys), ", "))
		}
	}
}

// decidingOps are the resume ops that decide call with one of actions.
func (c *checker) decidingOps(call *Call, actions ...string) []Op {
	var out []Op
	for _, op := range c.decides[call.Req.ID+"/"+call.ID] {
		for _, d := range op.Decides {
			if d.RequestID == call.Req.ID && d.ToolCallID == call.ID {
				for _, a := range actions {
					if d.Action == a {
						out = append(out, op)
					}
				}
			}
		}
	}
	return out
}

// 2. Only what was approved.
func (c *checker) onlyApproved() {
	for _, e := range c.in.Ledger {
		call := c.w.Calls[e.Key]
		if call == nil || !ApprovalTools[call.Name] {
			continue
		}
		rid := call.Req.ID
		ops := c.ridOps[rid]
		d := call.Decision
		switch {
		case d == nil:
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran, but no decision on it is recorded", call.Name, e.Tag)
			continue
		case d.Approver == ApproverExpiry:
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran, though its round %d closed by expiry", call.Name, e.Tag, d.Round)
			continue
		case d.Action == "reject":
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran, though its recorded decision is a rejection by %s", call.Name, e.Tag, d.Approver)
			continue
		}
		if e.Start.Before(d.DecidedAt.Add(-time.Millisecond)) {
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran at %s, before its approval was decided at %s",
				call.Name, e.Tag, e.Start.Format(time.RFC3339Nano), d.DecidedAt.Format(time.RFC3339Nano))
		}
		if q := QuorumTools[call.Name]; q > 0 {
			c.quorumApproved(call, e, q)
		}
		want := call.V
		if d.Action == "edit" {
			want = d.V
		}
		if e.Value != want {
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran with v=%q, but what was approved (%s) has v=%q", call.Name, e.Tag, e.Value, d.Action, want)
		}
		sent := false
		for _, op := range c.decidingOps(call, "approve", "edit") {
			if !op.Start.After(e.Start) {
				sent = true
			}
		}
		if !sent {
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran, but no client had sent an approval of it yet", call.Name, e.Tag)
		}
		for _, op := range c.decidingOps(call, "reject") {
			if op.Status == 200 && !c.remotePartRefused(op, call) {
				if r := op.Result(); r != nil && r.Status != "Running" {
					c.add(2, []string{rid}, []int{op.ID}, []int{e.N}, "%s (tag %s) ran, though its rejection was answered 200 %s (op #%d)", call.Name, e.Tag, r.Status, op.ID)
				}
			}
		}
		for _, op := range c.decidingOps(call, "approve", "edit", "reject") {
			if op.Status == 410 && e.Start.After(op.End) {
				c.add(2, []string{rid}, []int{op.ID}, []int{e.N}, "%s (tag %s) ran after a decision on it was answered 410 %s (op #%d)", call.Name, e.Tag, op.ErrorCode(), op.ID)
			}
		}
	}
}

// quorumApproved is onlyApproved's part for a call that needs q
// approvals with four eyes: the recorded decision names q distinct people,
// never the requester (User), each of whom had sent an approval of it
// before it ran.
func (c *checker) quorumApproved(call *Call, e Execution, q int) {
	rid := call.Req.ID
	ops := c.ridOps[rid]
	d := call.Decision
	people := map[string]bool{}
	for _, by := range d.Approvers {
		people[by] = true
	}
	if people[User] {
		c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran with an approval by its requester %s (four eyes)", call.Name, e.Tag, User)
	}
	if len(people) < q {
		c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran with %d approvals (%s) of the %d it needs", call.Name, e.Tag, len(people), strings.Join(sortedKeys(people), ", "), q)
	}
	for _, by := range sortedKeys(people) {
		sent := false
		for _, op := range c.decidingOps(call, "approve", "edit") {
			if userOf(op) == by && !op.Start.After(e.Start) {
				sent = true
			}
		}
		if !sent {
			c.add(2, []string{rid}, ops, []int{e.N}, "%s (tag %s) ran with an approval by %s, who had sent none before it ran", call.Name, e.Tag, by)
		}
	}
}

// onlyApproved's part for questions (invariants 1 and 2): an answer
// reaches the model once, and only as an answer a client sent and the
// leaf recorded.
func (c *checker) onlyAnswered() {
	for _, r := range c.w.Order {
		for _, call := range r.Calls {
			if inputTool(call.Name) {
				c.answeredOnce(call)
			}
		}
	}
}

func (c *checker) answeredOnce(call *Call) {
	{
		rid := call.Req.ID
		if call.Results > 1 {
			c.add(1, []string{rid}, c.ridOps[rid], nil, "the question %s of %s %s has %d results in the history", call.Tag, call.Req.Agent, short(rid), call.Results)
		}
		if call.Result == nil || call.Result.Status != "success" {
			return
		}
		d := call.Decision
		if d == nil || d.Action != "answer" {
			c.add(2, []string{rid}, c.ridOps[rid], nil, "the question %s of %s %s has the answer %q, but no answer is recorded", call.Tag, call.Req.Agent, short(rid), call.ResultText)
			return
		}
		if d.V != call.ResultText {
			c.add(2, []string{rid}, c.ridOps[rid], nil, "the question %s of %s %s reached the model as %q, but the answer recorded is %q", call.Tag, call.Req.Agent, short(rid), call.ResultText, d.V)
		}
		sent := false
		for _, op := range c.decidingOps(call, "answer") {
			for _, dd := range op.Decides {
				if dd.RequestID == rid && dd.ToolCallID == call.ID && dd.V == call.ResultText {
					sent = true
				}
			}
		}
		if !sent {
			c.add(2, []string{rid}, c.ridOps[rid], nil, "the question %s of %s %s reached the model as %q, which no client sent", call.Tag, call.Req.Agent, short(rid), call.ResultText)
		}
	}
}

// frozen is whether e may have been started by a holder frozen past its
// lease when the cancel answered at t: its process was stopped before t and
// the call started right after it was continued.
func (c *checker) frozen(e Execution, t time.Time) bool {
	for _, f := range c.in.Faults {
		if f.Proc == e.Process && (f.Kind == FaultStallCont) && !f.Start.After(t) &&
			!e.Start.Before(f.End.Add(-100*time.Millisecond)) && e.Start.Sub(f.End) < 3*time.Second {
			return true
		}
	}
	return false
}

// 3. Cancel means cancel.
func (c *checker) cancelMeansCancel() {
	byReq := map[string][]Execution{}
	for _, e := range c.in.Ledger {
		byReq[e.RequestID] = append(byReq[e.RequestID], e)
	}
	for _, op := range c.in.Ops {
		if op.Kind != OpCancel || op.Status != 200 {
			continue
		}
		res := op.Result()
		if res == nil || res.Status != "Canceled" {
			continue
		}
		r := c.w.Reqs[res.RequestID]
		if r == nil && c.isGone(res.RequestID) {
			continue
		}
		if r == nil {
			c.add(3, []string{res.RequestID}, []int{op.ID}, nil, "a cancel answered 200 Canceled for request %s, which no task shows", res.RequestID)
			continue
		}
		for _, below := range r.Below() {
			for _, e := range byReq[below.ID] {
				if !e.Start.After(op.End) {
					continue
				}
				v := Violation{Invariant: 3, Ops: uniq(append([]int{op.ID}, c.ridOps[below.ID]...)), Execs: []int{e.N}, Requests: []string{r.ID, below.ID},
					What: fmt.Sprintf("%s (tag %s) of %s %s started %s after the cancel of %s %s answered 200 Canceled (op #%d)",
						c.toolName(e), e.Tag, below.Agent, short(below.ID), e.Start.Sub(op.End).Round(time.Millisecond), r.Agent, short(r.ID), op.ID)}
				if c.frozen(e, op.End) {
					v.What += " — by a holder frozen past its lease"
					c.res.Apart = append(c.res.Apart, v)
				} else {
					c.res.Violations = append(c.res.Violations, v)
				}
			}
			if !below.Finished() {
				c.add(3, []string{r.ID, below.ID}, append([]int{op.ID}, c.ridOps[below.ID]...), nil,
					"%s %s is %s, below %s %s whose cancel answered 200 Canceled (op #%d)", below.Agent, short(below.ID), below.Status, r.Agent, short(r.ID), op.ID)
			}
		}
	}
}

// short is the tail of an id, enough to tell ids apart in a report.
func short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

var notRunPrefixes = []string{"not run", "rejected by", "approval expired", "input expired", "the approval of"}

// claimsNotRun is whether a result says its call did not run.
func claimsNotRun(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range notRunPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// agentCallsTellTruth holds invariant 4 for agent calls (local and
// remote): a result saying "not run" belongs to a call whose child never
// ran — no child request completed, and no tool ran anywhere below it.
// An expiry's result ("approval expired …", "input expired …") names the
// round that expired below, where tools may have run before it paused: it
// is the truth when the child itself ended by an expiry, and a lie when
// the child did not (decided at its own URL while the chain expired, it
// ran and ended otherwise: seed 124578079).
func (c *checker) agentCallsTellTruth() {
	ran := map[string][]int{}
	for _, e := range c.in.Ledger {
		ran[e.RequestID] = append(ran[e.RequestID], e.N)
	}
	for _, r := range c.w.Order {
		for _, call := range r.Calls {
			if call.Message == "" || call.Result == nil {
				continue
			}
			text := strings.TrimSpace(call.ResultText)
			expiry := strings.HasPrefix(text, "approval expired") || strings.HasPrefix(text, "input expired")
			if !strings.HasPrefix(text, "not run") && !expiry {
				continue
			}
			for _, ch := range r.Children {
				if ch.ParentCall != call.ID {
					continue
				}
				if expiry && ch.Status == "Failed" && (ch.ErrorCode == "approval_expired" || ch.ErrorCode == "input_expired") {
					continue // its own end is the expiry
				}
				var execs []int
				completed := ""
				for _, below := range ch.Below() {
					execs = append(execs, ran[below.ID]...)
					if below == ch && below.Status == "Completed" {
						completed = " and completed"
					}
				}
				if len(execs) > 0 || completed != "" {
					c.add(4, []string{r.ID, ch.ID}, append(c.ridOps[r.ID], c.ridOps[ch.ID]...), execs,
						"the history of %s %s says its call of %s %q, but the child %s ran (%d tool runs below it%s)",
						r.Agent, short(r.ID), call.Name, firstLine(call.ResultText), short(ch.ID), len(execs), completed)
				}
			}
		}
	}
}

var markerRE = regexp.MustCompile(`ran #(\d+);`)

// 4. The history tells the truth.
func (c *checker) historyTellsTruth() {
	for _, r := range c.w.Order {
		for _, call := range r.Calls {
			if call.Result == nil || call.Tag == "" || inputTool(call.Name) {
				continue
			}
			es := c.execs[call.Key()]
			ops := c.ridOps[r.ID]
			if claimsNotRun(call.ResultText) && len(es) > 0 {
				c.add(4, []string{r.ID}, ops, execNs(es), "the history of %s %s says %s (tag %s) %q, but it ran (#%d)",
					r.Agent, short(r.ID), call.Name, call.Tag, firstLine(call.ResultText), es[0].N)
			}
			if call.Result.Status != "success" {
				continue
			}
			m := markerRE.FindStringSubmatch(call.ResultText)
			if m == nil {
				c.add(4, []string{r.ID}, ops, nil, "the history of %s %s has a success result for %s (tag %s) that no run of the tool produced: %q",
					r.Agent, short(r.ID), call.Name, call.Tag, firstLine(call.ResultText))
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if e, ok := c.byN[n]; !ok || e.Key != call.Key() {
				c.add(4, []string{r.ID}, ops, []int{n}, "the history of %s %s gives %s (tag %s) the result of run #%d, which is another call's", r.Agent, short(r.ID), call.Name, call.Tag, n)
			}
		}
	}
	c.agentCallsTellTruth()
	for _, e := range c.in.Ledger {
		call := c.w.Calls[e.Key]
		if call == nil && (c.isGone(e.RequestID) || c.goneByTag(e.RequestID, e.Tag)) {
			continue
		}
		if call == nil {
			c.add(4, []string{e.RequestID}, c.ridOps[e.RequestID], []int{e.N}, "%s (tag %s) ran as %s, a call no history shows", e.Tool, e.Tag, e.Key)
			continue
		}
		if call.Result == nil && call.Req.Finished() {
			c.add(4, []string{call.Req.ID}, c.ridOps[call.Req.ID], []int{e.N}, "%s (tag %s) ran, but %s %s ended %s with no result for it",
				call.Name, e.Tag, call.Req.Agent, short(call.Req.ID), call.Req.Status)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// outcome is what an answer says of its request's outcome: "" when it says
// nothing of it (no answer, 202 / Running, a lost or unsaved request).
func outcome(op Op) string {
	r := op.Result()
	if r == nil || r.Status == "Running" || op.Status == 202 || op.Status == 503 || recorded(op) {
		return ""
	}
	switch r.Status {
	case "Paused":
		return fmt.Sprintf("Paused round %d", r.Round)
	case "Failed":
		if r.Error != nil {
			// Not outcomes: the request could not be saved (the same call
			// again finishes it), or its process died (request_lost, even
			// in a 200 body: the same call again takes it over).
			if r.Error.Code == "internal" || r.Error.Code == "request_lost" {
				return ""
			}
			return "Failed " + r.Error.Code
		}
	}
	return r.Status
}

// recorded tells whether op's answer records its decision without
// settling the round (an approval short of a call's quorum, or the share
// of a sender while others' calls still wait: docs/api.md, "Approvers"):
// Paused, a call it decides still pending beside a call that needs
// approvals. That is no outcome: the round's is whatever settles it. (A call asking again in a later round
// keeps its id: an elicitation's answers are judged apart.)
func recorded(op Op) bool {
	r := op.Result()
	if op.Kind != OpResume || r == nil || r.Status != "Paused" {
		return false
	}
	shown := append(slices.Clone(r.Pending), r.Inputs...)
	if !slices.ContainsFunc(shown, func(p PendingView) bool { return p.Needed > 0 }) {
		return false // no call waits for approvals: a pause of its own
	}
	for _, d := range op.Decides {
		if d.ElicitRound > 0 {
			continue
		}
		if slices.ContainsFunc(shown, func(p PendingView) bool { return p.ToolCallID == d.ToolCallID }) {
			return true
		}
	}
	return false
}

// userOf is the user id of an op's bearer token (dev auth: before
// ";groups=").
func userOf(op Op) string {
	u, _, _ := strings.Cut(cmp.Or(op.User, OwnerToken), ";")
	return u
}

func canonical(body string) string {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return body
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// 5. Answers agree.
func (c *checker) answersAgree() {
	groups := map[string][]Op{}
	for _, op := range c.in.Ops {
		if op.Kind == OpResume {
			k := op.Proc + " " + userOf(op) + " " + op.Path + " " + canonical(op.Body)
			groups[k] = append(groups[k], op)
		}
	}
	for _, k := range sortedKeys(groups) {
		ops := groups[k]
		seen := map[string]int{}
		var ids []int
		var applied *Op
		for i, op := range ops {
			ids = append(ids, op.ID)
			if o := outcome(op); o != "" {
				if _, ok := seen[o]; !ok {
					seen[o] = op.ID
				}
				if op.Status == 200 && applied == nil {
					applied = &ops[i]
				}
			}
		}
		rids := opRequests(ops[0])
		if len(seen) > 1 {
			var parts []string
			for _, o := range sortedKeys(seen) {
				parts = append(parts, fmt.Sprintf("%s (op #%d)", o, seen[o]))
			}
			c.add(5, rids, ids, nil, "answers to the same decision disagree: %s", strings.Join(parts, ", "))
		}
		if applied != nil {
			for _, op := range ops {
				if op.ErrorCode() == "decision_conflict" {
					c.add(5, rids, []int{applied.ID, op.ID}, nil, "the same decision was answered %s (op #%d) and 409 decision_conflict (op #%d)", outcome(*applied), applied.ID, op.ID)
				}
			}
		}
	}
	for _, op := range c.in.Ops {
		o := outcome(op)
		if o == "" {
			continue
		}
		res := op.Result()
		if Terminal(res.Status) {
			r := c.w.Reqs[res.RequestID]
			if r == nil && c.isGone(res.RequestID) {
				if g := c.gone[res.RequestID]; g.status != "" && Terminal(g.status) && finalOutcome(&Req{Status: g.status, ErrorCode: g.code}) != o {
					c.add(5, []string{res.RequestID}, []int{op.ID, g.op}, nil, "op #%d answered %s for %s, but the read before its task's delete showed %s", op.ID, o, short(res.RequestID), g.status)
				}
			} else if r == nil {
				c.add(5, []string{res.RequestID}, []int{op.ID}, nil, "op #%d answered %s for request %s, which no task shows", op.ID, o, res.RequestID)
			} else if got := finalOutcome(r); got != o {
				c.add(5, []string{r.ID}, append([]int{op.ID}, c.ridOps[r.ID]...), nil, "op #%d answered %s for %s %s, but GET task shows %s", op.ID, o, r.Agent, short(r.ID), got)
			}
		}
		if op.Kind != OpResume {
			continue
		}
		for _, d := range op.Decides {
			call := c.w.Calls[d.RequestID+"#"+d.ToolCallID]
			if d.ElicitRound > 0 {
				continue // one call, several rounds: elicitAnswers
			}
			if call == nil || c.remotePartRefused(op, call) {
				continue
			}
			switch {
			case op.Status == 200 && res.Status != "Canceled" && call.Decision == nil:
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (%s of %s, tag %s) answered %s, but no decision on the call is recorded", op.ID, d.Action, call.Name, call.Tag, o)
			case op.Status == 200 && call.Decision != nil && call.Decision.Action != d.Action && !approvedAsEdited(call, d):
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (%s of %s, tag %s) answered %s, but the recorded decision is %s by %s", op.ID, d.Action, call.Name, call.Tag, o, call.Decision.Action, call.Decision.Approver)
			case op.Status == 200 && call.Decision != nil && d.Action == "answer" && call.Decision.V != d.V:
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (the answer %q to the question %s) answered %s, but the recorded answer is %q", op.ID, d.V, call.Tag, o, call.Decision.V)
			case op.Status == 410 && call.Decision != nil && call.Decision.Approver != ApproverExpiry && call.Decision.Action != d.Action:
				// (A 410 whose body is the request's RequestResult with the
				// same decision recorded is an outcome: the decision was
				// taken, and a later round of the chain expired before the
				// leg ended (docs/api.md, "The outcome: RequestResult": a
				// Failed approval_expired outcome answers 410).
				c.add(5, []string{d.RequestID}, append([]int{op.ID}, c.ridOps[d.RequestID]...), nil,
					"op #%d (%s of %s, tag %s) answered 410, but the recorded decision is %s by %s", op.ID, d.Action, call.Name, call.Tag, call.Decision.Action, call.Decision.Approver)
			}
		}
	}
}

// approvedAsEdited tells whether d approves a call that an earlier
// decision of its round edited (a quorum's first decision): the recorded
// decision is that edit, which d approved (docs/api.md, "Approvers").
func approvedAsEdited(call *Call, d CallDecision) bool {
	return d.Action == "approve" && call.Decision.Action == "edit" && QuorumTools[call.Name] > 0
}

// finalOutcome is a request's outcome as the final state shows it, in the
// form outcome gives.
func finalOutcome(r *Req) string {
	if r.Status == "Failed" {
		return "Failed " + r.ErrorCode
	}
	return r.Status
}

// 6. Nothing hangs.
func (c *checker) nothingHangs() {
	for _, r := range c.w.Order {
		ops := c.ridOps[r.ID]
		switch r.Status {
		case "Running":
			c.add(6, []string{r.ID}, ops, nil, "%s %s (%s) is still Running after the quiet period", r.Agent, short(r.ID), r.Proc)
		case "Paused":
			t := r.Task
			if len(t.WaitingOn) > 0 {
				for _, wo := range t.WaitingOn {
					leaf := c.w.Reqs[wo.RequestID]
					switch {
					case leaf == nil:
						c.add(6, []string{r.ID, wo.RequestID}, ops, nil, "%s %s waits on %s %s, which no task shows", r.Agent, short(r.ID), wo.Agent, short(wo.RequestID))
					case leaf.Status != "Paused":
						c.add(6, []string{r.ID, leaf.ID}, append(ops, c.ridOps[leaf.ID]...), nil, "%s %s is Paused waiting on %s %s, which is %s: nothing can decide it",
							r.Agent, short(r.ID), leaf.Agent, short(leaf.ID), leaf.Status)
					}
				}
			} else if len(t.Pending) == 0 && len(t.Inputs) == 0 {
				c.add(6, []string{r.ID}, ops, nil, "%s %s is Paused with nothing to decide", r.Agent, short(r.ID))
			}
		}
		if r.Parent == nil && r.Finished() {
			for _, below := range r.Below()[1:] {
				if !below.Finished() {
					c.add(6, []string{r.ID, below.ID}, append(ops, c.ridOps[below.ID]...), nil, "%s %s (%s) is %s below the root %s %s, which ended %s",
						below.Agent, short(below.ID), below.Proc, below.Status, r.Agent, short(r.ID), r.Status)
				}
			}
		}
	}
}

var webhookStatus = map[string]string{
	"request.completed": "Completed", "request.failed": "Failed", "request.canceled": "Canceled",
}

// 7. Nothing is lost.
func (c *checker) nothingLost() {
	for _, op := range c.in.Ops {
		if op.Kind != OpInvoke && op.Kind != OpFollow && op.Kind != OpEdit {
			continue
		}
		if r := op.Result(); r != nil && c.w.Reqs[r.RequestID] == nil && !c.isGone(r.RequestID) {
			c.add(7, []string{r.RequestID}, []int{op.ID}, nil, "op #%d created request %s, which no task shows", op.ID, r.RequestID)
		}
	}
	// Exactly one outcome.
	outcomes := map[string]map[string]string{} // request → status → where
	note := func(rid, status, where string) {
		if outcomes[rid] == nil {
			outcomes[rid] = map[string]string{}
		}
		if _, ok := outcomes[rid][status]; !ok {
			outcomes[rid][status] = where
		}
	}
	for _, op := range c.in.Ops {
		if r := op.Result(); r != nil && Terminal(r.Status) && outcome(op) != "" {
			note(r.RequestID, r.Status, fmt.Sprintf("op #%d", op.ID))
		}
	}
	for _, d := range c.in.Deliveries {
		if s, ok := webhookStatus[d.Type]; ok && d.Verified {
			note(d.RequestID, s, "webhook "+d.ID)
		}
	}
	for _, r := range c.w.Order {
		if r.Finished() {
			note(r.ID, r.Status, "GET task")
		}
	}
	for _, rid := range sortedKeys(outcomes) {
		if len(outcomes[rid]) > 1 {
			var parts []string
			for _, s := range sortedKeys(outcomes[rid]) {
				parts = append(parts, s+" ("+outcomes[rid][s]+")")
			}
			c.add(7, []string{rid}, c.ridOps[rid], nil, "request %s has more than one outcome: %s", short(rid), strings.Join(parts, ", "))
		}
	}
	c.webhooks()
}

// webhookItem is one notification (one webhook-id) of a request.
type webhookItem struct {
	id, typ       string
	round         int
	requestID     string
	firstStart    time.Time
	firstAccepted time.Time
	accepted      bool
	// redelivered counts the attempts after the first accepted one.
	redelivered int
}

func (it *webhookItem) rank() int {
	if it.typ == "request.paused" {
		return it.round
	}
	return 1 << 30
}

func (c *checker) webhooks() {
	items := map[string]*webhookItem{} // proc/id
	byReq := map[string][]*webhookItem{}
	for _, d := range c.in.Deliveries {
		if !d.Verified {
			c.add(7, []string{d.RequestID}, nil, nil, "a webhook from %s (id %s) does not verify: %s", d.Proc, d.ID, d.Problem)
			continue
		}
		k := d.Proc + "/" + d.ID
		it := items[k]
		if it == nil {
			it = &webhookItem{id: d.ID, typ: d.Type, round: d.Round, firstStart: d.Start, requestID: d.RequestID}
			items[k] = it
			byReq[d.Proc+"/"+d.RequestID] = append(byReq[d.Proc+"/"+d.RequestID], it)
		}
		if d.Accepted() {
			if it.accepted {
				c.res.Redelivered++
				it.redelivered++
			} else {
				it.accepted, it.firstAccepted = true, d.End
			}
		}
	}
	has := func(r *Req, typ string, round int) bool {
		for _, it := range byReq[r.Proc+"/"+r.ID] {
			if it.typ == typ && it.accepted && (typ != "request.paused" || it.round == round) {
				return true
			}
		}
		return false
	}
	for _, k := range sortedKeys(items) {
		// At least once is the promise; more than one redelivery of an item
		// already accepted is not a lost answer but a loop.
		if it := items[k]; it.redelivered > 1 {
			c.add(7, []string{it.requestID}, c.ridOps[it.requestID], nil, "webhook %s (%s of %s) was delivered again %d times after a 2xx", it.id, it.typ, short(it.requestID), it.redelivered)
		}
	}
	for _, rid := range sortedKeys(c.gone) {
		// A task deleted once it ended: its end's webhook still goes out.
		g := c.gone[rid]
		if !Terminal(g.status) || !c.isGone(rid) {
			continue
		}
		typ := "request." + strings.ToLower(g.status)
		found := false
		for _, d := range c.in.Deliveries {
			if d.RequestID == rid && d.Type == typ && d.Verified && d.Accepted() {
				found = true
			}
		}
		if !found {
			c.add(7, []string{rid}, append([]int{g.op}, c.ridOps[rid]...), nil, "no %s webhook was delivered for %s, which ended before the delete of its task (op #%d)", typ, short(rid), g.op)
		}
	}
	for _, r := range c.w.Order {
		ops := c.ridOps[r.ID]
		if r.Finished() {
			typ := "request." + strings.ToLower(r.Status)
			if !has(r, typ, 0) {
				c.add(7, []string{r.ID}, ops, nil, "no %s webhook was delivered for %s %s (%s)", typ, r.Agent, short(r.ID), r.Proc)
			}
		}
		rounds := map[int]bool{}
		for _, d := range r.Decisions {
			rounds[d.Round] = true
		}
		if r.Status == "Paused" && r.Task.Round > 0 {
			rounds[r.Task.Round] = true
		}
		for n := range c.paused[r.ID] {
			rounds[n] = true
		}
		var rs []int
		for n := range rounds {
			rs = append(rs, n)
		}
		sort.Ints(rs)
		for _, n := range rs {
			if !has(r, "request.paused", n) {
				c.add(7, []string{r.ID}, ops, nil, "no request.paused webhook was delivered for round %d of %s %s (%s)", n, r.Agent, short(r.ID), r.Proc)
			}
		}
	}
	for _, k := range sortedKeys(byReq) {
		its := byReq[k]
		sort.Slice(its, func(i, j int) bool { return its[i].firstStart.Before(its[j].firstStart) })
		seen := map[string]string{}
		for _, it := range its {
			sig := fmt.Sprintf("%s round %d", it.typ, it.round)
			if it.typ != "request.paused" {
				sig = "end"
			}
			if prev, ok := seen[sig]; ok {
				c.add(7, []string{it.requestID}, c.ridOps[it.requestID], nil, "two webhooks (%s, %s) for one commit of %s: %s", prev, it.id, short(it.requestID), sig)
			}
			seen[sig] = it.id
		}
		for i, a := range its {
			for _, b := range its[i+1:] {
				if a.rank() < b.rank() && (!a.accepted || b.firstStart.Before(a.firstAccepted)) {
					c.add(7, []string{a.requestID}, c.ridOps[a.requestID], nil, "%s of %s (round %d) was delivered before %s (round %d), committed earlier, was accepted",
						b.typ, short(b.requestID), b.round, a.typ, a.round)
				}
				if a.rank() > b.rank() {
					c.add(7, []string{a.requestID}, c.ridOps[a.requestID], nil, "%s (round %d) of %s was delivered before %s (round %d), committed earlier",
						a.typ, a.round, short(a.requestID), b.typ, b.round)
				}
			}
		}
	}
}

// leafVerdict is one decision a request records on one of its calls.
type leafVerdict struct {
	d  Decision
	dc DecisionCall
}

// verdicts are the decisions r records on its call id (an MCP call that
// asks again is decided once in each round it asks).
func verdicts(r *Req, id string) []leafVerdict {
	var out []leafVerdict
	for _, d := range r.Decisions {
		for _, dc := range d.Calls {
			if dc.ToolCallID == id {
				out = append(out, leafVerdict{d, dc})
			}
		}
	}
	return out
}

// sameDecision is whether a caller's copy of a call's decision is the
// leaf's: the same action, the same edited input, the same answer (by its
// hash, which is all a copy keeps).
func sameDecision(copy, leaf DecisionCall) bool {
	if copy.Action != leaf.Action {
		return false
	}
	switch copy.Action {
	case "edit":
		return canonical(string(copy.Input)) == canonical(string(leaf.Input))
	case "answer":
		return copy.ResultHash == "" || leaf.ResultHash == "" || copy.ResultHash == leaf.ResultHash
	}
	return true
}

// leafOf is the request below caller holding the call id (nil when none:
// a call of the caller's own).
func leafOf(caller *Req, id string) *Call {
	for _, below := range caller.Below()[1:] {
		for _, call := range below.Calls {
			if call.ID == id {
				return call
			}
		}
	}
	return nil
}

// refusedThere is whether the leaf's own system may have refused the part
// a caller sent it of a decision on call (docs/api.md, Agents as tools): the
// leaf is on the other system, and what it records there was decided
// there — by a client at that system or by its expiry — before a decision
// at a caller (on the caller's system) naming the call was answered.
func (c *checker) refusedThere(caller *Req, call *Call, leaf leafVerdict) bool {
	if call.Req.Proc == caller.Proc {
		return false
	}
	var atCaller []Op
	for _, op := range c.decides[call.Req.ID+"/"+call.ID] {
		if op.Proc != call.Req.Proc {
			atCaller = append(atCaller, op)
		}
	}
	there := leaf.d.Approver == ApproverExpiry
	for _, op := range c.decides[call.Req.ID+"/"+call.ID] {
		for _, d := range op.Decides {
			if op.Proc == call.Req.Proc && d.RequestID == call.Req.ID && d.ToolCallID == call.ID && d.Action == leaf.dc.Action {
				there = true
			}
		}
	}
	if !there {
		return false
	}
	for _, op := range atCaller {
		if leaf.d.DecidedAt.Before(op.End) || op.Status == 0 {
			return true
		}
	}
	return false
}

// 5, across copies: the decision a caller records for a leaf's call (its
// copy of the leaf's round, docs/api.md "Agents as tools") is the one the
// leaf records — the same action, edited input and answer. A local leaf
// is decided in the caller's transaction (or the caller copies the leaf's
// record when it goes on), so a copy without the leaf's decision is one
// too; a remote leaf's part is sent after the caller's commit, and one
// decided on its own system before the part arrived records its own
// decision (refusedThere), or none when it was canceled there.
func (c *checker) copiesAgree() {
	for _, r := range c.w.Order {
		if len(r.Children) == 0 {
			continue
		}
		for _, d := range r.Decisions {
			for _, dc := range d.Calls {
				call := leafOf(r, dc.ToolCallID)
				if call == nil {
					continue
				}
				leaf := call.Req
				vs := verdicts(leaf, call.ID)
				rids := []string{r.ID, leaf.ID}
				ops := append(append([]int(nil), c.ridOps[r.ID]...), c.ridOps[leaf.ID]...)
				if len(vs) == 0 {
					if leaf.Proc == r.Proc && d.Approver != ApproverExpiry {
						c.add(5, rids, ops, nil, "%s %s records %s of %s (tag %s) in its round %d by %s, but the leaf %s %s records no decision on it",
							r.Agent, short(r.ID), dc.Action, call.Name, call.Tag, d.Round, d.Approver, leaf.Agent, short(leaf.ID))
					}
					continue
				}
				agree, refused := false, false
				for _, v := range vs {
					if sameDecision(dc, v.dc) {
						agree = true
					} else if c.refusedThere(r, call, v) {
						refused = true
					}
				}
				if !agree && !refused {
					v := vs[len(vs)-1]
					c.add(5, rids, ops, nil, "%s %s records %s%s of %s (tag %s) in its round %d by %s, but the leaf %s %s records %s%s in its round %d by %s",
						r.Agent, short(r.ID), dc.Action, detail(dc), call.Name, call.Tag, d.Round, d.Approver,
						leaf.Agent, short(leaf.ID), v.dc.Action, detail(v.dc), v.d.Round, v.d.Approver)
				}
			}
		}
	}
}

// detail is what a decision holds beside its action, for a report.
func detail(dc DecisionCall) string {
	switch dc.Action {
	case "edit":
		return " " + canonical(string(dc.Input))
	case "answer":
		if dc.ResultHash != "" {
			return " (hash " + clip(dc.ResultHash, 12) + ")"
		}
	}
	return ""
}

// 6, decidability: a Paused caller's pending calls (its awaits, as GET
// task shows them: each with its leaf's request and round) name rounds
// its leaves are Paused in. A caller showing a round its leaf has left
// (decided, ended) is undecidable: a decision sent there is a past
// round's at the leaf.
func (c *checker) decidable() {
	for _, r := range c.w.Order {
		if r.Status != "Paused" || r.Task.Status != "Paused" {
			continue
		}
		for _, pv := range r.Task.shown() {
			if pv.RequestID == "" || pv.RequestID == r.ID || pv.Round == 0 {
				continue
			}
			leaf := c.w.Reqs[pv.RequestID]
			if leaf == nil || leaf.Status != "Paused" {
				continue // nothingHangs names it
			}
			if leaf.Task.Round != pv.Round {
				c.add(6, []string{r.ID, leaf.ID}, append(append([]int(nil), c.ridOps[r.ID]...), c.ridOps[leaf.ID]...), nil,
					"%s %s is Paused showing %s (%s) of %s %s in round %d, but the leaf is Paused in round %d: the caller's round cannot be decided",
					r.Agent, short(r.ID), pv.Name, pv.ToolCallID, leaf.Agent, short(leaf.ID), pv.Round, leaf.Task.Round)
			}
		}
	}
}

// recoveryDeadline is when what fault f hit must have recovered by: its
// end plus the bound and the margin, the clock restarted at the end of
// each fault (of either process) that struck before that time — a later
// fault interrupts the recovery.
func recoveryDeadline(faults []Fault, start, end time.Time, bound time.Duration) time.Time {
	d := end.Add(bound)
	for moved := true; moved; {
		moved = false
		for _, g := range faults {
			if g.Start.After(start) && g.Start.Before(d) && g.End.Add(bound).After(d) {
				d, moved = g.End.Add(bound), true
			}
		}
	}
	return d
}

// 6, with the recovery bound itself (docs/architecture.md, "The reaper"):
// a request a fault hit (Recovery's hit: an operation of its process in
// flight, or last seen Running) must come to rest — Completed, Failed,
// Canceled or Paused — within the bound and the margin after the fault's
// end, with no client action. A violation is a read showing it still
// Running past that, with no sign of rest since the fault's end (an
// answer or a read, a webhook), no tool run in its chain within the bound
// (a leg taken over in time, at its own work) and no operation that could
// move its chain (anything but a read naming one of its tasks or requests)
// since the fault began.
func (c *checker) recoveredInBound() {
	ix := newHits(c.in, c.w)
	byRid := ix.byRid
	hooks := map[string][]time.Time{}
	for _, d := range c.in.Deliveries {
		hooks[d.RequestID] = append(hooks[d.RequestID], d.Start)
	}
	moves := map[string][]Op{} // task or request id → the ops that could move it
	for _, op := range c.in.Ops {
		if op.Kind == OpGet || op.Kind == OpReplay {
			continue
		}
		ids := opRequests(op)
		for _, m := range taskInPath.FindAllStringSubmatch(op.Path, -1) {
			ids = append(ids, m[1])
		}
		for _, id := range ids {
			moves[id] = append(moves[id], op)
		}
	}
	ran := map[string][]time.Time{} // request → when its tool runs started
	for _, e := range c.in.Ledger {
		ran[e.RequestID] = append(ran[e.RequestID], e.Start)
	}
	reported := map[string]bool{}
	for _, f := range c.in.Faults {
		if f.End.IsZero() {
			continue
		}
		deadline := recoveryDeadline(c.in.Faults, f.Start, f.End, RecoveryBound+RecoveryMargin)
		for _, rid := range ix.hit(f) {
			r := c.w.Reqs[rid]
			if r == nil || reported[rid] {
				continue
			}
			var late *Observation
			read := false
			for i, o := range byRid[rid] {
				if o.At.Before(f.End) {
					continue
				}
				if o.Status != "Running" {
					break // at rest since the fault's end
				}
				read = true
				if o.At.After(deadline) {
					late = &byRid[rid][i]
					break
				}
			}
			if read {
				c.res.BoundReads++
			}
			if late == nil {
				continue
			}
			rested := false
			for _, at := range hooks[rid] {
				if !at.Before(f.End) && at.Before(late.At) {
					rested = true
				}
			}
			moved := false
			for _, below := range r.Root().Below() {
				for _, at := range ran[below.ID] {
					// A tool run in its chain within the bound: taken over
					// in time, and at its own work since.
					if !at.Before(f.End) && !at.After(deadline) {
						moved = true
					}
				}
				for _, id := range []string{below.ID, below.TaskID} {
					for _, op := range moves[id] {
						if op.Start.After(f.Start) && op.Start.Before(late.At) {
							moved = true
						}
					}
				}
			}
			if rested || moved {
				continue
			}
			reported[rid] = true
			c.add(6, []string{rid}, c.ridOps[rid], nil, "%s %s (%s), hit by the fault %q of %s at %s, was still Running %s after the process was back (read at %s): past the recovery bound %s + margin %s",
				r.Agent, short(rid), r.Proc, f.Kind, f.Proc, f.Start.Format("15:04:05.000"), late.At.Sub(f.End).Round(time.Millisecond),
				late.At.Format("15:04:05.000"), RecoveryBound, RecoveryMargin)
		}
	}
}

var taskInPath = regexp.MustCompile(`/tasks/([0-9a-f-]{36})`)

// 6, for expiries: a paused round past its expiry is expired by the
// reaper's next sweep, with no client action (docs/api.md, Resume). A
// round an answer showed expiring at E, whose expiry is recorded (approver
// system:expiry) later than E plus a sweep and the margin — the clock
// restarted by any fault meanwhile — was left hanging.
func (c *checker) expiredInBound() {
	due := map[string]time.Time{} // request/round → the earliest expires_at shown
	note := func(rid string, round int, at time.Time) {
		if rid == "" || round == 0 || at.IsZero() {
			return
		}
		k := fmt.Sprintf("%s/%d", rid, round)
		if old, ok := due[k]; !ok || at.Before(old) {
			due[k] = at
		}
	}
	for _, op := range c.in.Ops {
		res := op.Result()
		if res == nil || res.Status != "Paused" {
			continue
		}
		for _, pv := range append(append([]PendingView(nil), res.Pending...), res.Inputs...) {
			rid, round := pv.RequestID, pv.Round
			if rid == "" || rid == res.RequestID {
				rid, round = res.RequestID, res.Round
			}
			note(rid, round, pv.ExpiresAt)
		}
	}
	for _, r := range c.w.Order {
		for _, d := range r.Decisions {
			if d.Approver != ApproverExpiry {
				continue
			}
			e, ok := due[fmt.Sprintf("%s/%d", r.ID, d.Round)]
			if !ok {
				continue
			}
			limit := e.Add(DefaultSweep + RecoveryMargin)
			for _, f := range c.in.Faults {
				if !f.End.IsZero() && f.End.After(e) && f.Start.Before(limit) {
					limit = laterOf(limit, recoveryDeadline(c.in.Faults, f.Start, f.End, RecoveryBound+RecoveryMargin))
				}
			}
			c.res.Expiries++
			c.res.ExpiryLag = max(c.res.ExpiryLag, d.DecidedAt.Sub(e))
			if d.DecidedAt.After(limit) {
				c.add(6, []string{r.ID}, c.ridOps[r.ID], nil, "round %d of %s %s (%s) expired at %s, but its expiry was applied at %s, %s later: past a sweep (%s) + margin %s",
					d.Round, r.Agent, short(r.ID), r.Proc, e.Format("15:04:05.000"), d.DecidedAt.Format("15:04:05.000"),
					d.DecidedAt.Sub(e).Round(time.Millisecond), DefaultSweep, RecoveryMargin)
			}
		}
	}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
