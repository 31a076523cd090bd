package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Orch is an engine with agents calling agents (docs/architecture.md), over one store,
// with the local model: leaf keeps files (append_file and delete_file need
// approval), desk calls leaf, boss calls desk.
type Orch struct {
	E       *agent.Engine
	Store   agent.Store
	Sandbox string
	Agents  map[string]*agent.Agent
	// Booker is asker's tool that asks for input while it runs.
	Booker *Elicitor
}

// NewOrch builds the orchestration engine over the store.
func NewOrch(tb testing.TB, store agent.Store) *Orch {
	tb.Helper()
	model, stop, err := localmodel.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	sandbox := tb.TempDir()
	var files []agent.BoundTool
	for _, b := range tools.Files(tools.FilesConfig{Root: sandbox}) {
		p := agent.ToolPolicy{}
		switch b.Tool.Spec().Name {
		case "append_file", "delete_file", "write_file":
			p = agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour}
		}
		files = append(files, agent.BoundTool{Tool: b.Tool, Policy: p})
	}
	// twin keeps the same files, its approvals expiring within a second.
	var twinFiles []agent.BoundTool
	for _, b := range files {
		if b.Policy.RequiresApproval {
			b.Policy.ApprovalTTL = time.Second
		}
		twinFiles = append(twinFiles, b)
	}
	booker := &Elicitor{Name: "book_table"}
	as := agentSet{
		"leaf": {Name: "leaf", Version: "1", ModelID: "m", MaxIterations: 6, Tools: files},
		"twin": {Name: "twin", Version: "1", ModelID: "m", MaxIterations: 6, Tools: twinFiles},
		"pair": {Name: "pair", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "leaf", Description: "keeps files"}},
			{Tool: &agent.AgentTool{Agent: "twin", Description: "keeps files, quickly"}}}},
		"desk": {Name: "desk", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "leaf", Description: "keeps files"}}}},
		"boss": {Name: "boss", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "desk", Description: "runs errands"}}}},
		// chief → front → asker, which asks the user (docs/api.md, "Pauses
		// for input").
		"asker": {Name: "asker", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: tools.AskUser{}, Policy: agent.ToolPolicy{InputTTL: time.Hour}},
			{Tool: booker, Policy: agent.ToolPolicy{InputTTL: time.Hour}}}},
		"front": {Name: "front", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "asker", Description: "asks the user"}}}},
		// duo calls leaf and asker: a decision at it has two leaves' parts.
		"duo": {Name: "duo", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "leaf", Description: "keeps files"}},
			{Tool: &agent.AgentTool{Agent: "asker", Description: "asks the user"}}}},
		"chief": {Name: "chief", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
			{Tool: &agent.AgentTool{Agent: "front", Description: "runs errands"}}}},
	}
	for _, ag := range as {
		ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/" + ag.Name, Events: agent.NotificationEvents}}
	}
	store = &outboxGuard{Store: store, tb: tb, seen: map[string]string{}}
	o := &Orch{Store: store, Sandbox: sandbox, Agents: as, Booker: booker}
	// Legs of a minute: a decision at a caller continues the chain below
	// while 5 s are left (testChainHandedOff forces the handoff).
	o.E = &agent.Engine{Store: store, Model: model, Agents: as, LegTimeout: time.Minute, Log: slog.New(slog.DiscardHandler),
		ChainMinRemaining: 5 * time.Second}
	return o
}

// CallAgent is the local model's line that calls the sub-agent with message.
func CallAgent(sub, message string) string {
	b, _ := json.Marshal(map[string]string{"message": message})
	return "/call " + sub + " " + string(b)
}

// Append is the local model's line that appends a line to a file.
func Append(file, line string) string {
	b, _ := json.Marshal(map[string]string{"path": file, "content": line + "\n"})
	return "/call append_file " + string(b)
}

// Invoke starts a message to an agent and runs it.
func (o *Orch) Invoke(tb testing.TB, agentName, taskID, text string) (*agent.RequestResult, *Recorder) {
	tb.Helper()
	run, err := o.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: agentName, UserID: "alice", TaskID: taskID,
		Items: []agent.InputItem{{Content: text}}})
	if err != nil {
		tb.Fatalf("invoke %s: %v", agentName, err)
	}
	rec := &Recorder{}
	return run.Execute(context.Background(), rec), rec
}

// Resume decides a request of any level and runs it.
func (o *Orch) Resume(agentName, taskID, rid string, body agent.ResumeRequest) (*agent.RequestResult, *Recorder, error) {
	run, err := o.E.StartResume(context.Background(), agent.ResumeInput{Agent: agentName, UserID: "alice", TaskID: taskID, RequestID: rid, Body: body})
	if err != nil {
		return nil, nil, err
	}
	rec := &Recorder{}
	return run.Execute(context.Background(), rec), rec, nil
}

// View is GET task.
func (o *Orch) View(tb testing.TB, agentName, taskID string) *agent.TaskView {
	tb.Helper()
	v, err := o.E.GetTask(context.Background(), agentName, "alice", taskID, agent.ViewOptions{})
	if err != nil {
		tb.Fatalf("GET task %s of %s: %v", taskID, agentName, err)
	}
	return v
}

// runDue runs what the reaper finds due now, as its sweep would.
func (o *Orch) runDue(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	due, err := o.E.DueTakeovers(ctx, 100)
	if err != nil {
		tb.Fatal(err)
	}
	for _, tk := range due {
		run, err := o.E.StartTakeover(ctx, tk.TaskID, tk.RequestID)
		if err != nil {
			tb.Fatalf("the reaper's takeover of %s: %v", tk.TaskID, err)
		}
		if run != nil {
			run.Execute(ctx, agent.Discard)
		}
	}
}

// runContinuations delivers the continuations the outbox holds for the
// caller taskID, as the notifier would, and runs their legs.
func (o *Orch) runContinuations(tb testing.TB, taskID string) {
	tb.Helper()
	ctx := context.Background()
	items, err := o.Store.ListOutbox(ctx, time.Now().Add(time.Hour), 0)
	if err != nil {
		tb.Fatal(err)
	}
	for _, it := range items {
		if it.Kind != agent.OutboxContinue || it.TaskID != taskID {
			continue
		}
		run, err := o.E.ConsumeContinue(ctx, it.TaskID, it.RequestID, it.SK())
		if err != nil {
			tb.Fatalf("the continuation of %s: %v", taskID, err)
		}
		if run != nil {
			run.Execute(ctx, agent.Discard)
		}
	}
}

// Lines reads a sandbox file's lines ("" when absent).
func (o *Orch) Lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(o.Sandbox, name))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// RunOrchestration runs the orchestration suite over stores made by newStore.
func RunOrchestration(t *testing.T, newStore func(tb testing.TB) agent.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *Orch)
	}{
		{"ChildCompletes", testChildCompletes},
		{"DepthOneResumeAtLeaf", testDepthOneLeaf},
		{"DepthOneResumeAtCaller", testDepthOneCaller},
		{"DepthTwoEveryLevel", testDepthTwo},
		{"ChildTaskReused", testChildReused},
		{"ConcurrentLeafAndRootApprovals", testLeafRootRace},
		{"CancelCascades", testCancelCascades},
		{"CanceledChildGivesAnError", testCanceledChild},
		{"ExpiryEndsTheChain", testChainExpiry},
		{"BadResumes", testBadChainResumes},
		{"DeleteCascades", testDeleteCascades},
		{"SubAgentRemoved", testSubAgentRemoved},
		{"ChainHandedOff", testChainHandedOff},
		{"CancelWithACallNotStarted", testOrphanCanceled},
		{"DeadCallerTakenOver", testDeadCallerTakenOver},
		{"ExpiryAtACallerEndsTheChain", testExpiryAtCaller},
		{"ExpiryAtALeafEndsTheChain", testExpiryAtLeaf},
		{"PastRoundAtAnExpiredCaller", testPastRoundAtExpiredCaller},
		{"CancelWhileALeafIsClaimed", testCancelLeafClaimed},
		{"DeadContinuationTakenOver", testDeadContinuationTakenOver},
		{"ContinuationConsumedByTheClaim", testContinuationConsumedByTheClaim},
		{"CancelAfterASecondRound", testCancelAfterASecondRound},
		{"CancelAfterASecondRoundAtTheLeaf", testCancelAfterASecondRoundAtTheLeaf},
		{"LeafDecidedBeforeTheCallersExpiry", testLeafDecidedBeforeTheCallersExpiry},
		{"OneLeafDecidedTheOtherExpired", testOneLeafDecidedTheOtherExpired},
		{"InputAnsweredAtEveryLevel", testInputEveryLevel},
		{"FiftyAnswersAtLeafAndRoot", testInputLeafRootRace},
		{"ElicitationAnsweredAtTheRoot", testElicitAtRoot},
		{"ElicitationAskedAgainAtTheRoot", testElicitAgainAtRoot},
		{"ElicitationsBeyondMETAUpAChain", testElicitBeyondMETAUpAChain},
		{"ElicitationsBeyondMETACanceled", testElicitBeyondMETACanceled},
		{"DeadRootDecisionTwice", testDeadRootDecisionTwice},
		{"DeadCallerAnswerTakenOver", testDeadCallerAnswerTakenOver},
		{"LeafRoundsCopiedByRound", testLeafRoundsCopiedByRound},
		{"WholeRoundAfterAPartialCopy", testWholeRoundAfterAPartialCopy},
		{"ChildMadeAgainAfterItsDelete", testChildMadeAgainAfterItsDelete},
		{"CancelAfterTheLeafEnded", testCancelAfterTheLeafEnded},
		{"CancelWhileTheLeafRuns", testCancelWhileTheLeafRuns},
		{"CancelOwesOnlyItsOwn", testCancelOwesOnlyItsOwn},
		{"PartialDecisionAtACaller", testPartialDecisionAtACaller},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, NewOrch(t, newStore(t))) })
	}
	// A cancel racing a decision at a caller: the store's hook runs the
	// cancel between the leaf's claim and the caller's.
	t.Run("CancelLandsAsTheCallerPauses", func(t *testing.T) { testCancelLandsAsTheCallerPauses(t, newStore) })
	t.Run("LeafDecidedAsTheCallerDecides", func(t *testing.T) { testLeafDecidedAsTheCallerDecides(t, newStore) })
	t.Run("ReadErrorCheckingALeaf", func(t *testing.T) { testReadErrorCheckingALeaf(t, newStore) })
	t.Run("ChainExpiryRacesALeafDecision", func(t *testing.T) { testChainExpiryRacesALeafDecision(t, newStore) })
	t.Run("ExpiryCancelsALeafDecidedMeanwhile", func(t *testing.T) { testExpiryCancelsALeafDecidedMeanwhile(t, newStore) })
	t.Run("MessageToAnExpiredCaller", func(t *testing.T) { testMessageToAnExpiredCaller(t, newStore) })
	t.Run("CancelAfterTheExpiry", func(t *testing.T) { testCancelAfterTheExpiry(t, newStore) })
	t.Run("ReaperCancelsAFlaggedLeaf", func(t *testing.T) { testReaperCancelsAFlaggedLeaf(t, newStore) })
	t.Run("FlaggedCallerPastItsExpiry", func(t *testing.T) { testFlaggedCallerPastItsExpiry(t, newStore) })
	t.Run("CallerPausesOnAnExpiredLeaf", func(t *testing.T) { testCallerPausesOnAnExpiredLeaf(t, newStore) })
	t.Run("GivenUpCallerFlagsItsChildren", func(t *testing.T) { testGivenUpCallerFlagsItsChildren(t, newStore) })
	t.Run("FailedCallerFlagsItsChildren", func(t *testing.T) { testFailedCallerFlagsItsChildren(t, newStore) })
	t.Run("ViewWhileTheRequestEnds", func(t *testing.T) { testViewWhileTheRequestEnds(t, newStore) })
	t.Run("CancelRacesADecisionAtTheCaller", func(t *testing.T) {
		bs := &beforeStore{Store: newStore(t)}
		testCancelRacesDecision(t, NewOrch(t, bs), bs)
	})
}

// childEvents are the child events of a stream: depth, agent, inner event.
func childEvents(rec *Recorder) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, e := range rec.Events {
		if e.Name != agent.EventChild {
			continue
		}
		d := e.Data.(map[string]any)
		out = append(out, fmt.Sprintf("%v:%v:%v", d["depth"], d["agent"], d["event"]))
	}
	return out
}

// continuous checks that a stream's ids go 1, 2, … from first.
func continuous(tb testing.TB, what string, rec *Recorder, first int64) {
	tb.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, e := range rec.Events {
		if e.ID != first+int64(i) {
			tb.Fatalf("%s: event %d (%s) has id %d, want %d", what, i, e.Name, e.ID, first+int64(i))
		}
	}
}

func lastID(rec *Recorder) int64 {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.Events) == 0 {
		return 0
	}
	return rec.Events[len(rec.Events)-1].ID
}

// testChildCompletes: a sub-agent that needs no approval answers at once:
// the caller gets its output and the ids block; child events in the
// caller's stream; the child task is the caller's, in its session.
func testChildCompletes(t *testing.T, o *Orch) {
	res, rec := o.Invoke(t, "desk", "", CallAgent("leaf", "hello there"))
	if res.Status != agent.StatusCompleted || !strings.Contains(res.Output, "leaf success: echo: hello there") {
		t.Fatalf("desk: %+v", res)
	}
	continuous(t, "desk", rec, 1)
	evs := childEvents(rec)
	if len(evs) == 0 || evs[0] != "1:leaf:request_started" || evs[len(evs)-1] != "1:leaf:request_complete" {
		t.Errorf("child events: %v", evs)
	}
	v := o.View(t, "desk", res.TaskID)
	var ids map[string]string
	for _, it := range v.Items {
		for _, c := range it.Content {
			if c["type"] == "tool_result" {
				for _, b := range c["content"].([]map[string]any) {
					if b["type"] == "json" {
						_ = json.Unmarshal(b["json"].(json.RawMessage), &ids)
					}
				}
			}
		}
	}
	type idsBlock struct {
		Agent, Status string
		HasTaskID     bool
	}
	if diff := cmp.Diff(idsBlock{"leaf", "Completed", true}, idsBlock{ids["agent"], ids["status"], ids["task_id"] != ""}); diff != "" {
		t.Fatalf("the result's ids block (-want +got):\n%s", diff)
	}
	child := o.View(t, "leaf", ids["task_id"])
	type childTask struct {
		ParentTaskID, SessionID string
		Status                  agent.Status
		ParentRequestID         string
	}
	got := childTask{child.ParentTaskID, child.SessionID, child.Status, ""}
	if p := child.Requests[0].Parent; p != nil {
		got.ParentRequestID = p.RequestID
	}
	if diff := cmp.Diff(childTask{res.TaskID, res.SessionID, agent.StatusCompleted, res.RequestID}, got); diff != "" {
		t.Errorf("the child task (-want +got):\n%s", diff)
	}
}

// pausedAtLeaf invokes desk with a call of leaf that pauses.
func pausedAtLeaf(t *testing.T, o *Orch, file string) (*agent.RequestResult, *Recorder, agent.PendingView) {
	t.Helper()
	res, rec := o.Invoke(t, "desk", "", CallAgent("leaf", Append(file, "x")))
	if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
		t.Fatalf("desk (-want +got):\n%s", diff)
	}
	p := res.PendingApprovals[0]
	type pendingCall struct {
		Agent, Name                 string
		HasTaskID, HasRequestID     bool
		ResumeURL, CallersResumeURL string
	}
	want := pendingCall{"leaf", "append_file", true, true, agent.ResumeURL("leaf", p.TaskID, p.RequestID), agent.ResumeURL("desk", res.TaskID, res.RequestID)}
	if diff := cmp.Diff(want, pendingCall{p.Agent, p.Name, p.TaskID != "", p.RequestID != "", p.ResumeURL, res.ResumeURL}); diff != "" {
		t.Fatalf("desk's pending call (-want +got):\n%s", diff)
	}
	return res, rec, p
}

// testDepthOneLeaf: the leaf pauses, so does its caller; the approval sent
// to the leaf runs the call once and answers the leaf's outcome; the
// caller's continuation (what the dispatcher runs) completes it.
func testDepthOneLeaf(t *testing.T, o *Orch) {
	res, rec, p := pausedAtLeaf(t, o, "one.txt")
	continuous(t, "desk's pause", rec, 1)
	if names := rec.Names(); names[len(names)-2] != agent.EventApprovalRequired {
		t.Errorf("desk's stream ends %v", names)
	}
	dv := o.View(t, "desk", res.TaskID)
	type waiting struct {
		Status    agent.Status
		WaitingOn []string // request ids
		Pending   int
	}
	if diff := cmp.Diff(waiting{agent.StatusPaused, []string{p.RequestID}, 1}, waiting{dv.Status, waitingOn(dv), len(dv.PendingApprovals)}); diff != "" {
		t.Fatalf("GET desk while paused (-want +got):\n%s", diff)
	}
	lv := o.View(t, "leaf", p.TaskID)
	type child struct {
		Status       agent.Status
		ParentTaskID string
	}
	if diff := cmp.Diff(child{agent.StatusPaused, res.TaskID}, child{lv.Status, lv.ParentTaskID}); diff != "" {
		t.Fatalf("GET leaf while paused (-want +got):\n%s", diff)
	}
	out, lrec, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve())
	if err != nil {
		t.Fatalf("resume at the leaf: %v", err)
	}
	if diff := cmp.Diff(answered{agent.StatusCompleted, p.RequestID}, answeredOf(out)); diff != "" {
		t.Fatalf("resume at the leaf (-want +got):\n%s", diff)
	}
	if len(lrec.Events) == 0 {
		t.Fatal("the leaf's resume streamed nothing")
	}
	if got := o.Lines("one.txt"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("one.txt = %q", got)
	}
	if dv := o.View(t, "desk", res.TaskID); dv.Status != agent.StatusPaused {
		t.Fatalf("desk before its continuation: %s", dv.Status)
	}
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	dv = o.View(t, "desk", res.TaskID)
	if diff := cmp.Diff(waiting{Status: agent.StatusCompleted}, waiting{Status: dv.Status, WaitingOn: waitingOn(dv)}); diff != "" {
		t.Fatalf("desk after its continuation (-want +got):\n%s", diff)
	}
	req := dv.Requests[len(dv.Requests)-1]
	decided := each(req.Decisions, func(d agent.Decision) string { return d.Approver + " decided " + d.Calls[0].ToolCallID })
	if diff := cmp.Diff([]string{"alice decided " + p.ToolCallID}, decided); diff != "" {
		t.Errorf("desk's copied decision (-want +got):\n%s", diff)
	}
	// A second continuation is a no-op; the file still has one line.
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	if got := o.Lines("one.txt"); len(got) != 1 {
		t.Errorf("one.txt = %q", got)
	}
	// desk's events go on from its pause, with no gap.
	f := o.follow(t, "desk", res.TaskID, res.RequestID, 0)
	continuous(t, "desk's whole log", f, 1)
	if names := f.Names(); names[len(names)-1] != agent.EventRequestComplete {
		t.Errorf("desk's log ends %v", names)
	}
}

// follow replays a request's event log after id.
func (o *Orch) follow(tb testing.TB, agentName, taskID, rid string, after int64) *Recorder {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := o.E.OpenEvents(ctx, agentName, "alice", taskID, rid, after)
	if err != nil {
		tb.Fatalf("follow %s: %v", rid, err)
	}
	rec := &Recorder{}
	f.Stream(ctx, rec)
	return rec
}

// testDepthOneCaller: the approval sent to the caller runs the leaf's call
// once, and the caller's answer is its own outcome, with the leaf's events
// in its stream.
func testDepthOneCaller(t *testing.T, o *Orch) {
	res, rec, p := pausedAtLeaf(t, o, "two.txt")
	out, crec, err := o.Resume("desk", res.TaskID, res.RequestID, agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}})
	if err != nil {
		t.Fatalf("resume at desk: %v", err)
	}
	if diff := cmp.Diff(answered{agent.StatusCompleted, res.RequestID}, answeredOf(out)); diff != "" || !strings.Contains(out.Output, "append_file success") {
		t.Fatalf("resume at desk: output %q, (-want +got):\n%s", out.Output, diff)
	}
	continuous(t, "desk's resume", crec, lastID(rec)+1)
	evs := childEvents(crec)
	if !slices.Contains(evs, "1:leaf:approved") || !slices.Contains(evs, "1:leaf:request_complete") {
		t.Errorf("desk's resume stream's child events: %v", evs)
	}
	if got := o.Lines("two.txt"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("two.txt = %q", got)
	}
	lv := o.View(t, "leaf", p.TaskID)
	type decided struct {
		Status   agent.Status
		Approver string
	}
	if diff := cmp.Diff(decided{agent.StatusCompleted, "alice"}, decided{lv.Status, lv.Requests[0].Decisions[0].Approver}); diff != "" {
		t.Errorf("the leaf after the caller's decision (-want +got):\n%s", diff)
	}
	// The same decision again: the stored outcome; another: 409.
	again, _, err := o.Resume("desk", res.TaskID, res.RequestID, agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}})
	if err != nil || again.Status != agent.StatusCompleted {
		t.Errorf("the same decision again: %+v %v", again, err)
	}
	if _, _, err := o.Resume("desk", res.TaskID, res.RequestID, agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionReject}}}); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("another decision: %v", err)
	}
	// A continuation afterwards changes nothing.
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	if got := o.Lines("two.txt"); len(got) != 1 {
		t.Errorf("two.txt = %q", got)
	}
}

// pausedAtDepthTwo invokes boss → desk → leaf, which pauses.
func pausedAtDepthTwo(t *testing.T, o *Orch, file string) (*agent.RequestResult, *Recorder, agent.PendingView) {
	t.Helper()
	res, rec := o.Invoke(t, "boss", "", CallAgent("desk", CallAgent("leaf", Append(file, "x"))))
	pending := each(res.PendingApprovals, func(p agent.PendingView) string { return p.Agent })
	if diff := cmp.Diff(callsAt{agent.StatusPaused, []string{"leaf"}}, callsAt{res.Status, pending}); diff != "" {
		t.Fatalf("boss (-want +got):\n%s", diff)
	}
	continuous(t, "boss's pause", rec, 1)
	evs := childEvents(rec)
	if !slices.Contains(evs, "2:leaf:approval_required") || !slices.Contains(evs, "1:desk:approval_required") {
		t.Errorf("boss's child events: %v", evs)
	}
	return res, rec, res.PendingApprovals[0]
}

// middle finds desk's task and request below boss's.
func (o *Orch) middle(t *testing.T, bossTask string) (string, string) {
	t.Helper()
	v := o.View(t, "boss", bossTask)
	if len(v.WaitingOn) != 1 {
		t.Fatalf("boss waits on %v", v.WaitingOn)
	}
	lv := o.View(t, "leaf", v.WaitingOn[0].TaskID)
	dt := lv.ParentTaskID
	dv := o.View(t, "desk", dt)
	return dt, dv.Requests[len(dv.Requests)-1].RequestID
}

// testDepthTwo: boss → desk → leaf; the pause cascades to the root; the
// decision at each level (leaf, middle, root) runs the call once and every
// level ends Completed, event ids continuous.
func testDepthTwo(t *testing.T, o *Orch) {
	for _, at := range []string{"leaf", "desk", "boss"} {
		t.Run("at_"+at, func(t *testing.T) {
			file := "deep-" + at + ".txt"
			res, _, p := pausedAtDepthTwo(t, o, file)
			dt, dr := o.middle(t, res.TaskID)
			type waiting struct {
				Status    agent.Status
				WaitingOn []string // request ids
			}
			dv := o.View(t, "desk", dt)
			if diff := cmp.Diff(waiting{agent.StatusPaused, []string{p.RequestID}}, waiting{dv.Status, waitingOn(dv)}); diff != "" {
				t.Fatalf("desk while paused (-want +got):\n%s", diff)
			}
			approve := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}}
			var out *agent.RequestResult
			var err error
			switch at {
			case "leaf":
				out, _, err = o.Resume("leaf", p.TaskID, p.RequestID, approve)
				if err == nil {
					// The dispatcher's continuations, bottom-up.
					err = o.E.ContinueCaller(context.Background(), dt, dr)
				}
				if err == nil {
					err = o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID)
				}
			case "desk":
				out, _, err = o.Resume("desk", dt, dr, approve)
				if err == nil && out.Status == agent.StatusCompleted {
					err = o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID)
				}
			case "boss":
				var rec *Recorder
				out, rec, err = o.Resume("boss", res.TaskID, res.RequestID, approve)
				if err == nil {
					evs := childEvents(rec)
					if !slices.Contains(evs, "2:leaf:approved") || !slices.Contains(evs, "1:desk:request_complete") {
						t.Errorf("boss's resume stream: %v", evs)
					}
				}
			}
			if err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("decision at %s: %+v %v", at, out, err)
			}
			if got := o.Lines(file); !slices.Equal(got, []string{"x"}) {
				t.Fatalf("%s = %q", file, got)
			}
			for _, lvl := range []struct{ agent, task string }{{"leaf", p.TaskID}, {"desk", dt}, {"boss", res.TaskID}} {
				v := o.View(t, lvl.agent, lvl.task)
				if v.Status != agent.StatusCompleted {
					t.Errorf("%s after the decision at %s: %s", lvl.agent, at, v.Status)
				}
			}
			f := o.follow(t, "boss", res.TaskID, res.RequestID, 0)
			continuous(t, "boss's log", f, 1)
		})
	}
}

// testChildReused: the caller's later call of the same sub-agent, in a later
// request, continues the child task; new_task starts another.
func testChildReused(t *testing.T, o *Orch) {
	first, _ := o.Invoke(t, "desk", "", CallAgent("leaf", "one"))
	second, _ := o.Invoke(t, "desk", first.TaskID, CallAgent("leaf", "two"))
	b, _ := json.Marshal(map[string]any{"message": "three", "new_task": true})
	third, _ := o.Invoke(t, "desk", first.TaskID, "/call leaf "+string(b))
	for _, r := range []*agent.RequestResult{first, second, third} {
		if r.Status != agent.StatusCompleted {
			t.Fatalf("desk: %+v", r)
		}
	}
	list, _, err := o.Store.ListSessionTasks(context.Background(), agent.ListQuery{UserID: "alice", Agent: "leaf", SessionID: first.SessionID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	parents := each(list, func(s agent.TaskSummary) string { return s.ParentTaskID })
	if diff := cmp.Diff([]string{first.TaskID, first.TaskID}, parents); diff != "" {
		t.Fatalf("the parents of leaf's tasks in the session (-want +got):\n%s", diff)
	}
	older := list[1]
	v := o.View(t, "leaf", older.TaskID)
	if len(v.Requests) != 2 {
		t.Errorf("the reused child task has %d requests, want 2", len(v.Requests))
	}
}

// testLeafRootRace: 50 approvals sent at once, half to the leaf and half to
// the root: the call runs once, one decision is recorded, every answer is
// consistent.
func testLeafRootRace(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "race.txt")
	approve := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}}
	var wg sync.WaitGroup
	type answer struct {
		at  string
		res *agent.RequestResult
		err error
	}
	answers := make([]answer, 50)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, approve)
				answers[i] = answer{"leaf", out, err}
				return
			}
			out, _, err := o.Resume("desk", res.TaskID, res.RequestID, approve)
			answers[i] = answer{"desk", out, err}
		}()
	}
	wg.Wait()
	for _, a := range answers {
		want := p.RequestID
		if a.at == "desk" {
			want = res.RequestID
		}
		if a.err != nil {
			t.Errorf("an answer at %s: %v", a.at, a.err)
		} else if diff := cmp.Diff(answered{agent.StatusCompleted, want}, answeredOf(a.res)); diff != "" {
			t.Errorf("an answer at %s (-want +got):\n%s", a.at, diff)
		}
	}
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	if got := o.Lines("race.txt"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("race.txt = %q: the call ran %d times", got, len(got))
	}
	lv := o.View(t, "leaf", p.TaskID)
	if n := len(lv.Requests[0].Decisions); n != 1 {
		t.Errorf("the leaf recorded %d decisions", n)
	}
	if dv := o.View(t, "desk", res.TaskID); dv.Status != agent.StatusCompleted {
		t.Errorf("desk: %s", dv.Status)
	}
}

// testCancelCascades: canceling the root cancels every request below it;
// nothing runs; continuations change nothing.
func testCancelCascades(t *testing.T, o *Orch) {
	res, _, p := pausedAtDepthTwo(t, o, "cancel.txt")
	dt, dr := o.middle(t, res.TaskID)
	out, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "boss", UserID: "alice", TaskID: res.TaskID, Reason: "not today"})
	if err != nil || out.Result == nil || out.Result.Status != agent.StatusCanceled {
		t.Fatalf("cancel: %+v %v", out, err)
	}
	for _, lvl := range []struct{ agent, task string }{{"boss", res.TaskID}, {"desk", dt}, {"leaf", p.TaskID}} {
		if v := o.View(t, lvl.agent, lvl.task); v.Status != agent.StatusCanceled {
			t.Errorf("%s after the cancel: %s", lvl.agent, v.Status)
		}
	}
	if err := o.E.ContinueCaller(context.Background(), dt, dr); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve()); Code(err) != agent.CodeNotPaused {
		t.Errorf("an approval after the cancel: %v", err)
	}
	if got := o.Lines("cancel.txt"); got != nil {
		t.Errorf("cancel.txt = %q", got)
	}
}

// testCanceledChild: the leaf canceled on its own gives its caller an error
// result, and the caller goes on.
func testCanceledChild(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "gone.txt")
	if _, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "leaf", UserID: "alice", TaskID: p.TaskID, Reason: "wrong file"}); err != nil {
		t.Fatal(err)
	}
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	dv := o.View(t, "desk", res.TaskID)
	req := dv.Requests[len(dv.Requests)-1]
	if dv.Status != agent.StatusCompleted {
		t.Fatalf("desk: %+v", dv)
	}
	last := dv.Items[len(dv.Items)-1]
	text := fmt.Sprint(last.Content)
	if !strings.Contains(text, "leaf error") || !strings.Contains(text, "canceled by alice: wrong file") {
		t.Errorf("desk's answer: %s (request %+v)", text, req)
	}
}

// testChainExpiry: the leaf's approval expires: the decision at the caller
// answers 410, and every level ends Failed approval_expired with no model
// call.
func testChainExpiry(t *testing.T, o *Orch) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	o.E.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	res, _, p := pausedAtDepthTwo(t, o, "late.txt")
	dt, dr := o.middle(t, res.TaskID)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if _, _, err := o.Resume("boss", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("a decision past the expiry: %v", err)
	}
	for _, c := range [][2]string{{dt, dr}, {res.TaskID, res.RequestID}} {
		if err := o.E.ContinueCaller(context.Background(), c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, lvl := range []struct{ agent, task string }{{"leaf", p.TaskID}, {"desk", dt}, {"boss", res.TaskID}} {
		v := o.View(t, lvl.agent, lvl.task)
		req := v.Requests[len(v.Requests)-1]
		if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeApprovalExpired}, ended{v.Status, codeOf(req.Error)}); diff != "" {
			t.Errorf("%s after the expiry (-want +got):\n%s", lvl.agent, diff)
		}
	}
	if got := o.Lines("late.txt"); got != nil {
		t.Errorf("late.txt = %q", got)
	}
}

// testBadChainResumes: a decision naming a call the caller does not show,
// the wrong round, a decision to a caller not waiting: refused, nothing
// changed.
func testBadChainResumes(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "bad.txt")
	cases := []struct {
		body agent.ResumeRequest
		code string
	}{
		{agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "tooluse_other", Action: agent.ActionApprove}}}, agent.CodeInvalidDecisions},
		{agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(7)}, agent.CodeNotPaused},
	}
	for _, c := range cases {
		if _, _, err := o.Resume("desk", res.TaskID, res.RequestID, c.body); Code(err) != c.code {
			t.Errorf("resume %+v: %v, want %s", c.body, err, c.code)
		}
	}
	if _, _, err := o.Resume("leaf", p.TaskID, p.RequestID, agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(2)}); Code(err) != agent.CodeNotPaused {
		t.Errorf("the leaf with the caller's wrong round: %v", err)
	}
	dv := o.View(t, "desk", res.TaskID)
	if diff := cmp.Diff(paused{agent.StatusPaused, 1}, paused{dv.Status, len(dv.PendingApprovals)}); diff != "" {
		t.Errorf("desk after the refusals (-want +got):\n%s", diff)
	}
	if v := o.View(t, "leaf", p.TaskID); v.Status != agent.StatusPaused {
		t.Errorf("leaf after the refusals: %s", v.Status)
	}
	// A caller that is not waiting: done, then decided again otherwise.
	if _, _, err := o.Resume("desk", res.TaskID, res.RequestID, Approve()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Resume("desk", res.TaskID, res.RequestID, Reject("no")); Code(err) != agent.CodeDecisionConflict {
		t.Errorf("another decision after the end: %v", err)
	}
	// Deleting the leaf's task while desk still has the call open is refused.
	res2, _, p2 := pausedAtLeaf(t, o, "bad2.txt")
	if _, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "leaf", UserID: "alice", TaskID: p2.TaskID}); err != nil {
		t.Fatal(err)
	}
	if err := o.E.DeleteTask(context.Background(), "leaf", "alice", p2.TaskID); Code(err) != agent.CodeTaskBusy {
		t.Errorf("delete of a child its caller waits on: %v", err)
	}
	_ = res2
}

// testDeleteCascades: deleting a caller's task deletes its child tasks.
func testDeleteCascades(t *testing.T, o *Orch) {
	res, _ := o.Invoke(t, "boss", "", CallAgent("desk", CallAgent("leaf", "hi")))
	if res.Status != agent.StatusCompleted {
		t.Fatalf("boss: %+v", res)
	}
	list, _, _ := o.Store.ListSessionTasks(context.Background(), agent.ListQuery{UserID: "alice", Agent: "leaf", SessionID: res.SessionID, Limit: 10})
	dlist, _, _ := o.Store.ListSessionTasks(context.Background(), agent.ListQuery{UserID: "alice", Agent: "desk", SessionID: res.SessionID, Limit: 10})
	if len(list) != 1 || len(dlist) != 1 {
		t.Fatalf("children: %v %v", list, dlist)
	}
	if err := o.E.DeleteTask(context.Background(), "boss", "alice", res.TaskID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ agent, task string }{{"desk", dlist[0].TaskID}, {"leaf", list[0].TaskID}} {
		if _, err := o.E.GetTask(context.Background(), c.agent, "alice", c.task, agent.ViewOptions{}); Code(err) != agent.CodeTaskNotFound {
			t.Errorf("%s's task after the delete: %v", c.agent, err)
		}
	}
}

// testSubAgentRemoved: the leaf's agent is removed from the deployment
// while its caller waits: the caller's resume says so (404
// agent_not_found, nothing changed), and the caller can be canceled.
func testSubAgentRemoved(t *testing.T, o *Orch) {
	res, _, _ := pausedAtLeaf(t, o, "removed.txt")
	leaf := o.Agents["leaf"]
	delete(o.Agents, "leaf")
	defer func() { o.Agents["leaf"] = leaf }()
	_, _, err := o.Resume("desk", res.TaskID, res.RequestID, Approve())
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Code != agent.CodeAgentNotFound || !strings.Contains(ae.Message, "leaf") {
		t.Fatalf("resume at the caller: %v", err)
	}
	if v := o.View(t, "desk", res.TaskID); v.Status != agent.StatusPaused {
		t.Errorf("desk after the refusal: %s", v.Status)
	}
	out, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID})
	if err != nil || out.Result == nil || out.Result.Status != agent.StatusCanceled {
		t.Fatalf("cancel: %+v %v", out, err)
	}
}

// testOrphanCanceled: two calls of one sub-agent in a turn run one after
// the other: the first pauses, the second waits its turn; a cancel of the
// caller cancels the first's child and never starts the second.
func testOrphanCanceled(t *testing.T, o *Orch) {
	// Two calls of leaf in one turn: the first pauses, the second waits.
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", Append("orphan.txt", "x"))+"\n"+CallAgent("leaf", "second"))
	if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
		t.Fatalf("desk (-want +got):\n%s", diff)
	}
	p := res.PendingApprovals[0]
	// Cancel desk: the leaf below is canceled with it, the second call
	// never starts.
	if _, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID}); err != nil {
		t.Fatal(err)
	}
	lv := o.View(t, "leaf", p.TaskID)
	if lv.Status != agent.StatusCanceled || len(lv.Requests) != 1 {
		t.Errorf("leaf after desk's cancel: %s, %d requests", lv.Status, len(lv.Requests))
	}
}

// testChainHandedOff: a decision at the root of boss → desk → leaf when
// too little of the invocation is left to continue desk: the leaf's leg
// runs, then boss hands itself to the outbox and answers Running, its
// stream without request_complete; the continuations (what the dispatcher
// runs) complete desk, then boss, each level once.
func testChainHandedOff(t *testing.T, o *Orch) {
	res, _, p := pausedAtDepthTwo(t, o, "handoff.txt")
	dt, dr := o.middle(t, res.TaskID)
	o.E.ChainMinRemaining = 24 * time.Hour // always too little left
	out, rec, err := o.Resume("boss", res.TaskID, res.RequestID, agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: p.ToolCallID, Action: agent.ActionApprove}}})
	o.E.ChainMinRemaining = 5 * time.Second
	if err != nil {
		t.Fatalf("resume at boss: %v", err)
	}
	if diff := cmp.Diff(answered{agent.StatusRunning, res.RequestID}, answeredOf(out)); diff != "" {
		t.Fatalf("resume at boss (-want +got):\n%s", diff)
	}
	if names := rec.Names(); slices.Contains(names, agent.EventRequestComplete) {
		t.Errorf("a handed-off stream has request_complete: %v", names)
	}
	if got := o.Lines("handoff.txt"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("handoff.txt = %q: the leaf's leg runs before the handoff", got)
	}
	if v := o.View(t, "boss", res.TaskID); v.Status != agent.StatusRunning {
		t.Errorf("boss after the handoff: %s", v.Status)
	}
	items, err := o.Store.ListOutbox(context.Background(), time.Now().Add(time.Hour), 0)
	if err != nil || !slices.ContainsFunc(items, func(it agent.OutboxItem) bool {
		return it.Kind == agent.OutboxContinue && it.TaskID == res.TaskID && it.RequestID == res.RequestID
	}) {
		t.Fatalf("boss's continuation is not in the outbox: %+v %v", items, err)
	}
	for _, c := range [][2]string{{dt, dr}, {res.TaskID, res.RequestID}} {
		if err := o.E.ContinueCaller(context.Background(), c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, lvl := range []struct{ agent, task string }{{"leaf", p.TaskID}, {"desk", dt}, {"boss", res.TaskID}} {
		if v := o.View(t, lvl.agent, lvl.task); v.Status != agent.StatusCompleted {
			t.Errorf("%s after the continuations: %s", lvl.agent, v.Status)
		}
	}
	if got := o.Lines("handoff.txt"); len(got) != 1 {
		t.Errorf("handoff.txt = %q", got)
	}
	f := o.follow(t, "boss", res.TaskID, res.RequestID, 0)
	continuous(t, "boss's log", f, 1)
}

// testDeadCallerTakenOver: a decision sent to desk claims desk and its
// leaf, and the process dies before anything runs. A new message to desk
// is 409 task_busy (a caller with an open sub-agent call is never failed,
// nor its child orphaned); the reaper finds desk alone (its leaf's caller
// is running: desk's takeover drives it), takes desk over, which takes the
// leaf's leg over: the approved append may have run, so it is
// outcome_unknown and not run again; both requests complete.
func testDeadCallerTakenOver(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "dead.txt")
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	ctx := context.Background()
	if _, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond)
	_, err := o.E.StartInvoke(ctx, agent.InvokeInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, Items: []agent.InputItem{{Content: "hello?"}}})
	if Code(err) != agent.CodeTaskBusy {
		t.Fatalf("a message to the dead caller: %v, want task_busy", err)
	}
	due, err := o.E.DueTakeovers(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{res.TaskID}, taskIDs(due)); diff != "" {
		t.Fatalf("due takeovers, want desk alone (-want +got):\n%s", diff)
	}
	run, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID)
	if err != nil || run == nil {
		t.Fatalf("takeover of desk: %v %v", run, err)
	}
	out := run.Execute(ctx, &Recorder{})
	if out.Status != agent.StatusCompleted || !strings.Contains(out.Output, "outcome_unknown") {
		t.Fatalf("desk after the takeover: %+v", out)
	}
	if got := o.Lines("dead.txt"); len(got) != 0 {
		t.Errorf("dead.txt = %q: a call that may have run was run again", got)
	}
	if lv := o.View(t, "leaf", p.TaskID); lv.Status != agent.StatusCompleted {
		t.Errorf("the leaf after its caller's takeover: %s", lv.Status)
	}
	if due, _ := o.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("after the takeover, due = %+v", due)
	}
}

// pausedOnTwo invokes pair, which calls leaf and twin in one turn; both
// pause on an append (twin's approval expires within a second), and pair
// pauses on both.
func pausedOnTwo(t *testing.T, o *Orch) *agent.RequestResult {
	t.Helper()
	res, _ := o.Invoke(t, "pair", "", CallAgent("leaf", Append("l.txt", "x"))+"\n"+CallAgent("twin", Append("t.txt", "x")))
	if diff := cmp.Diff(paused{agent.StatusPaused, 2}, pausedOf(res)); diff != "" {
		t.Fatalf("pair (-want +got):\n%s", diff)
	}
	return res
}

// pendingAt is the pending call of res that the agent name's leaf holds.
func pendingAt(res *agent.RequestResult, name string) agent.PendingView {
	for _, p := range res.PendingApprovals {
		if p.Agent == name {
			return p
		}
	}
	return agent.PendingView{}
}

// chainEnded checks that pair and both leaves ended Failed
// approval_expired, with nothing run: no file written, no model called
// after the pause (pair's history ends with its calls' results).
func chainEnded(t *testing.T, o *Orch, res *agent.RequestResult) {
	t.Helper()
	pv := o.View(t, "pair", res.TaskID)
	want := ended{agent.StatusFailed, agent.CodeApprovalExpired}
	if diff := cmp.Diff(want, ended{pv.Status, codeOf(pv.Requests[0].Error)}); diff != "" {
		t.Errorf("pair (-want +got):\n%s", diff)
	}
	for _, p := range res.PendingApprovals {
		lv := o.View(t, p.Agent, p.TaskID)
		if diff := cmp.Diff(want, ended{lv.Status, codeOf(lv.Requests[0].Error)}); diff != "" {
			t.Errorf("%s, a leaf of an expired chain, must not stay approvable (-want +got):\n%s", p.Agent, diff)
		}
		if _, _, err := o.Resume(p.Agent, p.TaskID, p.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
			t.Errorf("approving %s at its own URL afterwards: %v, want approval_expired (its round closed by the chain's expiry)", p.Agent, err)
		}
	}
	if l, tw := o.Lines("l.txt"), o.Lines("t.txt"); len(l)+len(tw) != 0 {
		t.Errorf("files written: l.txt %q, t.txt %q", l, tw)
	}
	if last := pv.Items[len(pv.Items)-1]; last.Role != agent.RoleTool {
		t.Errorf("pair's last entry is %s: the model was called after the expiry", last.Role)
	}
}

// testExpiryAtCaller: one of two leaves a caller waits on expired; an
// approval at the caller is 410 approval_expired and ends the whole chain —
// the live leaf too — with no tool run and no model call.
func testExpiryAtCaller(t *testing.T, o *Orch) {
	res := pausedOnTwo(t, o)
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("approve at pair with twin expired: %v, want approval_expired", err)
	}
	chainEnded(t, o, res)
}

// testExpiryAtLeaf: the expiry found at the expired leaf itself (its own
// resume answers 410) reaches its caller (its continuation) and, through
// it, the caller's other leaf.
func testExpiryAtLeaf(t *testing.T, o *Orch) {
	res := pausedOnTwo(t, o)
	time.Sleep(1100 * time.Millisecond)
	twin := pendingAt(res, "twin")
	if _, _, err := o.Resume("twin", twin.TaskID, twin.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("approve at twin: %v, want approval_expired", err)
	}
	// The leaf's end continues pair (the dispatcher's part).
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	chainEnded(t, o, res)
}

// testPastRoundAtExpiredCaller: pair waits on twin, which pauses twice.
// Round 1, decided at pair, ends its leg Paused in round 2; round 2
// expires and ends the chain. Round 1's decision sent again answers round
// 1's leg (Paused, round 2), not the chain's end (410): the caller's
// expiry records no decision of its own for round 2, and the request's
// round is what says it moved past round 1.
func testPastRoundAtExpiredCaller(t *testing.T, o *Orch) {
	then, _ := json.Marshal(map[string]string{"path": "t.txt", "content": "y\n"})
	res, _ := o.Invoke(t, "pair", "", CallAgent("twin", Append("t.txt", "x")+"\n/then append_file "+string(then)))
	if diff := cmp.Diff(inRound{agent.StatusPaused, 1}, inRoundOf(res)); diff != "" {
		t.Fatalf("pair (-want +got):\n%s", diff)
	}
	out, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve())
	if err != nil {
		t.Fatalf("round 1 at pair: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 1 at pair (-want +got):\n%s", diff)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(2)}); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("round 2 at pair after twin's expiry: %v, want approval_expired", err)
	}
	for name, body := range map[string]agent.ResumeRequest{
		"with its round": {Action: agent.ActionApprove, Round: Round(1)},
		"without":        Approve(),
	} {
		again, _, err := o.Resume("pair", res.TaskID, res.RequestID, body)
		if name == "without" {
			// A body that names no round decides the last one: round 2,
			// closed by the chain's expiry.
			if Code(err) != agent.CodeApprovalExpired {
				t.Errorf("approve without a round after the chain ended: %+v %v", again, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("round 1's decision sent again (%s): %v, want its leg's outcome (Paused, round 2)", name, err)
		} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
			t.Errorf("round 1's decision sent again (%s), want its leg's outcome (-want +got):\n%s", name, diff)
		}
	}
	if got := o.Lines("t.txt"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("t.txt = %q, want round 1's line only", got)
	}
}

// hookStore runs after, once, after the first write it matches lands.
type hookStore struct {
	agent.Store
	mu    sync.Mutex
	match func(*agent.Write) bool
	after func()
}

func (s *hookStore) Write(ctx context.Context, w *agent.Write) error {
	err := s.Store.Write(ctx, w)
	s.mu.Lock()
	var run func()
	if err == nil && s.match != nil && s.match(w) {
		run, s.match = s.after, nil
	}
	s.mu.Unlock()
	if run != nil {
		run()
	}
	return err
}

// testCancelLeafClaimed: a decision has claimed the leaf (its leg has not
// run yet) when desk is canceled. The cancel cannot promise that nothing
// below starts, so it answers 202, not 200; the flag reaches both; once
// the leaf's leg ends, desk's continuation finalises it Canceled.
func testCancelLeafClaimed(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "claimed.txt")
	defer func(d time.Duration) { agent.CancelWait = d }(agent.CancelWait)
	agent.CancelWait = 300 * time.Millisecond
	ctx := context.Background()
	leafRun, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "leaf", UserID: "alice", TaskID: p.TaskID, RequestID: p.RequestID, Body: Approve()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := o.E.Cancel(ctx, agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Pending {
		t.Fatalf("cancel of desk while its leaf is claimed: %+v, want 202 (a call below may still start)", out.Result)
	}
	leafRun.Execute(ctx, agent.Discard)
	if err := o.E.ContinueCaller(ctx, res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	if v := o.View(t, "desk", res.TaskID); v.Status != agent.StatusCanceled {
		t.Errorf("desk after its leaf ended: %s", v.Status)
	}
}

// testCancelRacesDecision: an approval sent to desk has been checked;
// before its claim of desk and the leaf (one transaction) lands, a cancel
// of desk flags desk and the leaf. The claim fails, read again finds desk
// being canceled, and nothing approved runs; the cancel answers 200
// Canceled once the leaf ended — and the approved append never ran.
func testCancelRacesDecision(t *testing.T, o *Orch, hs *beforeStore) {
	res, _, p := pausedAtLeaf(t, o, "race.txt")
	ctx := context.Background()
	type answer struct {
		out *agent.CancelOutcome
		err error
	}
	canceled := make(chan answer, 1)
	hs.match = func(w *agent.Write) bool {
		return slices.ContainsFunc(append([]*agent.Write{w}, w.With...), func(w *agent.Write) bool {
			a := w.Task.Active
			return w.Task.ID == p.TaskID && a != nil && a.Status == agent.StatusRunning && len(w.Decisions) > 0
		})
	}
	hs.before = func() {
		go func() {
			out, err := o.E.Cancel(ctx, agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, Reason: "stop"})
			canceled <- answer{out, err}
		}()
		// Until the cancel has flagged (or ended) desk and the leaf below it.
		waitFor(t, func() bool {
			d, err1 := o.Store.GetTask(ctx, res.TaskID)
			l, err2 := o.Store.GetTask(ctx, p.TaskID)
			return err1 == nil && err2 == nil && (d.Active == nil || d.Active.CancelRequested) && (l.Active == nil || l.Active.CancelRequested)
		})
	}
	run, err := o.E.StartResume(ctx, agent.ResumeInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID, Body: Approve()})
	if err == nil {
		run.Execute(ctx, agent.Discard)
	}
	var c answer
	select {
	case c = <-canceled:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancel did not answer")
	}
	if c.err != nil {
		t.Fatalf("cancel: %v", c.err)
	}
	if !c.out.Pending && c.out.Result.Status == agent.StatusCanceled {
		if got := o.Lines("race.txt"); len(got) != 0 {
			t.Fatalf("cancel answered 200 Canceled and the approved append ran: race.txt = %q", got)
		}
	} else {
		t.Errorf("cancel answered %+v, want 200 Canceled (the leaf's leg reads its flag at once)", c.out)
	}
	if got := o.Lines("race.txt"); len(got) != 0 {
		t.Errorf("race.txt = %q: the approved call ran under a cancel", got)
	}
	for _, v := range []*agent.TaskView{o.View(t, "desk", res.TaskID), o.View(t, "leaf", p.TaskID)} {
		if v.Status != agent.StatusCanceled {
			t.Errorf("%s after the cancel: %s", v.Agent, v.Status)
		}
		// Its webhook is owed (nothing delivers here: the item stays).
		rid := v.Requests[len(v.Requests)-1].RequestID
		items, err := o.Store.ListRequestOutbox(ctx, v.TaskID, rid)
		if err != nil {
			t.Fatal(err)
		}
		owed := false
		for _, it := range items {
			owed = owed || (it.Kind == agent.OutboxWebhook && it.Event == agent.EventRequestCanceled)
		}
		if !owed {
			t.Errorf("%s's request %s was canceled, and no request.canceled webhook is owed: %+v", v.Agent, rid, items)
		}
	}
}

// testDeadContinuationTakenOver: the leaf's approval ends it; desk's
// continuation claims desk and its process dies before desk commits. With
// no client acting, the reaper finds desk, takes it over — the leaf's
// result is read again, nothing below runs twice — and desk completes.
func testDeadContinuationTakenOver(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "cont.txt")
	if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve at the leaf: %+v %v", out, err)
	}
	defer func(d time.Duration) { agent.LeaseDuration = d }(agent.LeaseDuration)
	agent.LeaseDuration = time.Second
	ctx := context.Background()
	run, err := o.E.StartContinue(ctx, res.TaskID, res.RequestID)
	if err != nil || run == nil {
		t.Fatalf("the continuation's claim: %v %v", run, err)
	}
	time.Sleep(agent.LeaseDuration + 100*time.Millisecond) // it dies unrun
	due, err := o.E.DueTakeovers(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{res.TaskID}, taskIDs(due)); diff != "" {
		t.Fatalf("due takeovers, want desk (-want +got):\n%s", diff)
	}
	taken, err := o.E.StartTakeover(ctx, res.TaskID, res.RequestID)
	if err != nil || taken == nil {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	if out := taken.Execute(ctx, agent.Discard); out.Status != agent.StatusCompleted || !strings.Contains(out.Output, "append_file success") {
		t.Fatalf("desk after the takeover: %+v", out)
	}
	if got := o.Lines("cont.txt"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("cont.txt = %q, want the one approved line", got)
	}
}

// testContinuationConsumedByTheClaim: the leaf's end puts desk's
// continuation; the claim that continues desk deletes it in its own
// transaction (not the deliverer after the leg, whatever the leg did).
// While that leg holds desk, another delivery finds it busy and keeps
// nothing else; once desk ended, a stale delivery has nothing to do.
func testContinuationConsumedByTheClaim(t *testing.T, o *Orch) {
	res, _, p := pausedAtLeaf(t, o, "consumed.txt")
	if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve at the leaf: %+v %v", out, err)
	}
	ctx := context.Background()
	items, err := o.Store.ListOutbox(ctx, time.Now().Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	var cont *agent.OutboxItem
	for i := range items {
		if items[i].Kind == agent.OutboxContinue && items[i].TaskID == res.TaskID {
			cont = &items[i]
		}
	}
	if cont == nil {
		t.Fatalf("no continuation of desk: %+v", items)
	}
	run, err := o.E.ConsumeContinue(ctx, cont.TaskID, cont.RequestID, cont.SK())
	if err != nil || run == nil {
		t.Fatalf("the continuation's claim: %v %v", run, err)
	}
	if _, err := o.Store.GetOutbox(ctx, cont.TaskID, cont.SK()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("after the claim, the continuation item: %v, want it deleted with the claim", err)
	}
	if _, err := o.E.ConsumeContinue(ctx, cont.TaskID, cont.RequestID, cont.SK()); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("a delivery while the leg holds desk: %v, want ErrBusy", err)
	}
	if out := run.Execute(ctx, agent.Discard); out.Status != agent.StatusCompleted {
		t.Fatalf("desk: %+v", out)
	}
	if again, err := o.E.ConsumeContinue(ctx, cont.TaskID, cont.RequestID, cont.SK()); again != nil || err != nil {
		t.Errorf("a stale delivery: %v %v, want nothing to do", again, err)
	}
}

// testCancelAfterASecondRound: desk's leaf pauses twice; the first round
// is approved at desk, which pauses in round 2; then desk is canceled.
// Every webhook each commit owes has a key of its own (the store's guard):
// the cancel's request.canceled never takes the key of round 2's
// request.paused, which would overwrite it or reach a receiver as its
// redelivery.
func testCancelAfterASecondRound(t *testing.T, o *Orch) {
	second := strings.Replace(Append("r2.txt", "y"), "/call", "/then", 1)
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", Append("r2.txt", "x")+"\n"+second))
	if res.Status != agent.StatusPaused {
		t.Fatalf("desk: %+v", res)
	}
	out, _, err := o.Resume("desk", res.TaskID, res.RequestID, Approve())
	if err != nil {
		t.Fatalf("round 1 approved at desk: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 1 approved at desk (-want +got):\n%s", diff)
	}
	c, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, Reason: "enough"})
	if err != nil {
		t.Fatalf("cancel of desk in round 2: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(c)); diff != "" {
		t.Fatalf("cancel of desk in round 2 (-want +got):\n%s", diff)
	}
}

// testCancelAfterASecondRoundAtTheLeaf: as testCancelAfterASecondRound,
// round 1 decided at the leaf and desk paused in round 2 by its
// continuation.
func testCancelAfterASecondRoundAtTheLeaf(t *testing.T, o *Orch) {
	second := strings.Replace(Append("r2.txt", "y"), "/call", "/then", 1)
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", Append("r2.txt", "x")+"\n"+second))
	if res.Status != agent.StatusPaused {
		t.Fatalf("desk: %+v", res)
	}
	p := res.PendingApprovals[0]
	if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusPaused {
		t.Fatalf("round 1 approved at the leaf: %+v %v", out, err)
	}
	if err := o.E.ContinueCaller(context.Background(), res.TaskID, res.RequestID); err != nil {
		t.Fatal(err)
	}
	v := o.View(t, "desk", res.TaskID)
	if diff := cmp.Diff([]agent.Status{agent.StatusPaused, agent.StatusPaused}, []agent.Status{v.Status, v.Requests[len(v.Requests)-1].Status}); diff != "" {
		t.Fatalf("desk's and its last request's status after its continuation (-want +got):\n%s", diff)
	}
	c, err := o.E.Cancel(context.Background(), agent.CancelInput{Agent: "desk", UserID: "alice", TaskID: res.TaskID, Reason: "enough"})
	if err != nil {
		t.Fatalf("cancel of desk in round 2: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(c)); diff != "" {
		t.Fatalf("cancel of desk in round 2 (-want +got):\n%s", diff)
	}
}

// testCancelLandsAsTheCallerPauses: desk's leaf pauses twice; round 1 is
// approved at desk, whose leg runs the leaf and then pauses in round 2 —
// but a cancel flags desk just before that pause is written. The pause's
// write, rebased on the flag, is no pause: desk ends Canceled, and the
// commits put no outbox key twice (the store's guard): the torture test
// found a request.paused of round 2 whose key the request.canceled then
// took — its delivery deleted the cancel's webhook, never sent.
func testCancelLandsAsTheCallerPauses(t *testing.T, newStore func(testing.TB) agent.Store) {
	hs := &hookStore{Store: newStore(t)}
	o := NewOrch(t, hs)
	second := strings.Replace(Append("r2.txt", "y"), "/call", "/then", 1)
	res, _ := o.Invoke(t, "desk", "", CallAgent("leaf", Append("r2.txt", "x")+"\n"+second))
	if res.Status != agent.StatusPaused {
		t.Fatalf("desk: %+v", res)
	}
	leafTask := res.PendingApprovals[0].TaskID
	ctx := context.Background()
	hs.match = func(w *agent.Write) bool {
		a := w.Task.Active
		return w.Task.ID == leafTask && a != nil && a.Status == agent.StatusPaused && a.Round == 2
	}
	hs.after = func() {
		// The cancel's flag, as another process writes it.
		d, err := hs.Store.GetTask(ctx, res.TaskID)
		if err != nil {
			t.Error(err)
			return
		}
		next := d.Clone()
		next.Version, next.WriteID = d.Version+1, uuid.NewString()
		next.Active.CancelRequested, next.Active.CanceledBy, next.Active.CanceledAt = true, "alice", time.Now()
		if err := hs.Store.Write(ctx, &agent.Write{Task: next, PrevVersion: d.Version}); err != nil {
			t.Errorf("flag desk: %v", err)
		}
	}
	out, _, err := o.Resume("desk", res.TaskID, res.RequestID, Approve())
	if err != nil || out.Status != agent.StatusCanceled {
		t.Errorf("round 1 approved at desk, a cancel flag landing before its pause: %+v %v, want Canceled", out, err)
	}
	v := o.View(t, "desk", res.TaskID)
	if v.Status != agent.StatusCanceled {
		t.Fatalf("desk: %s", v.Status)
	}
	items, err := o.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	canceled := false
	for _, it := range items {
		canceled = canceled || (it.Kind == agent.OutboxWebhook && it.Event == agent.EventRequestCanceled)
	}
	if !canceled {
		t.Errorf("desk was canceled and no request.canceled webhook is owed: %+v", items)
	}
}

// testLeafDecidedBeforeTheCallersExpiry: pair waits on twin alone; twin's
// round is approved at twin's own URL, in time, and runs; pair's copy of
// the round's expiry is not cleared by it (pair hears of twin through its
// continuation, not delivered here), and passes. An approval at pair then
// is no expiry — the round was decided before it expired — but twin's
// answer table: the same decision, its stored outcome; pair goes on.
func testLeafDecidedBeforeTheCallersExpiry(t *testing.T, o *Orch) {
	res, _ := o.Invoke(t, "pair", "", CallAgent("twin", Append("t.txt", "x")))
	if diff := cmp.Diff(paused{agent.StatusPaused, 1}, pausedOf(res)); diff != "" {
		t.Fatalf("pair (-want +got):\n%s", diff)
	}
	p := res.PendingApprovals[0]
	if out, _, err := o.Resume("twin", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("approve at twin: %+v %v", out, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the round's expiry, which pair still shows
	out, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Errorf("the same approval at pair after twin ran: %+v %v, want pair's outcome (Completed), not an expiry", out, err)
	}
	if got := o.Lines("t.txt"); len(got) != 1 {
		t.Errorf("t.txt = %q: twin's call ran %d times", got, len(got))
	}
}

// testOneLeafDecidedTheOtherExpired: pair waits on leaf and twin; leaf is
// approved at its own URL, twin is not and expires. An approval at pair is
// 410: one waiting leaf expired ends the whole chain (the decided leaf's
// result reaches nobody), and pair's model is not called.
func testOneLeafDecidedTheOtherExpired(t *testing.T, o *Orch) {
	res := pausedOnTwo(t, o)
	for _, p := range res.PendingApprovals {
		if p.Agent == "leaf" {
			if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, Approve()); err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("approve at leaf: %+v %v", out, err)
			}
		}
	}
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := o.Resume("pair", res.TaskID, res.RequestID, Approve()); Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("approve at pair with twin expired and leaf decided: %v, want approval_expired", err)
	}
	if pv := o.View(t, "pair", res.TaskID); pv.Status != agent.StatusFailed {
		t.Errorf("pair: %s", pv.Status)
	}
	if got := o.Lines("t.txt"); len(got) != 0 {
		t.Errorf("twin's expired call ran: t.txt = %q", got)
	}
}
