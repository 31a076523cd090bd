package enginetest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Dead legs and the reaper (docs/architecture.md, "Dead legs" and "The
// reaper"): what the history says of a leg whose process died, and a request
// that finishes without any client acting.

// outcomeUnknown is the result of a call a dead leg may have run.
const outcomeUnknown = "error:outcome_unknown: the request was interrupted while this call ran; it may or may not have run, and it was not run again"

// deadLeg starts a request whose one model turn calls safe (which runs at
// once) and slow (held), and lets its lease run out while slow is held: the
// process "dies" with safe run and recorded as called, but without its
// result. It returns the dead request.
func (env *Env) deadLeg(t *testing.T) *agent.RequestResult {
	t.Helper()
	env.Slow.Block = make(chan struct{})
	t.Cleanup(func() { close(env.Slow.Block) })
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("s1", "safe", "write"), Call("w1", "slow", "wait")))
	ctx := context.Background()
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *agent.RequestResult, 1)
	go func() { done <- run.Execute(ctx, &Recorder{}) }()
	waitFor(t, func() bool { return len(env.Safe.Runs()) == 1 })
	// The store's clock passes the lease: the holder's renewal fails and
	// it stops, writing nothing more (as a killed process would).
	env.Advance(agent.LeaseDuration + time.Second)
	select {
	case res := <-done:
		if res.Error == nil || res.Error.Code != agent.CodeRequestLost {
			t.Fatalf("the held leg ended %s %+v, want request_lost", res.Status, res.Error)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held leg did not stop when its lease ended")
	}
	return &agent.RequestResult{TaskID: run.TaskID(), RequestID: run.RequestID()}
}

// results lists every tool result the model was sent, "id=status:text".
func results(req *agent.ModelRequest) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type != agent.BlockToolResult {
				continue
			}
			var parts []string
			for _, c := range b.Content {
				parts = append(parts, c.Text)
			}
			out[b.ToolUseID] = b.Status + ":" + strings.Join(parts, " ")
		}
	}
	return out
}

// testDeadLegHistoryTellsTheTruth: a new message after a dead leg records
// the dead request Failed lease_expired, and its calls that may have run —
// safe ran — as outcome_unknown, never "not run" (the model would run
// them again).
func testDeadLegHistoryTellsTheTruth(t *testing.T, env *Env) {
	dead := env.deadLeg(t)
	env.Model.Add(agenttest.Say("ok"))
	next, _ := env.Invoke(t, dead.TaskID, "and now?")
	if next.Status != agent.StatusCompleted {
		t.Fatalf("the follow-on: %+v", next)
	}
	got := results(env.Model.Call(1))
	for _, id := range []string{"s1", "w1"} {
		if got[id] != outcomeUnknown {
			t.Errorf("the model was told %s=%q, want %q", id, got[id], outcomeUnknown)
		}
	}
	v, err := env.E.GetTask(context.Background(), "acc", "alice", dead.TaskID, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := v.Requests[0]
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeLeaseExpired}, ended{r.Status, codeOf(r.Error)}); diff != "" {
		t.Errorf("the dead request (-want +got):\n%s", diff)
	}
	if runs := env.Safe.Runs(); len(runs) != 1 {
		t.Errorf("safe ran %v, want once", runs)
	}
}

// testCancelDeadLegTellsTheTruth: a cancel that finalises a dead leg
// records its calls that may have run as outcome_unknown, not as canceled.
func testCancelDeadLegTellsTheTruth(t *testing.T, env *Env) {
	dead := env.deadLeg(t)
	out, err := env.E.Cancel(context.Background(), agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: dead.TaskID})
	if err != nil {
		t.Fatalf("cancel of a dead request: %v", err)
	}
	if diff := cmp.Diff(canceled{false, agent.StatusCanceled}, canceledOf(out)); diff != "" {
		t.Fatalf("cancel of a dead request (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("ok"))
	env.Invoke(t, dead.TaskID, "and now?")
	got := results(env.Model.Call(1))
	if got["s1"] != outcomeUnknown {
		t.Errorf("the model was told s1=%q, want %q", got["s1"], outcomeUnknown)
	}
}

// testReaperTakesOverADeadInvoke: nobody touches the task; the reaper
// finds the dead leg, takes it over (its started calls outcome_unknown,
// none run again) and the request completes.
func testReaperTakesOverADeadInvoke(t *testing.T, env *Env) {
	dead := env.deadLeg(t)
	ctx := context.Background()
	due, err := env.E.DueTakeovers(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]dueLeg{{dead.TaskID, dead.RequestID, false}}, dueLegs(due)); diff != "" {
		t.Fatalf("due takeovers, want the dead request (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("recovered"))
	run, err := env.E.StartTakeover(ctx, dead.TaskID, dead.RequestID)
	if err != nil || run == nil {
		t.Fatalf("takeover: %v %v", run, err)
	}
	res := run.Execute(ctx, &Recorder{})
	if diff := cmp.Diff(said{agent.StatusCompleted, "recovered"}, saidOf(res)); diff != "" {
		t.Fatalf("the taken-over request (-want +got):\n%s", diff)
	}
	got := results(env.Model.Call(1))
	for _, id := range []string{"s1", "w1"} {
		if got[id] != outcomeUnknown {
			t.Errorf("the model was told %s=%q, want %q", id, got[id], outcomeUnknown)
		}
	}
	if runs := env.Safe.Runs(); len(runs) != 1 {
		t.Errorf("safe ran %v, want once", runs)
	}
	if due, _ := env.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("after the takeover, due = %+v", due)
	}
	// A second takeover of the same request finds nothing to do.
	if run, err := env.E.StartTakeover(ctx, dead.TaskID, dead.RequestID); run != nil || err != nil {
		t.Errorf("a second takeover: %v %v", run, err)
	}
}

// testReaperLeavesLiveLegs: a running leg whose lease is live is not due,
// and a takeover of it is refused (ErrBusy).
func testReaperLeavesLiveLegs(t *testing.T, env *Env) {
	ctx := context.Background()
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(agent.LeaseDuration / 2)
	if due, _ := env.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("a live leg is due: %+v", due)
	}
	if _, err := env.E.StartTakeover(ctx, run.TaskID(), run.RequestID()); err != agent.ErrBusy {
		t.Errorf("takeover of a live leg: %v, want ErrBusy", err)
	}
}

// testReaperExpiresRounds: a paused round past its expiry is expired by
// the reaper: the request Failed approval_expired, no model call, nothing
// run.
func testReaperExpiresRounds(t *testing.T, env *Env) {
	res, _ := env.Pause(t)
	ctx := context.Background()
	if due, _ := env.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Fatalf("a live pause is due: %+v", due)
	}
	env.Advance(2 * time.Hour)
	due, err := env.E.DueTakeovers(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	type expiredLeg struct {
		RequestID string
		Expired   bool
	}
	got := each(due, func(d agent.Takeover) expiredLeg { return expiredLeg{d.RequestID, d.Expired} })
	if diff := cmp.Diff([]expiredLeg{{res.RequestID, true}}, got); diff != "" {
		t.Fatalf("due takeovers, want the expired round (-want +got):\n%s", diff)
	}
	calls := env.Model.NCalls()
	if run, err := env.E.StartTakeover(ctx, res.TaskID, res.RequestID); run != nil || err != nil {
		t.Fatalf("the expiry: %v %v", run, err)
	}
	v, _ := env.E.GetTask(ctx, "acc", "alice", res.TaskID, agent.ViewOptions{})
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeApprovalExpired}, ended{v.Status, codeOf(v.Requests[0].Error)}); diff != "" {
		t.Errorf("after the reaper (-want +got):\n%s", diff)
	}
	if env.Model.NCalls() != calls || len(env.Safe.Runs())+len(env.Guarded.Runs()) != 0 {
		t.Errorf("the expiry called the model or ran a tool")
	}
	if due, _ := env.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("after the expiry, due = %+v", due)
	}
}

// testReaperGivesUp: takeovers that die in turn (claimed, never run) end
// the request Failed lease_expired at the MaxTakeovers-th, its calls
// closed truthfully.
func testReaperGivesUp(t *testing.T, env *Env) {
	dead := env.deadLeg(t)
	ctx := context.Background()
	for i := 0; i < agent.MaxTakeovers; i++ {
		run, err := env.E.StartTakeover(ctx, dead.TaskID, dead.RequestID)
		if err != nil || run == nil {
			t.Fatalf("takeover %d: %v %v", i+1, run, err)
		}
		env.Advance(agent.LeaseDuration + time.Second) // it dies unrun
	}
	if run, err := env.E.StartTakeover(ctx, dead.TaskID, dead.RequestID); run != nil || err != nil {
		t.Fatalf("the last takeover: %v %v", run, err)
	}
	v, err := env.E.GetTask(ctx, "acc", "alice", dead.TaskID, agent.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ended{agent.StatusFailed, agent.CodeLeaseExpired}, ended{v.Status, codeOf(v.Requests[0].Error)}); diff != "" {
		t.Fatalf("after %d dead takeovers (-want +got):\n%s", agent.MaxTakeovers, diff)
	}
	if env.Model.NCalls() != 1 {
		t.Errorf("the model was called %d times, want 1 (the dead leg's)", env.Model.NCalls())
	}
	if due, _ := env.E.DueTakeovers(ctx, 100); len(due) != 0 {
		t.Errorf("a failed request is still due: %+v", due)
	}
}

// testReaperLoop: the in-process reaper (hitch serve's) sweeps by itself
// and finishes a dead request with nobody calling anything.
func testReaperLoop(t *testing.T, env *Env) {
	dead := env.deadLeg(t)
	env.Model.Add(agenttest.Say("recovered"))
	ctx, cancel := context.WithCancel(context.Background())
	rp := &agent.Reaper{Engine: env.E, Every: 10 * time.Millisecond}
	done := make(chan struct{})
	go func() { rp.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool {
		v, err := env.E.GetTask(context.Background(), "acc", "alice", dead.TaskID, agent.ViewOptions{})
		return err == nil && v.Status == agent.StatusCompleted
	})
}

// testPastRoundAnswersItsLeg: a decision of round 1 sent again after the
// request went on — paused in round 2, then completed — answers round 1's
// leg (Paused in round 2), from the event log, not the request's outcome
// now; decisions without a round bind by their calls alike.
func testPastRoundAnswersItsLeg(t *testing.T, env *Env) {
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g1", "guarded", "one")))
	res, _ := env.Invoke(t, "", "do it")
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "two")))
	round1 := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g1", Action: agent.ActionApprove}}}
	out, _, err := env.Resume(res, "alice", round1)
	if err != nil {
		t.Fatalf("round 1: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 1 (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(2)}); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2: %+v %v", out, err)
	}
	for name, body := range map[string]agent.ResumeRequest{
		"with its round":    {Action: agent.ActionApprove, Round: Round(1)},
		"by its calls only": round1,
	} {
		again, _, err := env.Resume(res, "alice", body)
		if err != nil {
			t.Errorf("round 1's decision sent again (%s): %v, want its leg's outcome (Paused, round 2)", name, err)
		} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
			t.Errorf("round 1's decision sent again (%s), want its leg's outcome (-want +got):\n%s", name, diff)
		}
	}
	if runs := env.Guarded.Runs(); len(runs) != 2 {
		t.Errorf("guarded ran %v, want one and two once each", runs)
	}
}

// lostLog is a store whose event log drops what it is given while drop
// is set: a leg whose process died after its commit, before its events
// reached the log.
type lostLog struct {
	agent.Store
	drop atomic.Bool
}

func (l *lostLog) AppendEvents(ctx context.Context, taskID, requestID string, events []eventlog.Event, expires time.Time) error {
	if l.drop.Load() {
		return nil
	}
	return l.Store.AppendEvents(ctx, taskID, requestID, events, expires)
}

// testPastRoundWithoutItsLog: as testPastRoundAnswersItsLeg, but round 1's
// leg never reached the event log (its process died after the commit that
// paused round 2). The same decision still answers that leg — Paused in
// round 2 — never the request's outcome now.
func testPastRoundWithoutItsLog(t *testing.T, env *Env) {
	lost := &lostLog{Store: env.E.Store}
	env.E.Store = lost
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g1", "guarded", "one")))
	res, _ := env.Invoke(t, "", "do it")
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "two")))
	lost.drop.Store(true)
	round1 := agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(1)}
	out, _, err := env.Resume(res, "alice", round1)
	lost.drop.Store(false)
	if err != nil {
		t.Fatalf("round 1: %v", err)
	}
	if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(out)); diff != "" {
		t.Fatalf("round 1 (-want +got):\n%s", diff)
	}
	again, _, err := env.Resume(res, "alice", round1)
	if err != nil {
		t.Errorf("round 1's decision again while round 2 waits: %v, want Paused, round 2", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
		t.Errorf("round 1's decision again while round 2 waits (-want +got):\n%s", diff)
	}
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(2)}); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("round 2: %+v %v", out, err)
	}
	again, _, err = env.Resume(res, "alice", round1)
	if err != nil {
		t.Errorf("round 1's decision again after the request completed: %v, want its leg's outcome (Paused, round 2)", err)
	} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(again)); diff != "" {
		t.Errorf("round 1's decision again after the request completed, want its leg's outcome (-want +got):\n%s", diff)
	}
}

// testDuplicateAnswersItsLeg: a duplicate of a round-1 approval waits
// while the approval's leg runs; that leg pauses the request in round 2,
// and a cancel ends it before the duplicate reads where it stands. The
// duplicate answers the leg (Paused, round 2), as the approval did —
// never the request's outcome now (Canceled).
func testDuplicateAnswersItsLeg(t *testing.T, env *Env) {
	hs := &hookStore{Store: env.E.Store}
	env.E.Store = hs
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g1", "guarded", "one")))
	res, _ := env.Invoke(t, "", "do it")
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "two")))
	ctx := context.Background()
	hs.match = func(w *agent.Write) bool {
		a := w.Task.Active
		return w.Task.ID == res.TaskID && a != nil && a.Status == agent.StatusPaused && a.Round == 2
	}
	hs.after = func() {
		if _, err := env.E.Cancel(ctx, agent.CancelInput{Agent: "acc", UserID: "alice", TaskID: res.TaskID, Reason: "enough"}); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}
	env.Guarded.Block = make(chan struct{})
	round1 := agent.ResumeRequest{Action: agent.ActionApprove, Round: Round(1)}
	type answer struct {
		out *agent.RequestResult
		err error
	}
	first, dup := make(chan answer, 1), make(chan answer, 1)
	go func() { out, _, err := env.Resume(res, "alice", round1); first <- answer{out, err} }()
	waitFor(t, func() bool {
		tk, err := env.Store.GetTask(ctx, res.TaskID)
		return err == nil && tk.Active != nil && tk.Active.Status == agent.StatusRunning
	})
	go func() { out, _, err := env.Resume(res, "alice", round1); dup <- answer{out, err} }()
	time.Sleep(300 * time.Millisecond) // the duplicate follows the leg
	close(env.Guarded.Block)
	for name, ch := range map[string]chan answer{"the approval": first, "its duplicate": dup} {
		select {
		case a := <-ch:
			if a.err != nil {
				t.Errorf("%s: %v, want its leg's outcome (Paused, round 2)", name, a.err)
			} else if diff := cmp.Diff(inRound{agent.StatusPaused, 2}, inRoundOf(a.out)); diff != "" {
				t.Errorf("%s, want its leg's outcome (-want +got):\n%s", name, diff)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not answer", name)
		}
	}
	if v, _ := env.E.GetTask(ctx, "acc", "alice", res.TaskID, agent.ViewOptions{}); v.Status != agent.StatusCanceled {
		t.Errorf("the task is %s, want Canceled", v.Status)
	}
}

// standing writes n tasks of the agent straight through the store, each
// with a request that set shapes (Running with a claim unless set says
// otherwise): the entries a sweep meets before the one a test looks for,
// made without running n requests.
func (env *Env) standing(t *testing.T, n int, agentName string, set func(a *agent.ActiveRequest)) []*agent.Task {
	t.Helper()
	ctx := context.Background()
	now := env.Now()
	out := make([]*agent.Task, n)
	for i := range n {
		a := &agent.ActiveRequest{ID: uuid.NewString(), Kind: agent.KindInvoke, Status: agent.StatusRunning, ClaimToken: uuid.NewString(),
			Round: 1, CreatedAt: now, FirstSeq: 1}
		set(a)
		tk := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: agentName, UserID: "alice", Status: a.Status,
			CreatedAt: now, UpdatedAt: now, Version: 1, NextSeq: 1, WriteID: uuid.NewString(), Active: a}
		if err := env.Store.Write(ctx, &agent.Write{Task: tk, Session: &agent.SessionLink{SessionID: tk.SessionID, UserID: tk.UserID,
			TaskID: tk.ID, Agent: tk.Agent, CreatedAt: now}}); err != nil {
			t.Fatalf("write a standing task: %v", err)
		}
		out[i] = tk
	}
	return out
}

// testReaperPassesWhatItCannotTake: ahead of a dead leg in the reaper's
// index (claimed earlier) stand 150 live legs (their leases renewed),
// dead children whose callers run, and dead legs of an agent this
// deployment lacks. One sweep takes the dead leg over: none of them hides
// it, and none of them is taken.
func testReaperPassesWhatItCannotTake(t *testing.T, env *Env) {
	now := env.Now()
	env.standing(t, 150, "acc", func(a *agent.ActiveRequest) {
		a.ClaimedAt, a.LeaseUntil = now.Add(-time.Hour), now.Add(24*time.Hour)
	})
	for _, c := range env.standing(t, 20, "acc", func(a *agent.ActiveRequest) {
		a.ClaimedAt, a.LeaseUntil = now.Add(-time.Hour), now.Add(24*time.Hour)
	}) {
		env.standing(t, 1, "acc", func(a *agent.ActiveRequest) {
			a.ClaimedAt, a.LeaseUntil = now.Add(-time.Hour), now.Add(-time.Hour+agent.LeaseDuration)
			a.Parent = &agent.ParentRef{Agent: "acc", TaskID: c.ID, RequestID: c.Active.ID, ToolCallID: "call"}
		})
	}
	env.standing(t, 20, "gone", func(a *agent.ActiveRequest) {
		a.ClaimedAt, a.LeaseUntil = now.Add(-time.Hour), now.Add(-time.Hour+agent.LeaseDuration)
	})
	dead := env.deadLeg(t)
	env.Model.Add(agenttest.Say("recovered"))
	rp := &agent.Reaper{Engine: env.E}
	if n := rp.Sweep(context.Background()); n != 1 {
		t.Errorf("the sweep started %d takeovers, want 1 (the dead leg's)", n)
	}
	waitFor(t, func() bool {
		v, err := env.E.GetTask(context.Background(), "acc", "alice", dead.TaskID, agent.ViewOptions{})
		return err == nil && v.Status == agent.StatusCompleted
	})
	due, err := env.E.DueTakeovers(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range due {
		if tk.Agent != "gone" {
			t.Errorf("after the takeover, %+v is due (only the lacking agent's dead legs are)", tk)
		}
	}
}

// testReaperExpiresBehindOthers: ahead of an expired round in the reaper's
// index (expiring earlier) stand 150 expired rounds of an agent this
// deployment lacks. One sweep expires the round.
func testReaperExpiresBehindOthers(t *testing.T, env *Env) {
	now := env.Now()
	env.standing(t, 150, "gone", func(a *agent.ActiveRequest) {
		a.Status, a.ClaimToken = agent.StatusPaused, ""
		a.Pending = []agent.PendingCall{{ToolCallID: "g", Name: "guarded", ItemSeq: 1, InputHash: "h", ExpiresAt: now.Add(-time.Hour), Round: 1}}
	})
	res, _ := env.Pause(t)
	env.Advance(2 * time.Hour)
	rp := &agent.Reaper{Engine: env.E}
	if n := rp.Sweep(context.Background()); n != 1 {
		t.Errorf("the sweep started %d takeovers, want 1 (the expiry)", n)
	}
	waitFor(t, func() bool {
		v, err := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{})
		return err == nil && v.Status == agent.StatusFailed && v.Requests[0].Error != nil && v.Requests[0].Error.Code == agent.CodeApprovalExpired
	})
}
