package torture

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Run is what the report says of a run besides the checker's verdict.
type Run struct {
	Seed     uint64
	Seconds  int
	Workers  int
	Start    time.Time
	LoadEnd  time.Time // the generator and the nemesis stopped
	Settled  time.Time // every request at rest (zero: not within the bound)
	Armed    int       // relay kills armed that met no call
	Dir      string    // where the history and the logs were written
	Problems []string  // what went wrong in the harness itself
}

// Recovery times each fault's end (the process back) to the next outcome
// of the requests it hit: those of its process with an operation in
// flight when it struck or last seen Running before it, and the roots of
// their chains; the next outcome is the first status other than Running
// that an answer or a read showed after the fault's end. lost lists the
// requests never seen at rest again. clean holds the times of the
// recoveries no later fault (on either process) struck before they ended:
// a recovery another fault interrupted measures both.
func Recovery(in Input, w *World) (times, clean []time.Duration, lost []string) {
	ix := newHits(in, w)
	for _, f := range in.Faults {
		if f.End.IsZero() {
			continue
		}
		for _, rid := range ix.hit(f) {
			found := false
			for _, o := range ix.byRid[rid] {
				if !o.At.Before(f.End) && o.Status != "Running" {
					times = append(times, o.At.Sub(f.End))
					if !faultBetween(in.Faults, f.End, o.At) {
						clean = append(clean, o.At.Sub(f.End))
					}
					found = true
					break
				}
			}
			if !found {
				lost = append(lost, rid)
			}
		}
	}
	slices.Sort(times)
	slices.Sort(clean)
	return times, clean, lost
}

// hits finds the requests a fault hit (Recovery; the checker's recovery
// bound), over the history read once.
type hits struct {
	in     Input
	w      *World
	byKey  map[string]string // Idempotency-Key → the request it made
	obs    []Observation     // every status seen, in time order
	byRid  map[string][]Observation
	opReqs [][]string
	// byText finds a request by its process and user message: the one an
	// invoke or a follow-on that got no answer made.
	byText map[string]string
}

func newHits(in Input, w *World) *hits {
	ix := &hits{in: in, w: w, byKey: map[string]string{}, byRid: map[string][]Observation{}, opReqs: make([][]string, len(in.Ops))}
	for _, op := range in.Ops {
		if r := op.Result(); r != nil && op.Key != "" {
			ix.byKey[op.Key] = r.RequestID
		}
	}
	// An answer Failed request_lost (or internal) is no outcome: the
	// request goes on (outcome). Neither it nor the status the cluster
	// observed from it counts as a sign of rest.
	notRest := map[Observation]bool{}
	for _, op := range in.Ops {
		r := op.Result()
		if r == nil {
			continue
		}
		o := Observation{At: op.End, RequestID: r.RequestID, Status: r.Status}
		if r.Error != nil && (r.Error.Code == "request_lost" || r.Error.Code == "internal") {
			notRest[o] = true
			continue
		}
		ix.obs = append(ix.obs, o)
	}
	for _, o := range in.Observations {
		if !notRest[Observation{At: o.At, RequestID: o.RequestID, Status: o.Status}] {
			ix.obs = append(ix.obs, o)
		}
	}
	sort.SliceStable(ix.obs, func(i, j int) bool { return ix.obs[i].At.Before(ix.obs[j].At) })
	for _, o := range ix.obs {
		ix.byRid[o.RequestID] = append(ix.byRid[o.RequestID], o)
	}
	for i, op := range in.Ops {
		ix.opReqs[i] = opRequests(op)
	}
	ix.byText = map[string]string{}
	for _, r := range w.Order {
		if r.Text != "" {
			ix.byText[r.Proc+" "+r.Text] = r.ID
		}
	}
	return ix
}

// sentText is the user message an invoke, follow-on or edit sent.
func sentText(op Op) string {
	var b struct {
		Items []struct {
			Content json.RawMessage `json:"content"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(op.Body), &b) != nil || len(b.Items) == 0 {
		return ""
	}
	var text string
	if json.Unmarshal(b.Items[0].Content, &text) != nil {
		return ""
	}
	return text
}

// hit are the requests f hit: those of its process with an operation in
// flight when it struck or last seen Running before it, and the roots of
// their chains.
func (ix *hits) hit(f Fault) []string {
	hit := map[string]bool{}
	for i, op := range ix.in.Ops {
		if op.Proc != f.Proc || op.Kind == OpGet || op.Start.After(f.Start) || op.End.Before(f.Start) {
			continue
		}
		rids := ix.opReqs[i]
		if len(rids) == 0 && op.Key != "" && ix.byKey[op.Key] != "" {
			rids = []string{ix.byKey[op.Key]}
		}
		if len(rids) == 0 && (op.Kind == OpInvoke || op.Kind == OpFollow || op.Kind == OpEdit) {
			if rid := ix.byText[op.Proc+" "+sentText(op)]; rid != "" {
				rids = []string{rid}
			}
		}
		for _, rid := range rids {
			hit[rid] = true
		}
	}
	last := map[string]string{}
	from, _ := slices.BinarySearchFunc(ix.obs, f.Start.Add(-30*time.Second), func(o Observation, t time.Time) int { return o.At.Compare(t) })
	for _, o := range ix.obs[from:] {
		if o.At.After(f.Start) {
			break
		}
		if f.Start.Sub(o.At) < 30*time.Second {
			last[o.RequestID] = o.Status
		}
	}
	for rid, st := range last {
		if r := ix.w.Reqs[rid]; st == "Running" && r != nil && r.Proc == f.Proc {
			hit[rid] = true
		}
	}
	for rid := range hit {
		if r := ix.w.Reqs[rid]; r != nil {
			hit[r.Root().ID] = true
		}
	}
	return sortedKeys(hit)
}

// faultBetween is whether a fault struck after from and before to.
func faultBetween(faults []Fault, from, to time.Time) bool {
	for _, f := range faults {
		if f.Start.After(from) && f.Start.Before(to) {
			return true
		}
	}
	return false
}

// Anomalies are answers the API contract does not allow for what was
// sent — a 404 for a task or request the server itself named, a 5xx
// other than an outcome, a cancel answered 200 with another status than
// Canceled, a 200 whose body says Failed request_lost — outside the seven
// invariants, listed for a look.
func Anomalies(in Input) []Op {
	var out []Op
	for _, op := range in.Ops {
		if op.Kind == OpGet || op.Status == 0 {
			continue
		}
		code := op.ErrorCode()
		r := op.Result()
		switch {
		case op.Status == 404:
			out = append(out, op)
		case op.Status >= 500 && (code == "" || code == "internal" || code == "model_error"):
			// remote_unavailable (a remote down), lease_expired and
			// deadline_exceeded are answers the contract has; the local
			// model never fails but when its process goes away.
			out = append(out, op)
		case op.Kind == OpCancel && op.Status == 200 && r != nil && r.Status != "Canceled":
			// A cancel answers Canceled, 202 or 409 not_running.
			out = append(out, op)
		case op.Status == 200 && r != nil && r.Error != nil && r.Error.Code == "request_lost":
			// A client reading status alone (as after the 15 s wait it
			// must) sees Failed for a request that goes on.
			out = append(out, op)
		}
	}
	return out
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Names of the invariants, for the report.
var Invariants = map[int]string{
	1: "at most once", 2: "only what was approved", 3: "cancel means cancel", 4: "the history tells the truth",
	5: "answers agree", 6: "nothing hangs", 7: "nothing is lost",
}

// Shapes counts what the workload made beyond plain chains: callers that
// called two children in one turn (and decisions sent to them), bodies
// the API must refuse (by shape, and how many were compared before and
// after), decisions raced at the leaves of one caller, decisions by
// several people of a quorum (recorded or refused).
func Shapes(in Input, world *World) map[string]int {
	m := map[string]int{}
	for _, r := range world.Order {
		kids := map[string]bool{}
		for _, ch := range r.Children {
			kids[ch.ParentCall] = true
		}
		if len(kids) > 1 {
			m["callers of several children"]++
		}
	}
	waiterShapes(in, m)
	for _, e := range in.Ledger {
		if e.Tool == ToolSlow {
			m["burst legs run"]++
		}
	}
	for _, op := range in.Ops {
		if op.Refuse {
			_, shape, _ := strings.Cut(op.Note, "refused: ")
			m["refused "+shape]++
			if op.Before != "" && op.After != "" {
				m["refused, compared before and after"]++
			}
		}
		if op.Kind == OpReplay && op.Status == 200 {
			m["replays checked"]++
			if op.Events >= 1000 {
				m["replays of 1,000 events or more"]++
			}
		}
		if strings.HasSuffix(op.Note, "racing the other levels") {
			m["decisions racing at the leaves"]++
		}
		if op.Kind == OpResume && op.User != "" {
			m["decisions by approvers of a quorum"]++
			if op.Status == 403 {
				m["quorum decisions refused 403"]++
			}
		}
		if recorded(op) {
			m["decisions recorded short of a quorum"]++
		}
	}
	for _, r := range world.Order {
		for _, c := range r.Calls {
			if QuorumTools[c.Name] > 0 && c.Decision != nil && c.Decision.Action != "reject" && c.Decision.Approver != ApproverExpiry {
				m["quorum calls approved"]++
			}
		}
	}
	elicitShapes(in, m)
	for k, n := range goneShapes(in, world) {
		m[k] += n
	}
	return m
}

// Report writes the run's report: the seed, the counts, the recovery
// times and each violation with the history around it.
func Report(w io.Writer, run Run, in Input, res *Result) {
	rel := func(t time.Time) string { return fmt.Sprintf("+%.3fs", t.Sub(run.Start).Seconds()) }
	fmt.Fprintf(w, "torture: seed %d (TORTURE_SEED=%d replays its choices), %d s of load, %d workers\n", run.Seed, run.Seed, run.Seconds, run.Workers)
	kinds, noAnswer := map[string]int{}, 0
	answers := map[string]int{}
	decisions := map[string]int{}
	for _, op := range in.Ops {
		kinds[op.Kind]++
		if op.Status == 0 {
			noAnswer++
		}
		if op.Kind == OpResume || op.Kind == OpCancel {
			a := fmt.Sprint(op.Status)
			if op.Status == 0 {
				a = "none"
			} else if code := op.ErrorCode(); code != "" && op.Status >= 400 {
				a += " " + code
			} else if r := op.Result(); r != nil {
				a += " " + r.Status
			}
			answers[op.Kind+" "+a]++
		}
		for _, d := range op.Decides {
			decisions[d.Action]++
		}
	}
	fmt.Fprintf(w, "  operations: %d (%s); without an answer: %d\n", len(in.Ops), counts(kinds), noAnswer)
	fmt.Fprintf(w, "  answers: %s\n", counts(answers))
	fk := map[string]int{}
	for _, f := range in.Faults {
		fk[f.Kind+" ("+f.Proc+")"]++
	}
	fmt.Fprintf(w, "  faults: %d (%s); relay kills armed that met no call: %d\n", len(in.Faults), counts(fk), run.Armed)
	ek := map[string]int{}
	for _, e := range in.Ledger {
		ek[e.Tool]++
	}
	fmt.Fprintf(w, "  executions: %d (%s); call decisions sent: %s\n", len(in.Ledger), counts(ek), counts(decisions))
	rk := map[string]int{}
	for _, r := range res.World.Order {
		rk[r.Status]++
	}
	fmt.Fprintf(w, "  requests at the end: %d (%s) in %d tasks\n", len(res.World.Order), counts(rk), len(res.World.Tasks))
	fmt.Fprintf(w, "  shapes: %s\n", counts(Shapes(in, res.World)))
	accepted, refused := 0, 0
	for _, d := range in.Deliveries {
		if d.Accepted() {
			accepted++
		} else {
			refused++
		}
	}
	fmt.Fprintf(w, "  webhooks: %d attempts, %d accepted, %d refused (some on purpose, to make retries), %d redeliveries of an id already accepted\n",
		len(in.Deliveries), accepted, refused, res.Redelivered)
	if run.Settled.IsZero() {
		fmt.Fprintf(w, "  quiet period: NOT at rest %s after the load stopped\n", time.Since(run.LoadEnd).Round(time.Second))
	} else {
		fmt.Fprintf(w, "  quiet period: every request at rest %s after the load stopped\n", run.Settled.Sub(run.LoadEnd).Round(100*time.Millisecond))
	}
	times, clean, lost := Recovery(in, res.World)
	fmt.Fprintf(w, "  recovery (a fault's end → the next outcome of the requests it hit): %d requests, p50 %s, p99 %s, max %s; never at rest again: %d\n",
		len(times), pct(times, 0.5).Round(time.Millisecond), pct(times, 0.99).Round(time.Millisecond), pct(times, 1).Round(time.Millisecond), len(lost))
	fmt.Fprintf(w, "  recovery with no later fault before it ended: %d requests, p50 %s, p99 %s, max %s\n",
		len(clean), pct(clean, 0.5).Round(time.Millisecond), pct(clean, 0.99).Round(time.Millisecond), pct(clean, 1).Round(time.Millisecond))
	fmt.Fprintf(w, "  recovery bound held (invariant 6): lease + sweep %s + margin %s from each fault's end, restarted by a later fault; requests read Running after their fault's end: %d; expiries applied: %d, the latest %s after it was due (a sweep %s + margin)\n",
		RecoveryBound, RecoveryMargin, res.BoundReads, res.Expiries, res.ExpiryLag.Round(time.Millisecond), DefaultSweep)
	by := res.ByInvariant()
	var inv []string
	for i := 1; i <= 7; i++ {
		inv = append(inv, fmt.Sprintf("%d %s: %d", i, Invariants[i], by[i]))
	}
	fmt.Fprintf(w, "  violations: %d (%s); reported apart (a holder frozen past its lease): %d\n", len(res.Violations), strings.Join(inv, ", "), len(res.Apart))
	for _, p := range run.Problems {
		fmt.Fprintf(w, "  harness: %s\n", p)
	}
	if run.Dir != "" {
		fmt.Fprintf(w, "  history, ledger, deliveries, final state and server logs: %s\n", run.Dir)
	}
	ops := map[int]Op{}
	for _, op := range in.Ops {
		ops[op.ID] = op
	}
	execs := map[int]Execution{}
	for _, e := range in.Ledger {
		execs[e.N] = e
	}
	show := func(title string, vs []Violation) {
		for i, v := range vs {
			fmt.Fprintf(w, "\n%s %d [%d %s]: %s\n", title, i+1, v.Invariant, Invariants[v.Invariant], v.What)
			n := 0
			for _, id := range v.Ops {
				if op, ok := ops[id]; ok && n < 14 {
					fmt.Fprintf(w, "    %s\n", opLine(op, rel))
					n++
				}
			}
			if len(v.Ops) > n {
				fmt.Fprintf(w, "    … %d more operations\n", len(v.Ops)-n)
			}
			for _, id := range v.Execs {
				if e, ok := execs[id]; ok {
					fmt.Fprintf(w, "    run #%d %s %s tag %s v=%s by %s, key %s\n", e.N, rel(e.Start), e.Tool, e.Tag, e.Value, e.Process, e.Key)
				}
			}
			for _, f := range in.Faults {
				for _, id := range v.Execs {
					if e, ok := execs[id]; ok && f.Proc == e.Process && f.Start.Before(e.Start.Add(30*time.Second)) && f.End.After(e.Start.Add(-30*time.Second)) {
						fmt.Fprintf(w, "    fault %s..%s %s of %s %s\n", rel(f.Start), rel(f.End), f.Kind, f.Proc, f.At)
						break
					}
				}
			}
		}
	}
	show("violation", res.Violations)
	show("apart", res.Apart)
	if an := Anomalies(in); len(an) > 0 {
		fmt.Fprintf(w, "\nanswers outside the contract (not counted as violations): %d\n", len(an))
		for i, op := range an {
			if i == 20 {
				fmt.Fprintf(w, "    … %d more\n", len(an)-i)
				break
			}
			fmt.Fprintf(w, "    %s\n", opLine(op, rel))
		}
	}
}

func opLine(op Op, rel func(time.Time) string) string {
	answer := "no answer: " + op.Err
	if op.Status != 0 {
		answer = fmt.Sprint(op.Status)
		if r := op.Result(); r != nil {
			answer += " " + r.Status
			if r.Status == "Paused" {
				answer += fmt.Sprintf(" round %d", r.Round)
			}
			if r.Error != nil {
				answer += " " + r.Error.Code
			}
			answer += " " + short(r.RequestID)
		} else if code := op.ErrorCode(); code != "" {
			answer += " " + code
		}
	}
	body := op.Body
	if len(body) > 160 {
		body = body[:160] + "…"
	}
	note := ""
	if op.Note != "" {
		note = " (" + op.Note + ")"
	}
	return fmt.Sprintf("#%d w%d f%d %s..%s %s %s %s%s %s → %s", op.ID, op.Worker, op.Flow, rel(op.Start), rel(op.End), op.Proc, op.Method, op.Path, note, body, answer)
}
