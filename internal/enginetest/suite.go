package enginetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// Run runs the suite over stores made by newStore (a fresh store, or a fresh
// table, per call).
func Run(t *testing.T, newStore func(tb testing.TB) agent.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *Env)
	}{
		{"PauseRunsNothing", testPauseRunsNothing},
		{"ApproversFourEyes", testFourEyes},
		{"ApproversStrangers", testStrangers},
		{"ApproversQuorumTwo", testQuorumTwo},
		{"ApproversQuorumRace", testQuorumRace},
		{"ApproversQuorumReject", testQuorumReject},
		{"ApproversQuorumEdit", testQuorumEdit},
		{"ApproversQuorumTrust", testQuorumTrust},
		{"ApproversQuorumExpiry", testQuorumExpiry},
		{"ApproversFourEyesAtTheCaller", testFourEyesAtTheCaller},
		{"ApproversEachCallItsDecider", testEachCallItsDecider},
		{"ApproversDecisionView", testDecisionView},
		{"ApproveRunsOnceAndContinues", testApprove},
		{"RejectReachesTheModel", testReject},
		{"EditRunsTheNewInput", testEdit},
		{"RoundsAndStaleApproveAll", testRounds},
		{"AnswerTable", testAnswerTable},
		{"FiftyConcurrentApprovals", testFiftyApprovals},
		{"FiftyApprovalsAppendOnce", testFiftyAppends},
		{"ApprovalsRaceRejections", testApproveRejectRace},
		{"Expiry", testExpiry},
		{"ExpiredPauseYieldsToAMessage", testExpiredFollowOn},
		{"TakeoverAfterLeaseExpiry", testTakeover},
		{"WaitingDuplicateTakesOver", testDuplicateTakesOver},
		{"StalledHolderStops", testStalledHolder},
		{"DeadLegHistoryTellsTheTruth", testDeadLegHistoryTellsTheTruth},
		{"CancelDeadLegTellsTheTruth", testCancelDeadLegTellsTheTruth},
		{"ReaperTakesOverADeadInvoke", testReaperTakesOverADeadInvoke},
		{"ReaperLeavesLiveLegs", testReaperLeavesLiveLegs},
		{"ReaperExpiresRounds", testReaperExpiresRounds},
		{"ReaperGivesUp", testReaperGivesUp},
		{"ReaperLoop", testReaperLoop},
		{"ReaperPassesWhatItCannotTake", testReaperPassesWhatItCannotTake},
		{"ReaperExpiresBehindOthers", testReaperExpiresBehindOthers},
		{"PastRoundAnswersItsLeg", testPastRoundAnswersItsLeg},
		{"PastRoundWithoutItsLog", testPastRoundWithoutItsLog},
		{"DuplicateAnswersItsLeg", testDuplicateAnswersItsLeg},
		{"CancelPaused", testCancelPaused},
		{"CancelRunning", testCancelRunning},
		{"UnansweredMessageStaysApart", testUnansweredMessageStaysApart},
		{"CancelMidTool", testCancelMidTool},
		{"CancelThroughTheStore", testCancelThroughStore},
		{"CancelDeadRequest", testCancelDeadRequest},
		{"CancelRacesADecision", testCancelRacesADecision},
		{"EditThenFollowOn", testEditThenFollowOn},
		{"EditRefusals", testEditRefusals},
		{"ReconnectAtEveryEvent", testReconnectEverywhere},
		{"FollowLive", testFollowLive},
		{"RequestLost", testRequestLost},
		{"DeadLegEvents", testDeadLegEvents},
		{"LateFlushHidden", testLateFlushHidden},
		{"EventsRefusals", testEventsRefusals},
		{"IdempotentInvokes", testIdempotentInvokes},
		{"IdempotentResume", testIdempotentResume},
		{"Delete", testDelete},
		{"DeleteKeepsOwedNotifications", testDeleteKeepsOwedNotifications},
		{"DuplicateInFlightBindsItsWaiter", testDuplicateInFlightBindsItsWaiter},
		{"Retention", testRetention},
		{"ConditionalApproval", testConditionalApproval},
		{"TrustAcrossRoundsRequestsEditsTasks", testTrust},
		{"RememberRefusals", testRememberRefusals},
		{"Compaction", testCompaction},
		{"CompactionWithTools", testCompactionWithTools},
		{"CompactionKeepsRoles", testCompactionKeepsRoles},
		{"InputPause", testInputPause},
		{"PausedForAnAnswer", testPausedForAnAnswer},
		{"InputRounds", testInputRounds},
		{"InputExpiry", testInputExpiry},
		{"ElicitPause", testElicitPause},
		{"ElicitRounds", testElicitRounds},
		{"ElicitExpiry", testElicitExpiry},
		{"FiftyElicitAnswers", testFiftyElicitAnswers},
		{"ElicitTakeover", testElicitTakeover},
		{"ElicitStateOnce", testElicitStateOnce},
		{"ElicitBeyondMETA", testElicitBeyondMETA},
		{"ElicitTooManyToKeep", testElicitTooManyToKeep},
		{"ElicitBeyondMETAExpires", testElicitBeyondMETAExpires},
		{"FiftyConcurrentAnswers", testFiftyAnswers},
		{"AnswerTakeover", testAnswerTakeover},
		{"MixedBodyRefused", testMixedBody},
		{"AskedAgainNeedsRound", testAskedAgainNeedsRound},
		{"ExpiredRoundAnswers410", testExpiredRoundAnswers410},
		{"PastRoundOfAnExpiredRequest", testPastRoundOfAnExpiredRequest},
		{"RunningRoundNeedsRound", testRunningRoundNeedsRound},
		{"ArtifactQuota", testArtifactQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, New(t, newStore(t)))
		})
	}
}

func testPauseRunsNothing(t *testing.T, env *Env) {
	res, rec := env.Pause(t)
	if n := len(env.Safe.Runs()) + len(env.Guarded.Runs()); n != 0 {
		t.Fatalf("%d calls ran before the decision", n)
	}
	type pause struct {
		Round     int
		Pending   []string
		ResumeURL string
	}
	wantPause := pause{1, []string{"g1"}, agent.ResumeURL("acc", res.TaskID, res.RequestID)}
	if diff := cmp.Diff(wantPause, pause{res.Round, toolCallIDs(res.PendingApprovals), res.ResumeURL}); diff != "" {
		t.Fatalf("result (-want +got):\n%s", diff)
	}
	want := []string{"request_started", "tool_call", "tool_call", "approval_required", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	v, err := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type task struct {
		Status  agent.Status
		Expired []bool
	}
	expired := each(v.PendingApprovals, func(p agent.PendingView) bool { return *p.Expired })
	if diff := cmp.Diff(task{agent.StatusPaused, []bool{false}}, task{v.Status, expired}); diff != "" {
		t.Fatalf("task (-want +got):\n%s", diff)
	}
	// A new message to a paused task is refused.
	_, err = env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Items: []agent.InputItem{{Content: "hello?"}}})
	if Code(err) != agent.CodeTaskPaused {
		t.Fatalf("message to a paused task: %v", err)
	}
	// Another user cannot decide.
	if _, _, err := env.Resume(res, "mallory", Approve()); Code(err) != agent.CodeNotOwner {
		t.Fatalf("mallory's approval: %v", err)
	}
}

func testApprove(t *testing.T, env *Env) {
	res, pauseRec := env.Pause(t)
	env.Model.Add(agenttest.Say("all done"))
	out, rec, err := env.Resume(res, "alice", Approve())
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Status            agent.Status
		Output, RequestID string
	}
	if diff := cmp.Diff(outcome{agent.StatusCompleted, "all done", res.RequestID}, outcome{out.Status, out.Output, out.RequestID}); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delete"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("guarded runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"look"}, env.Safe.Runs()); diff != "" {
		t.Errorf("safe runs (-want +got):\n%s", diff)
	}
	want := []string{"request_started", "approved", "tool_result", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, rec.Names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if first, last := rec.Events[0].ID, pauseRec.Events[len(pauseRec.Events)-1].ID; first != last+1 {
		t.Errorf("the resume's first event is %d; the pause ended at %d", first, last)
	}
	if got := lastText(env.Model.Call(1)); got != "s1=success:safe did look; g1=success:guarded did delete" {
		t.Errorf("results sent to the model: %s", got)
	}
	v, err := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type decision struct {
		Approver string
		Round    int
		Action   string
		Calls    int
	}
	d := each(v.Requests[0].Decisions, func(d agent.Decision) decision { return decision{d.Approver, d.Round, d.Action, len(d.Calls)} })
	if diff := cmp.Diff([]decision{{"alice", 1, "approve", 1}}, d); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(paused{agent.StatusCompleted, 0}, paused{v.Status, len(v.PendingApprovals)}); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}
	// The same approval again: the stored outcome, nothing runs again.
	again, _, err := env.Resume(res, "alice", Approve())
	if err != nil {
		t.Fatalf("repeat: %v", err)
	}
	if diff := cmp.Diff(said{agent.StatusCompleted, "all done"}, saidOf(again)); diff != "" {
		t.Fatalf("repeat (-want +got):\n%s", diff)
	}
	if n := len(env.Guarded.Runs()); n != 1 {
		t.Errorf("guarded ran %d times", n)
	}
	if _, _, err := env.Resume(res, "alice", Reject("no")); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("another decision after the end: %v", err)
	}
}

func testReject(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.Say("ok, not deleting"))
	out, rec, err := env.Resume(res, "alice", Reject("too risky"))
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if n := len(env.Guarded.Runs()); n != 0 {
		t.Fatalf("a rejected call ran")
	}
	if diff := cmp.Diff([]string{"look"}, env.Safe.Runs()); diff != "" {
		t.Errorf("the safe call runs after any decision (-want +got):\n%s", diff)
	}
	if got := lastText(env.Model.Call(1)); got != "s1=success:safe did look; g1=error:rejected by alice: too risky" {
		t.Errorf("results sent to the model: %s", got)
	}
	if names := rec.Names(); names[1] != "rejected" {
		t.Errorf("events: %v", names)
	}
}

func testEdit(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	bad := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "edit", Input: []byte(`{"path":"x"}`)}}}
	if _, _, err := env.Resume(res, "alice", bad); Code(err) != agent.CodeInvalidInput {
		t.Fatalf("edit violating the schema: %v", err)
	}
	after, items2, _ := env.Store.LoadTask(context.Background(), res.TaskID)
	if diff := cmp.Diff(before, after); diff != "" || len(items) != len(items2) {
		t.Fatalf("a refused edit changed the task:\n%s", diff)
	}
	for _, body := range []agent.ResumeRequest{
		{Decisions: []agent.DecisionInput{{ToolCallID: "nope", Action: "approve"}}},
		{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "approve"}, {ToolCallID: "s1", Action: "approve"}}},
	} {
		if _, _, err := env.Resume(res, "alice", body); Code(err) != agent.CodeInvalidDecisions {
			t.Errorf("decisions %+v: %v", body.Decisions, err)
		}
	}
	env.Model.Add(agenttest.Say("edited"))
	good := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "edit", Input: []byte(`{"text":"archive"}`), Reason: "safer"}}}
	out, rec, err := env.Resume(res, "alice", good)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if diff := cmp.Diff([]string{"archive"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("guarded runs (-want +got):\n%s", diff)
	}
	if ev := rec.Events[1]; ev.Name != "approved" {
		t.Errorf("event %v", ev)
	}
	v, _ := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	var stored string
	for _, it := range v.Items {
		for _, b := range it.Content {
			if b["type"] == "tool_use" && b["id"] == "g1" {
				in, _ := jsonString(b["input"])
				stored = in
			}
		}
	}
	if stored != `{"text":"archive"}` {
		t.Errorf("the stored tool_use input is %s, want the edited one", stored)
	}
	c := v.Requests[0].Decisions[0].Calls[0]
	type record struct{ OriginalInput, Action string }
	if diff := cmp.Diff(record{`{"text":"delete"}`, "edit"}, record{string(c.OriginalInput), c.Action}); diff != "" {
		t.Errorf("decision record (-want +got):\n%s", diff)
	}
}

func testRounds(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "second")))
	out, _, err := env.Resume(res, "alice", Approve())
	if err != nil {
		t.Fatalf("round 2: %v", err)
	}
	type round struct {
		Status       agent.Status
		Round        int
		FirstPending string
	}
	if diff := cmp.Diff(round{agent.StatusPaused, 2, "g2"}, round{out.Status, out.Round, out.PendingApprovals[0].ToolCallID}); diff != "" {
		t.Fatalf("round 2 (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeRoundRequired {
		t.Fatalf("approve all without round in round 2: %v", err)
	}
	if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: "approve", Round: Round(3)}); Code(err) != agent.CodeNotPaused {
		t.Fatalf("approve of a round that is not: %v", err)
	}
	// Round 1's approval again is a retry of a decided round: it answers the pause.
	again, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: "approve", Round: Round(1)})
	if err != nil {
		t.Fatalf("round 1 again: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
		t.Fatalf("round 1 again (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: "reject", Round: Round(1)}); Code(err) != agent.CodeNotPaused {
		t.Fatalf("a past round's other decision: %v", err)
	}
	// Decisions bind by their calls: round 1's, sent again without a round.
	byCall, _, err := env.Resume(res, "alice", agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: "approve"}}})
	if err != nil {
		t.Fatalf("round 1's decisions again: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(byCall)); diff != "" {
		t.Fatalf("round 1's decisions again (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("both done"))
	out, _, err = env.Resume(res, "alice", agent.ResumeRequest{Action: "approve", Round: Round(2)})
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2 approval: %+v %v", out, err)
	}
	if diff := cmp.Diff([]string{"delete", "second"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("guarded runs (-want +got):\n%s", diff)
	}
}

func testAnswerTable(t *testing.T, env *Env) {
	env.Model.Add(agenttest.Say("plain"))
	plain, _ := env.Invoke(t, "", "hello")
	if _, _, err := env.Resume(plain, "alice", Approve()); Code(err) != agent.CodeNotPaused {
		t.Errorf("resume of a request that never paused: %v", err)
	}
	unknown := *plain
	unknown.RequestID = agent.NewID()
	if _, _, err := env.Resume(&unknown, "alice", Approve()); Code(err) != agent.CodeRequestNotFound {
		t.Errorf("unknown request: %v", err)
	}
	missing := *plain
	missing.TaskID = agent.NewID()
	if _, _, err := env.Resume(&missing, "alice", Approve()); Code(err) != agent.CodeTaskNotFound {
		t.Errorf("unknown task: %v", err)
	}
	if _, _, err := env.Resume(plain, "alice", agent.ResumeRequest{Action: "maybe"}); Code(err) != agent.CodeInvalidAction {
		t.Errorf("bad action: %v", err)
	}
}

func testFiftyApprovals(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Guarded.Block = make(chan struct{})
	env.Model.Add(agenttest.Say("done once"))
	first := sameOutcome(t, 50, func() { time.Sleep(50 * time.Millisecond); close(env.Guarded.Block) },
		func() (*agent.RequestResult, error) {
			out, _, err := env.Resume(res, "alice", Approve())
			return out, err
		})
	if diff := cmp.Diff(said{agent.StatusCompleted, "done once"}, saidOf(first)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delete"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("the tool ran (-want +got):\n%s", diff)
	}
	if c := env.Model.NCalls(); c != 2 {
		t.Errorf("the model was called %d times, want 2", c)
	}
}

func testApproveRejectRace(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.Say("decided"))
	const n = 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := 0; i < 2*n; i++ {
		body := Approve()
		if i%2 == 1 {
			body = Reject("no")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, err := env.Resume(res, "alice", body)
			key := Code(err)
			if err == nil {
				key = body.Action + ":" + string(out.Status)
			}
			mu.Lock()
			codes[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	approved, rejected := codes["approve:Completed"], codes["reject:Completed"]
	if (approved == n) == (rejected == n) || codes[agent.CodeDecisionConflict] != n {
		t.Fatalf("outcomes = %v: want one decision to win for its %d senders and %d decision_conflict", codes, n, n)
	}
	if ran := len(env.Guarded.Runs()) == 1; ran != (approved == n) {
		t.Errorf("the tool ran: %v, the approval won: %v", ran, approved == n)
	}
}

func testExpiry(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Advance(2 * time.Hour)
	v, _ := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	type shown struct {
		Status       agent.Status
		FirstExpired bool
	}
	if diff := cmp.Diff(shown{agent.StatusPaused, true}, shown{v.Status, *v.PendingApprovals[0].Expired}); diff != "" {
		t.Fatalf("before any write the task shows Paused, expired (-want +got):\n%s", diff)
	}
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("resume after expiry: %v", err)
	}
	if n := len(env.Guarded.Runs()) + len(env.Safe.Runs()); n != 0 {
		t.Fatalf("%d calls ran", n)
	}
	v, _ = env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	r := v.Requests[0]
	type expired struct {
		Status        agent.Status
		Code          string
		FirstApprover string
	}
	if diff := cmp.Diff(expired{agent.StatusFailed, agent.CodeApprovalExpired, agent.ApproverExpiry}, expired{v.Status, codeOf(r.Error), r.Decisions[0].Approver}); diff != "" {
		t.Fatalf("after expiry (-want +got):\n%s", diff)
	}
	if env.Model.NCalls() != 1 {
		t.Errorf("expiry called the model")
	}
	env.Model.Add(agenttest.Say("fresh"))
	next, _ := env.Invoke(t, res.TaskID, "start over")
	if next.Status != agent.StatusCompleted {
		t.Fatalf("the task does not accept messages: %+v", next)
	}
	// The expired round's results come before the new text, in one user message.
	if got, want := lastText(env.Model.Call(1)), fmt.Sprintf("s1=error:approval expired at %s; g1=error:approval expired at %s", exp(res), exp(res)); got != want {
		t.Errorf("results sent to the model: %s, want %s", got, want)
	}
	// One round, one outcome: 410 however late (docs/api.md's answer table).
	if _, _, err := env.Resume(res, "alice", Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("resume after the expiry was applied: %v", err)
	}
}

func exp(res *agent.RequestResult) string {
	return res.PendingApprovals[0].ExpiresAt
}

func testExpiredFollowOn(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	env.Advance(2 * time.Hour)
	env.Model.Add(agenttest.Say("moving on"))
	next, _ := env.Invoke(t, res.TaskID, "never mind")
	if next.Status != agent.StatusCompleted {
		t.Fatalf("follow-on on an expired pause: %+v", next)
	}
	if err := agenttest.CheckMessages(env.Model.Call(1).Messages); err != nil {
		t.Errorf("messages after expiry: %v", err)
	}
	v, _ := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
	if v.Requests[0].Error.Code != agent.CodeApprovalExpired {
		t.Errorf("the expired request: %+v", v.Requests[0])
	}
}

func testTakeover(t *testing.T, env *Env) {
	// A pause with a non-idempotent and an idempotent guarded call.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g1", "guarded", "delete"), Call("r1", "retry", "sync")))
	res, _ := env.Invoke(t, "", "do it")
	// The first resume claims, then its Lambda dies before committing.
	if _, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Items: []agent.InputItem{{Content: "x"}}}); Code(err) != agent.CodeTaskBusy {
		t.Fatalf("message during the resume: %v", err)
	}
	if _, _, err := env.Resume(res, "alice", Reject("no")); Code(err) != agent.CodeDecisionConflict {
		t.Fatalf("another decision while it runs: %v", err)
	}
	env.Advance(5 * time.Minute)
	env.Model.Add(agenttest.Say("recovered"))
	out, _, err := env.Resume(res, "alice", Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("takeover: %+v %v", out, err)
	}
	if n := len(env.Guarded.Runs()); n != 0 {
		t.Errorf("a non-idempotent call ran again silently")
	}
	if diff := cmp.Diff([]string{"sync"}, env.Retry.Runs()); diff != "" {
		t.Errorf("idempotent runs (-want +got):\n%s", diff)
	}
	got := lastText(env.Model.Call(1))
	want := "g1=error:outcome_unknown: the request was interrupted while this call ran; it may or may not have run, and it was not run again; r1=success:retry did sync"
	if got != want {
		t.Errorf("results sent to the model:\n got %s\nwant %s", got, want)
	}
}

// testDuplicateTakesOver: a duplicate of a decision in flight waits for it;
// when the invocation running it dies (its lease ends, docs/architecture.md), the
// duplicate takes the request over and answers its outcome, and its stream
// goes on without a request_lost.
func testDuplicateTakesOver(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("r1", "retry", "sync")))
	res, _ := env.Invoke(t, "", "do it")
	// The first resume claims, then its process dies before running anything.
	if _, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *agent.RequestResult
		rec *Recorder
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, rec, err := env.Resume(res, "alice", Approve())
		done <- answer{out, rec, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("the duplicate answered while the lease was live: %+v %v", a.res, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	env.Model.Add(agenttest.Say("recovered"))
	env.Advance(agent.LeaseDuration + time.Second)
	var a answer
	select {
	case a = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the duplicate did not take the dead request over")
	}
	if a.err != nil || a.res.Status != agent.StatusCompleted {
		t.Fatalf("the duplicate's answer: %+v %v", a.res, a.err)
	}
	if diff := cmp.Diff([]string{"sync"}, env.Retry.Runs()); diff != "" {
		t.Errorf("runs of the idempotent call (-want +got):\n%s", diff)
	}
	for _, ev := range a.rec.Events {
		if ev.Name == agent.EventError {
			t.Errorf("the duplicate's stream has an error event: %+v", ev)
		}
	}
}

// testStalledHolder: an invocation that claimed a resume stalls past its
// lease (a long pause, SIGSTOP); another takes the request over and ends it.
// When the stalled one wakes, its lease is gone: it runs no tool, writes
// nothing and logs no event.
func testStalledHolder(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	ctx := context.Background()
	stalled, err := env.E.StartResume(ctx, agent.ResumeInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()})
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(agent.LeaseDuration + time.Second)
	env.Model.Add(agenttest.Say("taken over"))
	out, _, err := env.Resume(res, "alice", Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("the takeover: %+v %v", out, err)
	}
	logged, _ := env.Store.ListEvents(ctx, res.TaskID, res.RequestID, 0)
	meta, _ := env.Store.GetTask(ctx, res.TaskID)
	rec := &Recorder{}
	got := stalled.Execute(ctx, rec)
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeRequestLost}, ended{got.Status, codeOf(got.Error)}); diff != "" {
		t.Errorf("the stalled holder's answer (-want +got):\n%s", diff)
	}
	if runs := env.Guarded.Runs(); len(runs) != 0 {
		t.Errorf("the guarded call ran %v (the takeover reported it outcome_unknown; nobody may run it)", runs)
	}
	after, _ := env.Store.GetTask(ctx, res.TaskID)
	if after.Version != meta.Version {
		t.Errorf("the stalled holder wrote META (version %d → %d)", meta.Version, after.Version)
	}
	if evs, _ := env.Store.ListEvents(ctx, res.TaskID, res.RequestID, 0); len(evs) != len(logged) {
		t.Errorf("the stalled holder logged events: %d → %d", len(logged), len(evs))
	}
}

// testFiftyAppends: fifty concurrent approvals of an append_file call; the
// file gets its line once.
func testFiftyAppends(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("a1", "append_file", `{"path":"audit.log","content":"approved once\n"}`)))
	res, _ := env.Invoke(t, "", "append a line")
	if res.Status != agent.StatusPaused {
		t.Fatalf("%+v", res)
	}
	env.Model.Add(agenttest.Say("appended"))
	first := sameOutcome(t, 50, nil, func() (*agent.RequestResult, error) {
		out, _, err := env.Resume(res, "alice", Approve())
		return out, err
	})
	if diff := cmp.Diff(said{agent.StatusCompleted, "appended"}, saidOf(first)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(env.Sandbox, "audit.log"))
	if err != nil || string(b) != "approved once\n" {
		t.Fatalf("audit.log = %q, %v; want the line once", b, err)
	}
}

// sameOutcome makes n calls at once, then release (if any), and checks that
// every call answered, and answered the same outcome; it returns it.
func sameOutcome(t *testing.T, n int, release func(), call func() (*agent.RequestResult, error)) *agent.RequestResult {
	t.Helper()
	outs := make([]*agent.RequestResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() { outs[i], errs[i] = call() })
	}
	if release != nil {
		release()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if diff := cmp.Diff(outs[0], outs[i]); diff != "" {
			t.Fatalf("call %d answered another outcome (-first +this):\n%s", i, diff)
		}
	}
	return outs[0]
}
