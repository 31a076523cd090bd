package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// A decision at a caller is all or nothing, and so is a chain's expiry
// (docs/architecture.md, "Orchestration"): duo calls leaf (an approval)
// and asker (a question with choices) in one turn.

// pausedOnDuo invokes duo with its two calls in the order given; both
// pause, and so does duo, on an approval and a question.
func pausedOnDuo(t *testing.T, o *Orch, file string, askerFirst bool) (*agent.RequestResult, agent.PendingView, agent.PendingView) {
	t.Helper()
	lines := []string{CallAgent("leaf", Append(file, "x")), CallAgent("asker", askLine)}
	if askerFirst {
		slices.Reverse(lines)
	}
	res, _ := o.Invoke(t, "duo", "", strings.Join(lines, "\n"))
	type pending struct {
		Status            agent.Status
		Approvals, Inputs int
	}
	if diff := cmp.Diff(pending{agent.StatusPaused, 1, 1}, pending{res.Status, len(res.PendingApprovals), len(res.PendingInputs)}); diff != "" {
		t.Fatalf("duo (-want +got):\n%s", diff)
	}
	return res, res.PendingApprovals[0], res.PendingInputs[0]
}

// versions reads the tasks' versions.
func (o *Orch) versions(t *testing.T, ids ...string) []int64 {
	t.Helper()
	var out []int64
	for _, id := range ids {
		m, err := o.Store.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Version)
	}
	return out
}

func duoBody(approval, input agent.PendingView, colour string) agent.ResumeRequest {
	return agent.ResumeRequest{Decisions: []agent.DecisionInput{
		{ToolCallID: approval.ToolCallID, Action: agent.ActionApprove}, answer(input.ToolCallID, `"`+colour+`"`)}}
}

// testPartialDecisionAtACaller: at duo, leaf's call approved and asker's
// question answered with a word that is not a choice. The whole decision
// is 400 invalid_input, whichever leaf comes first: nothing changes
// anywhere and leaf's append never runs. The same decision with a choice
// then runs both.
func testPartialDecisionAtACaller(t *testing.T, o *Orch) {
	for _, askerFirst := range []bool{false, true} {
		name := map[bool]string{false: "leaf_first", true: "asker_first"}[askerFirst]
		t.Run(name, func(t *testing.T) {
			file := name + ".txt"
			res, approval, input := pausedOnDuo(t, o, file, askerFirst)
			ids := []string{res.TaskID, approval.TaskID, input.TaskID}
			before := o.versions(t, ids...)
			_, _, err := o.Resume("duo", res.TaskID, res.RequestID, duoBody(approval, input, "green"))
			if Code(err) != agent.CodeInvalidInput {
				t.Fatalf("approve leaf and answer asker with no choice, at duo: %v, want invalid_input", err)
			}
			if after := o.versions(t, ids...); !slices.Equal(before, after) {
				t.Errorf("versions of duo, leaf, asker: %v before, %v after a refused decision", before, after)
			}
			if got := o.Lines(file); len(got) != 0 {
				t.Fatalf("%s = %q: leaf's call ran under a refused decision", file, got)
			}
			for _, id := range ids[1:] {
				if v := o.View(t, map[string]string{approval.TaskID: "leaf", input.TaskID: "asker"}[id], id); v.Status != agent.StatusPaused {
					t.Errorf("%s after a refused decision: %s, want Paused", v.Agent, v.Status)
				}
			}
			out, _, err := o.Resume("duo", res.TaskID, res.RequestID, duoBody(approval, input, "red"))
			if err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("the same decision with a choice: %+v %v", out, err)
			}
			if got := o.Lines(file); !slices.Equal(got, []string{"x"}) {
				t.Errorf("%s = %q, want leaf's line once", file, got)
			}
		})
	}
}

// beforeStore runs before, once, before the first write it matches (that
// write's task or one written with it).
type beforeStore struct {
	agent.Store
	mu     sync.Mutex
	match  func(*agent.Write) bool
	before func()
}

func (s *beforeStore) Write(ctx context.Context, w *agent.Write) error {
	s.mu.Lock()
	var run func()
	if s.match != nil && slices.ContainsFunc(append([]*agent.Write{w}, w.With...), s.match) {
		run, s.match = s.before, nil
	}
	s.mu.Unlock()
	if run != nil {
		run()
	}
	return s.Store.Write(ctx, w)
}

// testLeafDecidedAsTheCallerDecides: a decision at duo has been checked
// when asker's question is answered otherwise at asker's own URL (the
// store's hook runs it just before asker's claim would land). The
// decision at duo is a conflict — read again, asker's answer table says
// decision_conflict — and leaf's part never runs: never half-applied.
func testLeafDecidedAsTheCallerDecides(t *testing.T, newStore func(testing.TB) agent.Store) {
	for _, askerFirst := range []bool{false, true} {
		name := map[bool]string{false: "leaf_first", true: "asker_first"}[askerFirst]
		t.Run(name, func(t *testing.T) {
			bs := &beforeStore{Store: newStore(t)}
			o := NewOrch(t, bs)
			file := name + ".txt"
			res, approval, input := pausedOnDuo(t, o, file, askerFirst)
			var own *agent.RequestResult
			var ownErr error
			bs.match = func(w *agent.Write) bool {
				a := w.Task.Active
				return w.Task.ID == input.TaskID && a != nil && a.Status == agent.StatusRunning && len(w.Decisions) > 0
			}
			bs.before = func() {
				body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(input.ToolCallID, `"blue"`)}}
				own, _, ownErr = o.Resume("asker", input.TaskID, input.RequestID, body)
			}
			_, _, err := o.Resume("duo", res.TaskID, res.RequestID, duoBody(approval, input, "red"))
			if ownErr != nil || own == nil || own.Status != agent.StatusCompleted {
				t.Fatalf("the answer at asker's own URL: %+v %v", own, ownErr)
			}
			if c := Code(err); c != agent.CodeDecisionConflict && c != agent.CodeNotPaused {
				t.Errorf("the decision at duo, asker answered otherwise meanwhile: %v, want decision_conflict", err)
			}
			if got := o.Lines(file); len(got) != 0 {
				t.Errorf("%s = %q: leaf's part of a refused decision ran", file, got)
			}
			if v := o.View(t, "leaf", approval.TaskID); v.Status != agent.StatusPaused {
				t.Errorf("leaf: %s, want Paused (its part of the decision at duo never landed)", v.Status)
			}
		})
	}
}

// failingReads fails every read of one task's META while fail is set: a
// transient store error.
type failingReads struct {
	agent.Store
	mu   sync.Mutex
	fail string
}

var errTransient = errors.New("transient store error")

func (f *failingReads) GetTask(ctx context.Context, taskID string) (*agent.Task, error) {
	f.mu.Lock()
	fail := f.fail == taskID
	f.mu.Unlock()
	if fail {
		return nil, errTransient
	}
	return f.Store.GetTask(ctx, taskID)
}

func (f *failingReads) set(taskID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = taskID
}

// testReadErrorCheckingALeaf: pair waits on twin, approved at twin's own
// URL in time; pair's copy of the round's expiry passes. A resume at pair
// whose read of twin fails is an error answer — not 410, and pair is not
// expired — and the same resume once the store answers is pair's outcome.
func testReadErrorCheckingALeaf(t *testing.T, newStore func(testing.TB) agent.Store) {
	fr := &failingReads{Store: newStore(t)}
	o := NewOrch(t, fr)
	res, _ := o.Invoke(t, "pair", "", CallAgent("twin", Append("t.txt", "x")))
	if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
		t.Fatalf("pair (-want +got):\n%s", diff)
	}
	p := res.PendingApprovals[0]
	if out, _, err := o.Resume("twin", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve at twin: %+v %v", out, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the round's expiry, which pair still shows
	fr.set(p.TaskID)
	_, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve())
	fr.set("")
	if !errors.Is(err, errTransient) {
		t.Fatalf("resume at pair, twin's read failing: %v, want the store's error (an error answer, not an expiry)", err)
	}
	if v := o.View(t, "pair", res.TaskID); v.Status != agent.StatusPaused {
		t.Fatalf("pair after a failed read: %s, want Paused", v.Status)
	}
	out, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Errorf("the same resume once the store answers: %+v %v, want pair's outcome (Completed)", out, err)
	}
	if got := o.Lines("t.txt"); len(got) != 1 {
		t.Errorf("t.txt = %q", got)
	}
}

// testChainExpiryRacesALeafDecision: pair waits on leaf and twin; twin's
// round expired. An approval at pair is 410 and ends the chain; the
// moment its write lands (the store's hook), leaf is approved at its own
// URL. Leaf's round went with the chain's expiry, in the same
// transaction: the approval is refused and leaf's append never runs.
func testChainExpiryRacesALeafDecision(t *testing.T, newStore func(testing.TB) agent.Store) {
	hs := &hookStore{Store: newStore(t)}
	o := NewOrch(t, hs)
	res := pausedOnTwo(t, o)
	leaf := pendingAt(res, "leaf")
	var ownErr error
	hs.match = func(w *agent.Write) bool { return w.Task.ID == res.TaskID && w.Task.Status == agent.StatusFailed }
	hs.after = func() {
		_, _, ownErr = o.Resume("leaf", leaf.TaskID, leaf.RequestID, Approve())
	}
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("approve at pair with twin expired: %v, want approval_expired", err)
	}
	if ownErr == nil {
		t.Errorf("leaf approved at its own URL after the chain's expiry landed: accepted, want a refusal")
	}
	chainEnded(t, o, res)
}

// RunTooWide runs testTooWideForOneTransaction (the
// store's side, ErrTooLarge, is storetest's WriteTogetherTooLarge on both
// stores; 34 children at once on DynamoDB Local lose their leases on a
// loaded machine).
func RunTooWide(t *testing.T, newStore func(testing.TB) agent.Store) {
	testTooWideForOneTransaction(t, NewOrch(t, newStore(t)))
}

// testTooWideForOneTransaction: wide calls 34 sub-agents in one turn, each
// pausing on an append. An edit of every call at wide claims 35 requests
// with their edited entries — more than one transaction holds (100
// items) — and is refused whole, 400 invalid_decisions, nothing changed;
// each leaf can still be decided at its own URL.
func testTooWideForOneTransaction(t *testing.T, o *Orch) {
	const n = 34
	wide := &agent.Agent{Name: "wide", Version: "1", ModelID: "m", MaxIterations: 6}
	var lines []string
	for i := range n {
		name := "w" + strconv.Itoa(i)
		sub := *o.Agents["leaf"]
		sub.Name = name
		o.Agents[name] = &sub
		wide.Tools = append(wide.Tools, agent.BoundTool{Tool: &agent.AgentTool{Agent: name, Description: "keeps files"}})
		lines = append(lines, CallAgent(name, Append(name+".txt", "x")))
	}
	o.Agents["wide"] = wide
	res, _ := o.Invoke(t, "wide", "", strings.Join(lines, "\n"))
	if res.Status != agent.StatusPaused {
		t.Fatalf("wide: %+v", res)
	}
	// wide may pause before its last children did: their pauses continue
	// it (the dispatcher's part), until it shows every call.
	var pending []agent.PendingView
	waitFor(t, func() bool {
		if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
			t.Fatal(err)
		}
		v := o.View(t, "wide", res.TaskID)
		pending = v.PendingApprovals
		return v.Status == agent.StatusPaused && len(pending) == n
	})
	ids := []string{res.TaskID}
	var body agent.ResumeRequest
	for _, p := range pending {
		ids = append(ids, p.TaskID)
		body.Decisions = append(body.Decisions, agent.DecisionInput{ToolCallID: p.ToolCallID, Action: agent.ActionEdit,
			Input: json.RawMessage(`{"path":"` + p.Agent + `.txt","content":"edited\n"}`)})
	}
	before := o.versions(t, ids...)
	if _, _, err := o.Resume("wide", res.TaskID, res.RequestID, body); Code(err) != agent.CodeInvalidDecisions {
		t.Fatalf("an edit of %d leaves' calls at wide: %v, want invalid_decisions", n, err)
	}
	if after := o.versions(t, ids...); !slices.Equal(before, after) {
		t.Errorf("versions %v before, %v after a refused decision", before, after)
	}
	for _, p := range pending {
		if got := o.Lines(p.Agent + ".txt"); len(got) != 0 {
			t.Fatalf("%s.txt = %q under a refused decision", p.Agent, got)
		}
	}
	p := pending[0]
	if out, _, err := o.Resume(p.Agent, p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Errorf("the first leaf approved at its own URL: %+v %v", out, err)
	}
}

// testExpiryCancelsALeafDecidedMeanwhile: pair waits on leaf and twin;
// leaf, asked to append twice in two rounds, is approved at its own URL,
// twin is not and expires. An approval at pair is 410 and ends the chain —
// and leaf, which moved on from the round pair shows, must end with it
// (its call closed by the expiry cancels it), not wait below an ended
// root: paused in round 2 before pair heard of it (its continuation not
// yet delivered), or still running round 1 when the expiry lands (the
// torture test's find, seed 124578079: a twin left Paused below a Failed
// duo). Leaf's second append never runs. Leaf ran its first append, so
// pair's history gives its call of leaf outcome_unknown — never the
// expiry's "approval expired", a did-not-run result (the torture's find,
// seed 124578079: duo's call of twin closed "approval expired" though twin
// ran); a leaf that ran to its end (ended, its continuation not yet
// delivered) gives pair's call its own result and stays Completed.
func testExpiryCancelsALeafDecidedMeanwhile(t *testing.T, newStore func(testing.TB) agent.Store) {
	then, _ := json.Marshal(map[string]string{"path": "l.txt", "content": "y\n"})
	for _, shape := range []string{"paused_again", "running", "ended"} {
		running, ended := shape == "running", shape == "ended"
		leafScript := Append("l.txt", "x") + "\n/then append_file " + string(then)
		if ended {
			leafScript = Append("l.txt", "x")
		}
		t.Run(shape, func(t *testing.T) {
			hs := &hookStore{Store: newStore(t)}
			o := NewOrch(t, hs)
			res, _ := o.Invoke(t, "pair", "", CallAgent("leaf", leafScript)+"\n"+CallAgent("twin", Append("t.txt", "x")))
			if diff := cmp.Diff(paused{agent.StatusPaused, 2}, pausedOf(res)); diff != "" {
				t.Fatalf("pair (-want +got):\n%s", diff)
			}
			leaf := pendingAt(res, "leaf")
			atPair := func() {
				if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
					t.Errorf("approve at pair with twin expired: %v, want approval_expired", err)
				}
			}
			time.Sleep(1100 * time.Millisecond) // twin's round expires; leaf's lasts an hour
			if running {
				// The expiry lands the moment leaf's claim has.
				hs.match = func(w *agent.Write) bool {
					return slices.ContainsFunc(append([]*agent.Write{w}, w.With...), func(w *agent.Write) bool {
						a := w.Task.Active
						return w.Task.ID == leaf.TaskID && a != nil && a.Status == agent.StatusRunning && len(w.Decisions) > 0
					})
				}
				hs.after = atPair
			}
			out, _, err := o.Resume("leaf", leaf.TaskID, leaf.RequestID, Approve())
			if err != nil {
				t.Fatalf("approve at leaf: %v", err)
			}
			switch {
			case ended:
				if out.Status != agent.StatusCompleted {
					t.Fatalf("approve at leaf: %+v, want Completed", out)
				}
				atPair()
			case !running:
				if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
					t.Fatalf("approve at leaf (-want +got):\n%s", diff)
				}
				atPair()
			}
			if pv := o.View(t, "pair", res.TaskID); pv.Status != agent.StatusFailed {
				t.Errorf("pair: %s, want Failed", pv.Status)
			}
			wantLeaf := agent.StatusCanceled
			if ended {
				wantLeaf = agent.StatusCompleted
			}
			if lv := o.View(t, "leaf", leaf.TaskID); lv.Status != wantLeaf {
				t.Errorf("leaf: %s (round %d), want %s: nothing waits below an ended root", lv.Status, lv.Round, wantLeaf)
			}
			if got := o.Lines("l.txt"); slices.Contains(got, "y") {
				t.Errorf("l.txt = %q: leaf's round 2 ran below an ended root", got)
			}
			b := callResult(t, o, res.TaskID, "leaf")
			switch txt := ""; {
			case b == nil:
				t.Errorf("pair ended with no result for its call of leaf")
			case ended:
				if txt = resultText(b); b.Status != agent.ResultSuccess || strings.Contains(txt, "expired") {
					t.Errorf("pair's result for its call of leaf, which completed: %s %q; want leaf's own result", b.Status, txt)
				}
			default:
				if txt = resultText(b); b.Status != agent.ResultError || !strings.HasPrefix(txt, agent.CodeOutcomeUnknown) {
					t.Errorf("pair's result for its call of leaf, which ran its first append: %s %q; want %s, never an expiry", b.Status, txt, agent.CodeOutcomeUnknown)
				}
			}
			if b := callResult(t, o, res.TaskID, "twin"); b == nil || !strings.HasPrefix(resultText(b), "approval expired") {
				t.Errorf("pair's result for its call of twin, which expired: %v; want approval expired", b)
			}
		})
	}
}

// refusingWrites refuses every write of one task while refuse names it: a
// process that died before it could write.
type refusingWrites struct {
	agent.Store
	mu     sync.Mutex
	refuse string
}

func (s *refusingWrites) Write(ctx context.Context, w *agent.Write) error {
	s.mu.Lock()
	refuse := s.refuse != "" && s.refuse == w.Task.ID
	s.mu.Unlock()
	if refuse {
		return errTransient
	}
	return s.Store.Write(ctx, w)
}

func (s *refusingWrites) set(taskID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = taskID
}

// testReaperCancelsAFlaggedLeaf: as in testExpiryCancelsALeafDecidedMeanwhile
// (leaf paused in round 2, pair not yet told), the chain's expiry lands
// with leaf's cancel flag, and the process dies before it cancels leaf
// (leaf's writes refused). Nobody touches leaf again: the reaper finds it
// at its next sweep and ends it Canceled, within the recovery bound, not
// when its round expires an hour later.
func testReaperCancelsAFlaggedLeaf(t *testing.T, newStore func(testing.TB) agent.Store) {
	rw := &refusingWrites{Store: newStore(t)}
	hs := &hookStore{Store: rw}
	o := NewOrch(t, hs)
	then, _ := json.Marshal(map[string]string{"path": "l.txt", "content": "y\n"})
	res, _ := o.Invoke(t, "pair", "", CallAgent("leaf", Append("l.txt", "x")+"\n/then append_file "+string(then))+"\n"+CallAgent("twin", Append("t.txt", "x")))
	if diff := cmp.Diff(paused{agent.StatusPaused, 2}, pausedOf(res)); diff != "" {
		t.Fatalf("pair (-want +got):\n%s", diff)
	}
	leaf := pendingAt(res, "leaf")
	out, _, err := o.Resume("leaf", leaf.TaskID, leaf.RequestID, Approve())
	if err != nil {
		t.Fatalf("approve at leaf: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("approve at leaf (-want +got):\n%s", diff)
	}
	time.Sleep(1100 * time.Millisecond) // twin's round expires
	hs.match = func(w *agent.Write) bool { return w.Task.ID == res.TaskID && w.Task.Status == agent.StatusFailed }
	hs.after = func() { rw.set(leaf.TaskID) }
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("approve at pair with twin expired: %v, want approval_expired", err)
	}
	rw.set("")
	if lv := o.View(t, "leaf", leaf.TaskID); lv.Status != agent.StatusPaused {
		t.Fatalf("leaf once its cancel was lost: %s, want still Paused (flagged)", lv.Status)
	}
	ctx := context.Background()
	due, err := o.E.DueTakeovers(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{leaf.TaskID}, taskIDs(due)); diff != "" {
		t.Fatalf("due takeovers, want leaf alone (flagged for cancel below an ended root) (-want +got):\n%s", diff)
	}
	if _, err := o.E.StartTakeover(ctx, due[0].TaskID, due[0].RequestID); err != nil {
		t.Fatalf("the reaper's takeover of leaf: %v", err)
	}
	if lv := o.View(t, "leaf", leaf.TaskID); lv.Status != agent.StatusCanceled {
		t.Errorf("leaf after the reaper: %s, want Canceled", lv.Status)
	}
	if got := o.Lines("l.txt"); slices.Contains(got, "y") {
		t.Errorf("l.txt = %q: leaf's round 2 ran below an ended root", got)
	}
	if due, _ := o.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("after the takeover, due = %+v", due)
	}
}

// testGivenUpCallerFlagsItsChildren: a decision at duo claims duo, leaf
// and asker, and the process dies before anything runs; duo's takeovers
// die too, and at the MaxTakeovers-th the reaper ends duo Failed
// lease_expired — and the process dies again before it cancels leaf
// (leaf's writes refused). Leaf's call was closed by duo's end, so leaf
// was flagged for cancel in that same transaction: the reaper's takeover
// of leaf finalises it Canceled and its approved append never runs below
// the failed root.
func testGivenUpCallerFlagsItsChildren(t *testing.T, newStore func(testing.TB) agent.Store) {
	rw := &refusingWrites{Store: newStore(t)}
	hs := &hookStore{Store: rw}
	o := NewOrch(t, hs)
	res, approval, input := pausedOnDuo(t, o, "given_up.txt", false)
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	ctx := context.Background()
	if _, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "duo", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID,
		Body: duoBody(approval, input, "red")}); err != nil {
		t.Fatal(err)
	}
	for i := range agent.MaxTakeovers {
		time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
		if run, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID); err != nil || run == nil {
			t.Fatalf("takeover %d of duo: %v %v", i+1, run, err)
		}
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
	hs.match = func(w *agent.Write) bool { return w.Task.ID == res.TaskID && w.Task.Status == agent.StatusFailed }
	hs.after = func() { rw.set(approval.TaskID) }
	if run, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID); run != nil || err != nil {
		t.Fatalf("the last takeover of duo: %v %v", run, err)
	}
	rw.set("")
	if v := o.View(t, "duo", res.TaskID); v.Status != agent.StatusFailed {
		t.Fatalf("duo after %d dead takeovers: %s, want Failed", agent.MaxTakeovers, v.Status)
	}
	o.runDue(t)
	if lv := o.View(t, "leaf", approval.TaskID); lv.Status != agent.StatusCanceled {
		t.Errorf("leaf below the failed duo: %s, want Canceled", lv.Status)
	}
	if got := o.Lines("given_up.txt"); len(got) != 0 {
		t.Errorf("given_up.txt = %q: leaf's call ran below the failed root", got)
	}
}

// failingWrite fails, once, the first write match accepts: a store
// error the leg sees.
type failingWrite struct {
	agent.Store
	mu    sync.Mutex
	match func(*agent.Write) bool
}

func (s *failingWrite) Write(ctx context.Context, w *agent.Write) error {
	s.mu.Lock()
	fail := s.match != nil && s.match(w)
	if fail {
		s.match = nil
	}
	s.mu.Unlock()
	if fail {
		return errTransient
	}
	return s.Store.Write(ctx, w)
}

// testFailedCallerFlagsItsChildren: leaf pauses below desk, and desk's
// pause cannot be saved, so desk ends Failed internal with its call of
// leaf closed — and the process dies before it cancels leaf (leaf's
// writes refused once desk's end lands). leaf is flagged in desk's end's
// own transaction: the reaper finds it at once and ends it Canceled, and
// its append never runs below the failed root (the torture test, seed
// 979314163, left a child Paused below a caller that ended Failed).
func testFailedCallerFlagsItsChildren(t *testing.T, newStore func(testing.TB) agent.Store) {
	rw := &refusingWrites{Store: newStore(t)}
	hs := &hookStore{Store: rw}
	fw := &failingWrite{Store: hs}
	o := NewOrch(t, fw)
	fw.match = func(w *agent.Write) bool {
		return w.Task.Agent == "desk" && w.Task.Active != nil && w.Task.Active.Status == agent.StatusPaused
	}
	var leafID string
	flaggedAtTheEnd := false
	hs.match = func(w *agent.Write) bool {
		if w.Task.Agent == "desk" && w.Task.Status == agent.StatusFailed {
			leafID = w.Task.Children["leaf"]
			return true
		}
		return false
	}
	hs.after = func() {
		leaf, err := o.Store.GetTask(context.Background(), leafID)
		flaggedAtTheEnd = err == nil && leaf.Active != nil && leaf.Active.CancelRequested
		rw.set(leafID)
	}
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", Append("failed_caller.txt", "x")))
	rw.set("")
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeInternal}, ended{res.Status, codeOf(res.Error)}); diff != "" {
		t.Fatalf("desk, its pause refused (-want +got):\n%s", diff)
	}
	if leafID == "" {
		t.Fatal("desk's end never landed, or named no child")
	}
	if !flaggedAtTheEnd {
		t.Errorf("leaf was not flagged for cancel in desk's end's own transaction")
	}
	o.runDue(t)
	if lv := o.View(t, "leaf", leafID); lv.Status != agent.StatusCanceled {
		t.Errorf("leaf below the failed desk: %s, want Canceled", lv.Status)
	}
	if got := o.Lines("failed_caller.txt"); len(got) != 0 {
		t.Errorf("failed_caller.txt = %q: leaf's call ran below the failed root", got)
	}
}

// beforeList runs before, once, before the next ListRequests.
type beforeList struct {
	agent.Store
	mu     sync.Mutex
	before func()
}

func (s *beforeList) ListRequests(ctx context.Context, taskID string) ([]agent.RequestRecord, error) {
	s.mu.Lock()
	run := s.before
	s.before = nil
	s.mu.Unlock()
	if run != nil {
		run()
	}
	return s.Store.ListRequests(ctx, taskID)
}

// testViewWhileTheRequestEnds: GET task reads META (the request paused),
// then the approval ends the request before its records are listed. The
// request is shown once, with its one decision — before, it was shown
// twice (the record and the META's copy), its decision with it (the
// torture test read two decisions, then one, and took it for a refused
// body that changed them).
func testViewWhileTheRequestEnds(t *testing.T, newStore func(testing.TB) agent.Store) {
	bl := &beforeList{Store: newStore(t)}
	o := NewOrch(t, bl)
	res, _ := o.Invoke(t, "leaf", "", Append("viewed.txt", "x"))
	if res.Status != agent.StatusPaused {
		t.Fatalf("leaf: %+v", res)
	}
	bl.mu.Lock()
	bl.before = func() {
		if done, _, err := o.Resume("leaf", res.TaskID, res.RequestID, Approve()); err != nil || done.Status != agent.StatusCompleted {
			t.Errorf("the approval: %+v %v", done, err)
		}
	}
	bl.mu.Unlock()
	v := o.View(t, "leaf", res.TaskID)
	if len(v.Requests) != 1 {
		t.Fatalf("GET task as the request ended: %d requests, want 1: %+v", len(v.Requests), v.Requests)
	}
	if n := len(v.Requests[0].Decisions); n != 1 {
		t.Errorf("the request shows %d decisions, want 1", n)
	}
}

// testWholeRoundAfterAPartialCopy: pair waits on leaf's and twin's
// calls in round 1; twin is approved at its own URL, and pair's
// continuation copies that as its round 1 — a part of the round (leaf's
// call still waits, in pair's round 2). An approve-all naming round 1 at
// pair names leaf's call too, which round 1 never decided: not the same
// decision, so 409 not_paused — before, it was taken for a duplicate of
// the copy and answered 200 with the pause that still asks for leaf's
// call (the torture test: duo, a direct approve of a past round).
func testWholeRoundAfterAPartialCopy(t *testing.T, o *Orch) {
	res := pausedOnTwo(t, o)
	twin := pendingAt(res, "twin")
	if out, _, err := o.Resume("twin", twin.TaskID, twin.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve at twin: %+v %v", out, err)
	}
	o.runContinuations(t, res.TaskID)
	type copied struct {
		Status       agent.Status
		DecidedRound int
	}
	v := o.View(t, "pair", res.TaskID)
	if diff := cmp.Diff(copied{agent.StatusPaused, 1}, copied{v.Status, v.Requests[0].Decisions[0].Round}); diff != "" {
		t.Fatalf("pair after twin's end, want Paused on leaf alone, its round 1 twin's copy (-want +got):\n%s", diff)
	}
	whole := agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(1)}
	if out, _, err := o.Resume("pair", res.TaskID, res.RequestID, whole); Code(err) != agent.CodeNotPaused {
		t.Errorf("approve-all of pair's round 1, which decided twin's call alone: %+v %v, want not_paused", out, err)
	}
	if got := o.Lines("l.txt"); len(got) != 0 {
		t.Errorf("l.txt = %q: leaf's call ran", got)
	}
}

// testChildMadeAgainAfterItsDelete: desk's child task of leaf is deleted
// while its end's webhook is still owed (the delete keeps that request's
// record for it), and desk's next message calls leaf again: the child
// task is made again under the same id. Its history holds only the new
// request — before, the record kept for the webhook showed in it, as if
// the deleted request had survived (the torture test's hour).
func testChildMadeAgainAfterItsDelete(t *testing.T, o *Orch) {
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", "hello"))
	if res.Status != agent.StatusCompleted {
		t.Fatalf("desk: %+v", res)
	}
	ctx := context.Background()
	dt := mustTask(t, o, res.TaskID)
	child := dt.Children["leaf"]
	if child == "" {
		t.Fatalf("desk has no child of leaf: %+v", dt.Children)
	}
	if err := o.E.DeleteTask(ctx, "leaf", "alice", child); err != nil {
		t.Fatalf("delete leaf's task: %v", err)
	}
	again, _ := o.Invoke(t, "desk", res.TaskID, CallAgent("leaf", "hello again"))
	if again.Status != agent.StatusCompleted {
		t.Fatalf("desk's second message: %+v", again)
	}
	v := o.View(t, "leaf", child)
	if len(v.Requests) != 1 {
		t.Errorf("leaf's task made again shows %d requests, want the new one alone: %+v", len(v.Requests), v.Requests)
	}
}

// testCallerPausesOnAnExpiredLeaf: pair's leg runs leaf and twin; twin
// pauses first (its approval expires within a second), and before pair's
// leg pauses on both, twin's round expires and its expiry is applied (a
// decision at twin's own URL answered 410) — its continuation of pair
// refused meanwhile, pair held by its leg (the torture's find, seed
// 482250695: a duo taken over after a fault paused on a leaf Failed 27 s
// before, waiting for a continuation's retry). Pair's pause carries its
// leaves' expiries, so the round it pauses in has expired: the chain's
// expiry ends it there, never a caller Paused on a leaf nothing can decide.
func testCallerPausesOnAnExpiredLeaf(t *testing.T, newStore func(testing.TB) agent.Store) {
	hs := &hookStore{Store: newStore(t)}
	o := NewOrch(t, hs)
	var twinTask, twinReq string
	hs.match = func(w *agent.Write) bool {
		if a := w.Task.Active; w.Task.Agent == "twin" && a != nil && a.Status == agent.StatusPaused {
			twinTask, twinReq = w.Task.ID, a.ID
			return true
		}
		return false
	}
	hs.after = func() {
		time.Sleep(1200 * time.Millisecond) // twin's round expires
		if _, _, err := o.Resume("twin", twinTask, twinReq, Approve()); Code(err) != agent.CodeApprovalExpired {
			t.Errorf("approve at twin past its expiry: %v, want approval_expired", err)
		}
	}
	res, _ := o.Invoke(t, "pair", "", CallAgent("twin", Append("t.txt", "x"))+"\n"+CallAgent("leaf", Append("l.txt", "x")))
	if twinTask == "" {
		t.Fatalf("twin never paused: pair %+v", res)
	}
	if tv := o.View(t, "twin", twinTask); tv.Status != agent.StatusFailed {
		t.Fatalf("twin: %s, want Failed (expired)", tv.Status)
	}
	pv := o.View(t, "pair", res.TaskID)
	if pv.Status != agent.StatusFailed {
		t.Errorf("pair: %s (round %d), want Failed: it paused on twin's round, which had expired", pv.Status, pv.Round)
	}
	if got := o.Lines("l.txt"); len(got) != 0 {
		t.Errorf("l.txt = %q: leaf's call ran below an expired chain", got)
	}
}

// testMessageToAnExpiredCaller: pair waits on twin, whose approval expires
// within a second, and a new message comes to pair's task after that. If
// twin was approved at its own URL in time (and ran), the chain goes on:
// 409 task_busy, and pair's history never says its call of twin expired.
// If nobody decided, the whole chain expires — twin too, not left paused
// below pair — and the message runs. Before, the message expired pair's
// round alone: its call of twin "approval expired" though twin ran, and
// twin paused below an idle pair (the torture test, seed 113436590).
func testMessageToAnExpiredCaller(t *testing.T, newStore func(testing.TB) agent.Store) {
	for _, decided := range []bool{true, false} {
		t.Run(map[bool]string{true: "decided at the leaf", false: "nobody decided"}[decided], func(t *testing.T) {
			o := NewOrch(t, newStore(t))
			res, _ := o.Invoke(t, "pair", "", CallAgent("twin", Append("t.txt", "x")))
			if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
				t.Fatalf("pair (-want +got):\n%s", diff)
			}
			p := res.PendingApprovals[0]
			if decided {
				if out, _, err := o.Resume("twin", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
					t.Fatalf("approve at twin: %+v %v", out, err)
				}
			}
			time.Sleep(1100 * time.Millisecond) // twin's round expires
			run, err := o.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "pair", UserID: "alice", TaskID: res.TaskID,
				Items: []agent.InputItem{{Content: "and now?"}}})
			if decided {
				if Code(err) != agent.CodeTaskBusy {
					t.Errorf("a message to pair, its leaf decided in time: %v, want task_busy", err)
				}
				if b := callResult(t, o, res.TaskID, "twin"); b != nil && strings.Contains(resultText(b), "expired") {
					t.Errorf("pair's call of twin, which ran: %q", resultText(b))
				}
				if got := o.Lines("t.txt"); len(got) != 1 {
					t.Errorf("t.txt = %q, want twin's one append", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("a message to pair, its chain expired: %v", err)
			}
			run.Execute(context.Background(), nil)
			if tv := o.View(t, "twin", p.TaskID); tv.Status != agent.StatusFailed {
				t.Errorf("twin after the chain expired: %s, want Failed", tv.Status)
			}
			if b := callResult(t, o, res.TaskID, "twin"); b == nil || !strings.HasPrefix(resultText(b), "approval expired") {
				t.Errorf("pair's call of twin, which expired: %v", b)
			}
			if got := o.Lines("t.txt"); len(got) != 0 {
				t.Errorf("t.txt = %q: an expired call ran", got)
			}
		})
	}
}

// testCancelAfterTheExpiry: a cancel that comes after a paused round's
// expiry finds the request ended by the clock: 409 not_running, the
// request Failed approval_expired — one round, one outcome — for a leaf
// and for a caller (its chain expires whole: its leaf ends Failed
// approval_expired too, not Canceled, so the caller's "approval expired"
// is its leaf's own end; the torture test, seed 113436590, found a remote
// leaf Canceled below a caller that said its call expired).
func testCancelAfterTheExpiry(t *testing.T, newStore func(testing.TB) agent.Store) {
	for _, top := range []string{"twin", "pair"} {
		t.Run(top, func(t *testing.T) {
			o := NewOrch(t, newStore(t))
			text := Append("t.txt", "x")
			if top == "pair" {
				text = CallAgent("twin", text)
			}
			res, _ := o.Invoke(t, top, "", text)
			if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
				t.Fatalf("%s (-want +got):\n%s", top, diff)
			}
			leaf := res.PendingApprovals[0].TaskID
			if leaf == "" {
				leaf = res.TaskID
			}
			time.Sleep(1100 * time.Millisecond) // twin's round expires
			if _, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: top, UserID: "alice", TaskID: res.TaskID}); Code(err) != agent.CodeNotRunning {
				t.Errorf("cancel after the expiry: %v, want not_running", err)
			}
			for name, id := range map[string]string{top: res.TaskID, "twin": leaf} {
				v := o.View(t, name, id)
				got := ended{Status: v.Status}
				if len(v.Requests) > 0 {
					got.Code = codeOf(v.Requests[0].Error)
				}
				if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeApprovalExpired}, got); diff != "" {
					t.Errorf("%s after the cancel (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// testFlaggedCallerPastItsExpiry: pair waits on leaf and twin; a cancel of
// pair flags the chain but cannot finish (leaf's writes refused), so pair
// stays Paused and flagged, and twin's round then passes its expiry. A
// decision at pair meanwhile is 409 not_paused (the cancel under way
// ends it), never an expiry applied to pair as to a leaf: that closed
// pair's sub-agent calls with a did-not-run text, and leaf's could have
// run (the torture test, seed 663000159: rmid's call of its remote leaf).
func testFlaggedCallerPastItsExpiry(t *testing.T, newStore func(testing.TB) agent.Store) {
	rw := &refusingWrites{Store: newStore(t)}
	hs := &hookStore{Store: rw}
	o := NewOrch(t, hs)
	res := pausedOnTwo(t, o)
	leaf := pendingAt(res, "leaf")
	hs.match = func(w *agent.Write) bool {
		return w.Task.ID == res.TaskID && w.Task.Active != nil && w.Task.Active.CancelRequested
	}
	hs.after = func() { rw.set(leaf.TaskID) }
	ctx := context.Background()
	if out, err := o.E.Cancel(ctx, agent.CancelInput{Agent: "pair", UserID: "alice", TaskID: res.TaskID, Reason: "stop"}); err == nil && !out.Pending {
		t.Fatalf("cancel of pair with leaf's writes refused: %+v, want it under way", out)
	}
	if pv := o.View(t, "pair", res.TaskID); pv.Status != agent.StatusPaused {
		t.Fatalf("pair once its cancel could not finish: %s, want Paused (flagged)", pv.Status)
	}
	time.Sleep(1100 * time.Millisecond) // twin's round expires
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeNotPaused {
		t.Errorf("approve at the flagged pair past twin's expiry: %v, want not_paused", err)
	}
	rw.set("")
	pv := o.View(t, "pair", res.TaskID)
	for _, r := range pv.Requests {
		for _, d := range r.Decisions {
			if d.Approver == agent.ApproverExpiry {
				t.Errorf("pair's round %d was closed by an expiry while its cancel was under way", d.Round)
			}
		}
	}
	if got := o.Lines("l.txt"); len(got) != 0 {
		t.Errorf("l.txt = %q: leaf ran below a canceled caller", got)
	}
}
