package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

type setup struct {
	env     *enginetest.Env
	store   agent.Store
	hooks   *notifytest.Hooks
	answers *notifytest.Answers
	cancel  context.CancelFunc
	done    chan struct{}
}

func start(t *testing.T, fail int) *setup {
	t.Helper()
	store := memstore.New()
	return startOn(t, store, store.Feed(), fail, 50*time.Millisecond)
}

// startOn runs a dispatcher fed by feed, sweeping the store every sweep.
func startOn(t *testing.T, store agent.Store, feed <-chan agent.OutboxItem, fail int, sweep time.Duration) *setup {
	t.Helper()
	env := enginetest.New(t, store)
	ag, _ := env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/hitch", Events: agent.NotificationEvents, Secret: []byte("k")}}
	s := &setup{env: env, store: store, hooks: &notifytest.Hooks{Fail: fail}, answers: &notifytest.Answers{}, done: make(chan struct{})}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: s.hooks, Answerers: map[string]notify.Answerer{agent.WaiterTaskToken: s.answers}, Now: env.Now,
		Log: slog.New(slog.DiscardHandler)}
	r := &notify.Runner{D: d, Feed: feed, Backoff: func(int) time.Duration { return 5 * time.Millisecond }, SweepEvery: sweep, SweepAge: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { r.Run(ctx); close(s.done) }()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

// wait polls until cond holds (deliveries are asynchronous).
func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWebhooksRetriedInOrder: a receiver that fails the first two attempts
// of each message gets the pause, then the completion, each once after
// deduplication, with the same id across attempts; nothing is left.
func TestWebhooksRetriedInOrder(t *testing.T) {
	s := start(t, 2)
	env := s.env
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	if res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %+v", res)
	}
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "two webhooks", func() bool { return len(s.hooks.Delivered()) == 2 })
	got := s.hooks.Delivered()
	if diff := cmp.Diff([]string{agent.EventRequestPaused, agent.EventRequestCompleted}, notifytest.Types(got)); diff != "" {
		t.Errorf("webhooks in order (-want +got):\n%s", diff)
	}
	for _, w := range got {
		if n := s.hooks.Attempts(w.ID); n != 3 {
			t.Errorf("%s delivered after %d attempts, want 3 (two refused)", w.Type, n)
		}
	}
	if got[0].ID == got[1].ID {
		t.Errorf("the pause and the completion share the delivery id %s", got[0].ID)
	}
	raw, _ := json.Marshal(got[0].Data)
	var data struct {
		Agent            string `json:"agent"`
		User             string `json:"user_id"`
		RequestID        string `json:"request_id"`
		Status           string `json:"status"`
		PendingApprovals []struct {
			Name string `json:"name"`
		} `json:"pending_approvals"`
		Approvers []string `json:"approvers"`
	}
	if err := json.Unmarshal(raw, &data); err != nil || data.Agent != "acc" || data.User != "alice" || data.RequestID != res.RequestID ||
		data.Status != "Paused" || len(data.PendingApprovals) != 1 || data.PendingApprovals[0].Name != "guarded" || !slices.Equal(data.Approvers, []string{"owner"}) {
		t.Errorf("the pause's data: %s (%v)", raw, err)
	}
	wait(t, "the outbox to empty", func() bool {
		left, err := s.store.ListOutbox(context.Background(), time.Now().Add(time.Hour*24*365), 0)
		return err == nil && len(left) == 0
	})
	time.Sleep(100 * time.Millisecond) // a sweep or two more: nothing is sent again
	if n := len(s.hooks.Delivered()); n != 2 {
		t.Errorf("%d webhooks delivered in all, want 2", n)
	}
}

// TestTaskTokenAnsweredOnce: a waiter with on_pause "wait" hears a heartbeat
// at the pause and at the resume's claim, then one success with the
// Completed result; its token is deleted, and nothing more is sent.
func TestTaskTokenAnsweredOnce(t *testing.T) {
	s := start(t, 0)
	env := s.env
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}},
		Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-1", OnPause: agent.OnPauseWait}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(context.Background(), nil)
	wait(t, "the pause's heartbeat", func() bool { return len(s.answers.Calls()) == 1 })
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "the answer", func() bool { return len(s.answers.Calls()) == 3 })
	time.Sleep(100 * time.Millisecond)
	want := []string{"heartbeat tok-1", "heartbeat tok-1", "success tok-1 Completed"}
	if diff := cmp.Diff(want, s.answers.Calls()); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	ref := (&agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-1"}).Ref()
	if _, err := s.store.GetToken(context.Background(), res.TaskID, res.RequestID, ref.Hash); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the answered token is still kept: %v", err)
	}
}

// TestTaskTokenReturnOnPause: on_pause "return" answers the pause with the
// Paused result; the request's end sends nothing more to that token.
func TestTaskTokenReturnOnPause(t *testing.T) {
	s := start(t, 0)
	env := s.env
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}},
		Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-2", OnPause: agent.OnPauseReturn}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(context.Background(), nil)
	wait(t, "the paused answer", func() bool { return len(s.answers.Calls()) == 1 })
	if _, _, err := env.Resume(res, "alice", enginetest.Reject("no")); err != nil {
		t.Fatal(err)
	}
	env.Model.Add(agenttest.Say("ok, not deleting"))
	time.Sleep(200 * time.Millisecond)
	if diff := cmp.Diff([]string{"success tok-2 Paused"}, s.answers.Calls()); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// TestFinalRefusalNotRetried: a token the service says timed out is
// recorded once and dropped, not retried.
func TestFinalRefusalNotRetried(t *testing.T) {
	s := start(t, 0)
	s.answers.Gone = true
	env := s.env
	env.Model.Add(agenttest.Say("done"))
	run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "hi"}},
		Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "stale"}})
	if err != nil {
		t.Fatal(err)
	}
	run.Execute(context.Background(), nil)
	wait(t, "the answer", func() bool { return len(s.answers.Calls()) == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := len(s.answers.Calls()); n != 1 {
		t.Errorf("a final refusal was retried: %v", s.answers.Calls())
	}
	left, _ := s.store.ListOutbox(context.Background(), time.Now().Add(24*365*time.Hour), 0)
	if len(left) != 0 {
		t.Errorf("outbox items left: %+v", left)
	}
}

// pollContinuer answers polls "nothing new" (RetryAfter) until released.
type pollContinuer struct {
	mu       sync.Mutex
	calls    int
	released bool
}

func (p *pollContinuer) Continue(context.Context, agent.OutboxItem) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if !p.released {
		return &notify.RetryAfter{After: 10 * time.Millisecond, Err: agent.ErrWaiting}
	}
	return nil
}

func (p *pollContinuer) state() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.released
}

// TestPollWaitsApart: a caller's poll of a remote agent (docs/architecture.md) is
// delivered again at its own pace (RetryAfter, not the growing backoff —
// here an hour) and holds back no notification of the request: the
// request's completion webhook goes out while the poll still waits.
func TestPollWaitsApart(t *testing.T) {
	store := memstore.New()
	env := enginetest.New(t, store)
	ag, _ := env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/hitch", Events: agent.NotificationEvents, Secret: []byte("k")}}
	hooks := &notifytest.Hooks{}
	polls := &pollContinuer{}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: hooks, Continuer: polls, Now: env.Now, Log: slog.New(slog.DiscardHandler)}
	r := &notify.Runner{D: d, Feed: store.Feed(), Backoff: func(int) time.Duration { return time.Hour }, SweepEvery: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	if res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %+v", res)
	}
	wait(t, "the pause's webhook", func() bool { return len(hooks.Delivered()) == 1 })
	cur, err := store.GetTask(ctx, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Clone()
	next.Version, next.WriteID = cur.Version+1, "w-poll"
	poll := agent.OutboxItem{TaskID: res.TaskID, RequestID: res.RequestID, Epoch: 1, EventID: 99, Agent: "acc", UserID: "alice",
		Kind: agent.OutboxContinue, Event: agent.EventPoll, Recipient: "po-remote", CreatedAt: env.Now()}
	if err := store.Write(ctx, &agent.Write{Task: next, PrevVersion: cur.Version, Outbox: []agent.OutboxItem{poll}}); err != nil {
		t.Fatal(err)
	}
	wait(t, "polls", func() bool { n, _ := polls.state(); return n >= 3 })
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "the completion's webhook while the poll waits", func() bool { return len(hooks.Delivered()) == 2 })
	// The poll is still there, still tried at its own pace.
	if _, err := store.GetOutbox(ctx, poll.TaskID, poll.SK()); err != nil {
		t.Fatalf("the poll's item, before the poll was answered: %v", err)
	}
	n0, _ := polls.state()
	wait(t, "the poll tried again after the completion", func() bool { n, _ := polls.state(); return n >= n0+2 })
	polls.mu.Lock()
	polls.released = true
	polls.mu.Unlock()
	wait(t, "the poll's item to go", func() bool {
		_, err := store.GetOutbox(ctx, poll.TaskID, poll.SK())
		return errors.Is(err, agent.ErrNotFound)
	})
}

// TestWebhookNamesApprovers: a pause's webhook lists who may decide its
// unsettled calls, for a bridge to route on.
func TestWebhookNamesApprovers(t *testing.T) {
	s := start(t, 0)
	env := s.env
	ag, _ := env.E.Agents.Get("acc")
	for i := range ag.Tools {
		if ag.Tools[i].Tool.Spec().Name == "guarded" {
			ag.Tools[i].Policy.Approvers = &agent.ApproverPolicy{Approvers: []string{agent.GroupPrincipal("sre"), agent.UserPrincipal("bob")}, Quorum: 2, FourEyes: true}
		}
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete"), enginetest.Call("r1", "retry", "again")))
	if res, _ := env.Invoke(t, "", "do it"); res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %+v", res)
	}
	wait(t, "the pause's webhook", func() bool { return len(s.hooks.Delivered()) == 1 })
	raw, _ := json.Marshal(s.hooks.Delivered()[0].Data)
	var data struct {
		Approvers []string `json:"approvers"`
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"group:sre", "user:bob", "owner"}, data.Approvers); diff != "" {
		t.Errorf("data.approvers (-want +got):\n%s", diff)
	}
}

// TestTaskTokenAnsweredByARecording: a decision that is recorded (a call
// short of its quorum) leaves the request Paused; a waiter it brings with
// on_pause "return" is answered with that pause, one with "wait" by the
// round's end, and the same decision sent again binds its waiter too.
func TestTaskTokenAnsweredByARecording(t *testing.T) {
	s := start(t, 0)
	env := s.env
	ag, _ := env.E.Agents.Get("acc")
	for i := range ag.Tools {
		if ag.Tools[i].Tool.Spec().Name == "guarded" {
			ag.Tools[i].Policy.Approvers = &agent.ApproverPolicy{Approvers: []string{agent.GroupPrincipal("sre")}, Quorum: 2}
		}
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	approve := func(user, token, onPause string) *agent.RequestResult {
		t.Helper()
		run, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: user, Groups: []string{"sre"},
			TaskID: res.TaskID, RequestID: res.RequestID, Body: enginetest.Approve(),
			Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: token, OnPause: onPause}})
		if err != nil {
			t.Fatal(err)
		}
		return run.Execute(context.Background(), nil)
	}
	if out := approve("bob", "tok-bob", agent.OnPauseReturn); out.Status != agent.StatusPaused {
		t.Fatalf("bob: %+v", out)
	}
	wait(t, "bob's token answered with the pause", func() bool { return len(s.answers.Calls()) == 1 })
	approve("bob", "tok-bob-again", agent.OnPauseReturn)
	wait(t, "bob's second token answered", func() bool { return len(s.answers.Calls()) == 2 })
	env.Model.Add(agenttest.Say("deleted"))
	if out := approve("dave", "tok-dave", agent.OnPauseWait); out.Status != agent.StatusCompleted {
		t.Fatalf("dave: %+v", out)
	}
	wait(t, "dave's token answered", func() bool { return len(s.answers.Calls()) >= 3 })
	time.Sleep(200 * time.Millisecond)
	var got []string
	for _, c := range s.answers.Calls() {
		if !strings.HasPrefix(c, "heartbeat") {
			got = append(got, c)
		}
	}
	if diff := cmp.Diff([]string{"success tok-bob Paused", "success tok-bob-again Paused", "success tok-dave Completed"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}
