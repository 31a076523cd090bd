package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// The resume answer table's edges (docs/api.md, "Resume: the answer
// table"): bodies that say two things, a call that asks again in a later
// round, and rounds closed by expiry.

// unchanged fails the test when the task's META or history moved since
// before.
func (env *Env) unchanged(t *testing.T, taskID string, before *agent.Task, items []agent.Item, what string) {
	t.Helper()
	after, items2, err := env.Store.LoadTask(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" || len(items) != len(items2) {
		t.Errorf("%s changed the task (-before +after):\n%s", what, diff)
	}
}

// testMixedBody: a body with both action and decisions is 400
// invalid_decisions, whichever way they point, and nothing changes: a body
// saying "reject" never approves through its decisions.
func testMixedBody(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	for name, body := range map[string]agent.ResumeRequest{
		"reject with an approve": {Action: agent.ActionReject, Reason: "no!", Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionApprove}}},
		"approve with a reject":  {Action: agent.ActionApprove, Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionReject}}},
		"approve with an approve": {Action: agent.ActionApprove, Round: Round(1),
			Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionApprove}}},
	} {
		if out, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInvalidDecisions {
			t.Errorf("%s: %+v %v, want invalid_decisions", name, out, err)
		}
	}
	env.unchanged(t, res.TaskID, before, items, "a mixed body")
	if n := len(env.Guarded.Runs()) + len(env.Safe.Runs()); n != 0 {
		t.Errorf("%d calls ran after mixed bodies", n)
	}
	env.Model.Add(agenttest.Say("kept"))
	if out, _, err := env.Resume(res, "alice", Reject("no")); err != nil || out.Status != agent.StatusCompleted || len(env.Guarded.Runs()) != 0 {
		t.Fatalf("the reject alone: %+v %v", out, err)
	}
}

// askTwice makes the Booker ask for a URL in round 1 and, in the same
// call, for another in round 2: the call keeps its id (b1) in both.
func (env *Env) askTwice(t *testing.T) (*agent.RequestResult, agent.ResumeRequest) {
	t.Helper()
	login := agent.Elicitation{Key: "login", Mode: agent.ElicitURL, Message: "Log in", URL: "https://pay.example.com/login"}
	pay := agent.Elicitation{Key: "pay", Mode: agent.ElicitURL, Message: "Confirm paying $5000", URL: "https://pay.example.com/confirm"}
	env.Booker.Asks = [][]agent.Elicitation{{login}, {pay}}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, bookCall("b1")))
	res, _ := env.Invoke(t, "", "pay")
	accept := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("b1", `{"action":"accept"}`)}}
	out, _, err := env.Resume(res, "alice", accept)
	if err != nil {
		t.Fatalf("round 2: %v", err)
	}
	type round2 struct {
		Status agent.Status
		Round  int
		Inputs []question
	}
	want := round2{agent.StatusPaused, 2, []question{{"b1", "Confirm paying $5000"}}}
	if diff := cmp.Diff(want, round2{out.Status, out.Round, questions(out.PendingInputs)}); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	return res, accept
}

// testAskedAgainNeedsRound: a call that asks again in a later round keeps
// its id, so a decision naming it must name its round: the same answer
// sent again without one is 400 round_required (a retry, a second tab),
// a round above the current one 400 invalid_decisions — nothing changes
// on either; round 1 named is a past-round decision (its leg's outcome,
// nothing runs; another answer 409 not_paused); round 2 named answers
// round 2.
func testAskedAgainNeedsRound(t *testing.T, env *Env) {
	res, accept := env.askTwice(t)
	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	if out, _, err := env.Resume(res, "alice", accept); Code(err) != agent.CodeRoundRequired {
		t.Errorf("round 1's answer again, without its round: %+v %v, want round_required", out, err)
	}
	late := accept
	late.Round = Round(7)
	if out, _, err := env.Resume(res, "alice", late); Code(err) != agent.CodeInvalidDecisions {
		t.Errorf("round 7: %+v %v, want invalid_decisions", out, err)
	}
	env.unchanged(t, res.TaskID, before, items, "a refused answer")
	if n := len(env.Booker.Runs()); n != 2 {
		t.Fatalf("the tool ran %d times, want 2 (nobody answered round 2)", n)
	}
	first := accept
	first.Round = Round(1)
	if out, _, err := env.Resume(res, "alice", first); err != nil {
		t.Errorf("round 1's answer again, with its round: %v, want its leg's outcome (Paused, round 2)", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Errorf("round 1's answer again, with its round, want its leg's outcome (-want +got):\n%s", diff)
	}
	decline := agent.ResumeRequest{Round: Round(1), Decisions: []agent.DecisionInput{answer("b1", `{"action":"decline"}`)}}
	if _, _, err := env.Resume(res, "alice", decline); Code(err) != agent.CodeNotPaused {
		t.Errorf("another answer of round 1: %v, want not_paused", err)
	}
	if n := len(env.Booker.Runs()); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	env.Model.Add(agenttest.Say("paid"))
	second := accept
	second.Round = Round(2)
	out, _, err := env.Resume(res, "alice", second)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2's answer: %+v %v", out, err)
	}
	runs := env.Booker.Runs()
	type lastRun struct {
		Runs  int
		State string
		Keys  []string
	}
	got := lastRun{Runs: len(runs)}
	if r := runs[len(runs)-1].Reply; r != nil {
		got.State = r.State
		got.Keys = each(r.Responses, func(e agent.ElicitResponse) string { return e.Key })
	}
	if diff := cmp.Diff(lastRun{3, "round-1", []string{"pay"}}, got); diff != "" {
		t.Errorf("the tool's runs, and the last one's reply (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", accept); Code(err) != agent.CodeRoundRequired {
		t.Errorf("the answer without a round after the end: %v, want round_required", err)
	}
}

// testExpiredRoundAnswers410: a round closed by expiry answers 410 to
// every decision of it — the same as another's, another, a first one;
// with its round, without, by its calls — whoever applied the expiry (the
// reaper here, before any resume; a message) and whatever came after (a
// follow-on request of the task).
func testExpiredRoundAnswers410(t *testing.T, env *Env) {
	ctx := context.Background()
	res, _ := env.Pause(t)
	env.Advance(2 * time.Hour)
	if run, err := env.E.StartTakeover(ctx, res.TaskID, res.RequestID); run != nil || err != nil {
		t.Fatalf("the reaper's expiry: %v %v", run, err)
	}
	bodies := map[string]agent.ResumeRequest{
		"approve":              Approve(),
		"reject":               Reject("late"),
		"approve of round 1":   {Action: agent.ActionApprove, Round: Round(1)},
		"decisions":            {Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionApprove}}},
		"decisions of round 1": {Round: Round(1), Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionReject}}},
	}
	check := func(when string) {
		t.Helper()
		for name, body := range bodies {
			if out, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeApprovalExpired {
				t.Errorf("%s, %s: %+v %v, want approval_expired", when, name, out, err)
			}
		}
	}
	check("after the reaper's expiry")
	env.Model.Add(agenttest.Say("fresh"))
	if next, _ := env.Invoke(t, res.TaskID, "start over"); next.Status != agent.StatusCompleted {
		t.Fatalf("follow-on: %+v", next)
	}
	check("after a follow-on")
	if n := len(env.Guarded.Runs()) + len(env.Safe.Runs()); n != 0 {
		t.Errorf("%d calls ran", n)
	}

	// An input's round, expired by a message: input_expired.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, askCall("q1")))
	asked, _ := env.Invoke(t, "", "ask me")
	env.Advance(3 * time.Hour)
	env.Model.Add(agenttest.Say("moved on"))
	if next, _ := env.Invoke(t, asked.TaskID, "never mind"); next.Status != agent.StatusCompleted {
		t.Fatalf("follow-on of the expired question: %+v", next)
	}
	body := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer("q1", `"yes"`)}}
	if _, _, err := env.Resume(asked, "alice", body); Code(err) != agent.CodeInputExpired {
		t.Errorf("an answer after a message expired the question: %v, want input_expired", err)
	}
}

// testPastRoundOfAnExpiredRequest: the rounds before the one closed by
// expiry were decided by a person: their decisions answer as past rounds
// (their leg's outcome, or not_paused); only the expired round is 410.
func testPastRoundOfAnExpiredRequest(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "second")))
	if out, _, err := env.Resume(res, "alice", Approve()); err != nil {
		t.Fatalf("round 2: %v", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	env.Advance(2 * time.Hour)
	if run, err := env.E.StartTakeover(context.Background(), res.TaskID, res.RequestID); run != nil || err != nil {
		t.Fatalf("the reaper's expiry: %v %v", run, err)
	}
	if out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(1)}); err != nil {
		t.Errorf("round 1's approval again: %v, want its leg's outcome", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Errorf("round 1's approval again, want its leg's outcome (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionReject, Round: Round(1)}); Code(err) != agent.CodeNotPaused {
		t.Errorf("round 1 decided otherwise: %v, want not_paused", err)
	}
	for name, body := range map[string]agent.ResumeRequest{
		"round 2":        {Action: agent.ActionApprove, Round: Round(2)},
		"g2's decisions": {Decisions: []agent.DecisionInput{{ToolCallID: "g2", Action: agent.ActionApprove}}},
	} {
		if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeApprovalExpired {
			t.Errorf("%s: %v, want approval_expired", name, err)
		}
	}
}

// testElicitAgainAtRoot: a leaf's call that asks again in round 2 shows at
// the root under the same id: the root's decision naming it must name the
// root's round too (round_required; a round above, invalid_decisions),
// nothing changed anywhere; with it, the chain completes.
func testElicitAgainAtRoot(t *testing.T, o *Orch) {
	login := agent.Elicitation{Key: "login", Mode: agent.ElicitURL, Message: "Log in", URL: "https://pay.example.com/login"}
	pay := agent.Elicitation{Key: "pay", Mode: agent.ElicitURL, Message: "Confirm paying $5000", URL: "https://pay.example.com/confirm"}
	o.Booker.Asks = [][]agent.Elicitation{{login}, {pay}}
	res, _ := o.Invoke(t, "chief", "", CallAgent("front", CallAgent("asker", `/call book_table {"day":"friday"}`)))
	if diff := cmp.Diff(asking{agent.StatusPaused, 1}, askingOf(res)); diff != "" {
		t.Fatalf("chief (-want +got):\n%s", diff)
	}
	p := res.PendingInputs[0]
	accept := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `{"action":"accept"}`)}}
	out, _, err := o.Resume("chief", res.TaskID, res.RequestID, accept)
	if err != nil {
		t.Fatalf("round 2 at chief: %v", err)
	}
	type round2 struct {
		Status agent.Status
		Inputs []question
	}
	want := round2{agent.StatusPaused, []question{{p.ToolCallID, "Confirm paying $5000"}}}
	if diff := cmp.Diff(want, round2{out.Status, questions(out.PendingInputs)}); diff != "" {
		t.Fatalf("round 2 at chief (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	chief, _ := o.Store.GetTask(ctx, res.TaskID)
	leaf, _ := o.Store.GetTask(ctx, p.TaskID)
	if _, _, err := o.Resume("chief", res.TaskID, res.RequestID, accept); Code(err) != agent.CodeRoundRequired {
		t.Errorf("round 1's answer again at chief, without its round: %v, want round_required", err)
	}
	late := accept
	late.Round = Round(out.Round + 1)
	if _, _, err := o.Resume("chief", res.TaskID, res.RequestID, late); Code(err) != agent.CodeInvalidDecisions {
		t.Errorf("a round above chief's: %v, want invalid_decisions", err)
	}
	if c, l := mustTask(t, o, res.TaskID), mustTask(t, o, p.TaskID); c.Version != chief.Version || l.Version != leaf.Version {
		t.Errorf("a refused answer changed chief or asker")
	}
	if n := len(o.Booker.Runs()); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	second := accept
	second.Round = Round(out.Round)
	if done, _, err := o.Resume("chief", res.TaskID, res.RequestID, second); err != nil || done.Status != agent.StatusCompleted {
		t.Fatalf("round 2 answered at chief: %+v %v", done, err)
	}
	type thirdRun struct {
		Runs     int
		FirstKey string
	}
	runs := o.Booker.Runs()
	got := thirdRun{Runs: len(runs)}
	if len(runs) == 3 && runs[2].Reply != nil {
		got.FirstKey = runs[2].Reply.Responses[0].Key
	}
	if diff := cmp.Diff(thirdRun{3, "pay"}, got); diff != "" {
		t.Errorf("the tool's runs, and the third one's reply (-want +got):\n%s", diff)
	}
}

// testLeafRoundsCopiedByRound: front waits on asker's round 1 (its call
// asks to log in); asker is answered at its own URL, asks again under the
// same call id (round 2: confirm paying) and is refused there, before
// front's continuation runs. front copies, for its round, the decision of
// the asker round it waited on — the answer — never asker's last one:
// before, the refusal of round 2 (which front never showed) was recorded
// as front's round 1, and a refusal sent to front for that round was a
// duplicate answered 200 (the torture test: mid and a leaf's form call).
func testLeafRoundsCopiedByRound(t *testing.T, o *Orch) {
	login := agent.Elicitation{Key: "login", Mode: agent.ElicitURL, Message: "Log in", URL: "https://pay.example.com/login"}
	pay := agent.Elicitation{Key: "pay", Mode: agent.ElicitURL, Message: "Confirm paying $5000", URL: "https://pay.example.com/confirm"}
	o.Booker.Asks = [][]agent.Elicitation{{login}, {pay}}
	res, _ := o.Invoke(t, "front", "", CallAgent("asker", `/call book_table {"day":"friday"}`))
	if diff := cmp.Diff(asking{agent.StatusPaused, 1}, askingOf(res)); diff != "" {
		t.Fatalf("front (-want +got):\n%s", diff)
	}
	p := res.PendingInputs[0]
	accept := agent.ResumeRequest{Decisions: []agent.DecisionInput{answer(p.ToolCallID, `{"action":"accept"}`)}}
	if out, _, err := o.Resume("asker", p.TaskID, p.RequestID, accept); err != nil || out.Status != agent.StatusPaused {
		t.Fatalf("asker's round 1 answered at its URL: %+v %v", out, err)
	}
	refuse := agent.ResumeRequest{Round: Round(2), Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionReject, Reason: "no"}}}
	if out, _, err := o.Resume("asker", p.TaskID, p.RequestID, refuse); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("asker's round 2 refused at its URL: %+v %v", out, err)
	}
	o.runContinuations(t, res.TaskID)
	fv := o.View(t, "front", res.TaskID)
	if fv.Status != agent.StatusCompleted {
		t.Fatalf("front after its continuations: %s", fv.Status)
	}
	var got []string
	for _, d := range fv.Requests[0].Decisions {
		got = append(got, fmt.Sprintf("r%d %s", d.Round, d.Action))
	}
	if want := []string{"r1 answer"}; !slices.Equal(got, want) {
		t.Errorf("front records %v, want %v (the asker round it waited on)", got, want)
	}
	if _, _, err := o.Resume("front", res.TaskID, res.RequestID, agent.ResumeRequest{Round: Round(1),
		Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionReject, Reason: "no"}}}); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("a refusal of front's round 1, answered otherwise: %v, want decision_conflict", err)
	}
}

func mustTask(t *testing.T, o *Orch, id string) *agent.Task {
	t.Helper()
	tk, err := o.Store.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// testDeadRootDecisionTwice: a decision at the root boss (reject) claims
// the leaf and boss, and its process dies before anything runs. The
// reaper takes boss over: it drives the dead leaf below (docs/api.md,
// "Agents as tools"), and never pauses boss again on the call that decision
// decided — a second round showing it again made the same decision,
// sent twice, answer 200 Completed (it decided round 2) and then 200
// Paused round 2 (round 1's, once past): the torture test's find. Sent
// twice now, it answers the same both times.
func testDeadRootDecisionTwice(t *testing.T, o *Orch) {
	res, _, p := pausedAtDepthTwo(t, o, "twice.txt")
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	ctx := context.Background()
	reject := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionReject, Reason: "no"}}}
	if _, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "boss", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: reject}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
	run, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID)
	if err != nil || run == nil {
		t.Fatalf("takeover of boss: %v %v", run, err)
	}
	took := run.Execute(ctx, &Recorder{})
	for _, pa := range took.PendingApprovals {
		if pa.ToolCallID == p.ToolCallID {
			t.Errorf("boss's takeover paused it again (round %d) on %s, which round 1 decided", took.Round, pa.ToolCallID)
		}
	}
	first, _, err1 := o.Resume("boss", res.TaskID, res.RequestID, reject)
	second, _, err2 := o.Resume("boss", res.TaskID, res.RequestID, reject)
	if a, b := outcome(first, err1), outcome(second, err2); a != b {
		t.Errorf("the same decision twice answered %s, then %s", a, b)
	}
	if bv := o.View(t, "boss", res.TaskID); bv.Status != agent.StatusCompleted {
		t.Errorf("boss: %s round %d, want Completed", bv.Status, bv.Round)
	}
	if got := o.Lines("twice.txt"); len(got) != 0 {
		t.Errorf("twice.txt = %q: a rejected call ran", got)
	}
}

// outcome is an answer as the torture test's checker compares answers.
func outcome(res *agent.RequestResult, err error) string {
	if err != nil {
		return Code(err)
	}
	if res.Status == agent.StatusPaused {
		return fmt.Sprintf("Paused round %d", res.Round)
	}
	return string(res.Status)
}

// testRunningRoundNeedsRound: an approve-all without its round from round
// 2 on is 400 round_required while the round's leg runs too, not a
// conflict: the body is refused before the state is compared.
func testRunningRoundNeedsRound(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "second")))
	if out, _, err := env.Resume(res, "alice", Approve()); err != nil {
		t.Fatalf("round 2: %v", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	if _, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID,
		Body: agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(2)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeRoundRequired {
		t.Errorf("approve all without its round while round 2 runs: %v, want round_required", err)
	}
}

// testDeadCallerAnswerTakenOver: an answer at the root chief (its leaf
// asker's question) claims the chain, and the process dies before
// anything runs. chief's takeover carries on: the answer is the leaf's
// (its DEC# item), chief's copy of the round keeps only its hash, and the
// takeover must not fail reading answers chief does not hold — which
// ended chief Failed internal with asker left Paused below it (the
// torture test, seed 979314163).
func testDeadCallerAnswerTakenOver(t *testing.T, o *Orch) {
	res, p := pausedOnQuestion(t, o)
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	// Long enough that the takeover's own leg keeps it on a loaded
	// machine (at 1 s it lost its lease there now and then).
	agent.LeaseDuration = 3 * time.Second
	ctx := context.Background()
	answer := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionAnswer, Result: json.RawMessage(`"blue"`)}}}
	if _, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "chief", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: answer}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
	run, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID)
	if err != nil || run == nil {
		t.Fatalf("takeover of chief: %v %v", run, err)
	}
	if took := run.Execute(ctx, &Recorder{}); took.Status == agent.StatusFailed {
		t.Fatalf("chief's takeover: %s %+v", took.Status, took.Error)
	}
	if av := o.View(t, "asker", p.TaskID); av.Status == agent.StatusPaused {
		t.Errorf("asker is %s below chief's takeover", av.Status)
	}
}
