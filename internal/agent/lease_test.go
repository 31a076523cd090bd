package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/eventlog"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// countingStore counts the calls a leg's watcher makes.
type countingStore struct {
	agent.Store
	renewals, reads atomic.Int64
}

func (s *countingStore) RenewLease(ctx context.Context, taskID, tok string, until, now time.Time) (*agent.Task, error) {
	s.renewals.Add(1)
	return s.Store.RenewLease(ctx, taskID, tok, until, now)
}

func (s *countingStore) GetTask(ctx context.Context, taskID string) (*agent.Task, error) {
	s.reads.Add(1)
	return s.Store.GetTask(ctx, taskID)
}

// fastPolls makes the watcher tick every few milliseconds of real time; the
// lease counts in the fixture's clock.
func fastPolls(t *testing.T) {
	old := agent.CancelPollInterval
	agent.CancelPollInterval = 2 * time.Millisecond
	t.Cleanup(func() { agent.CancelPollInterval = old })
}

// waitFor waits (real time) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A 60 s model call keeps its 15 s lease by 12 renewals, each standing in
// for a cancel poll, and the request commits on the renewed META.
func TestLeaseRenewedDuringLongModelCall(t *testing.T) {
	fastPolls(t)
	store := &countingStore{Store: memstore.New()}
	f := newFixture(t, store)
	f.model.Add(func(ctx context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		for s := 1; s <= 60; s++ {
			before := store.renewals.Load() + store.reads.Load()
			f.advance(time.Second)
			waitFor(t, "a watcher tick", func() bool { return store.renewals.Load()+store.reads.Load() > before })
		}
		return agenttest.Say("done")(ctx, nil, on)
	})
	res, _ := f.invoke(t, agent.InvokeInput{Items: text("take your time")})
	if res.Status != agent.StatusCompleted {
		t.Fatalf("the long call ended %s %+v", res.Status, res.Error)
	}
	if n := store.renewals.Load(); n != 12 {
		t.Errorf("%d renewals in a 60 s call, want 12 (one each 5 s without a write)", n)
	}
}

// A leg whose renewal fails (its lease ended: another invocation may hold
// the request) stops before its next tool call, commits nothing and logs no
// event more.
func TestLeaseLostStopsLeg(t *testing.T) {
	fastPolls(t)
	f := newFixture(t, nil)
	f.model.Add(func(ctx context.Context, _ *agent.ModelRequest, _ func(agent.Delta)) (*agent.ModelResponse, error) {
		// The process stalls past its lease (a GC pause, SIGSTOP…).
		f.advance(agent.LeaseDuration + 5*time.Second)
		<-ctx.Done() // the watcher's failed renewal stops the leg
		return agenttest.CallTools(agent.StopToolUse, agenttest.Use("t1", "echo", `{"text":"x"}`))(ctx, nil, nil)
	})
	run, err := f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: text("go")})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res := run.Execute(context.Background(), rec)
	if res.Status != agent.StatusFailed || res.Error.Code != agent.CodeRequestLost {
		t.Fatalf("a leg that lost its lease answered %s %+v", res.Status, res.Error)
	}
	if n := f.tool.count(); n != 0 {
		t.Errorf("the tool ran %d times after the lease was lost", n)
	}
	ctx := context.Background()
	meta, err := f.store.GetTask(ctx, run.TaskID())
	if err != nil || meta.Active == nil || meta.Active.Status != agent.StatusRunning || meta.Version != run.Task().Version {
		t.Fatalf("the lost leg wrote META: %+v, %v", meta, err)
	}
	if evs, _ := f.store.ListEvents(ctx, run.TaskID(), run.RequestID(), 0); len(evs) != 0 {
		t.Errorf("the lost leg logged %d events", len(evs))
	}
	// The next message records the dead leg Failed lease_expired and runs.
	f.model.Add(agenttest.Say("fresh"))
	next, _ := f.invoke(t, agent.InvokeInput{TaskID: run.TaskID(), Items: text("again")})
	if next.Status != agent.StatusCompleted {
		t.Fatalf("after the lost leg: %+v", next)
	}
	v, err := f.e.GetTask(ctx, "acc", "alice", run.TaskID(), agent.ViewOptions{})
	if err != nil || v.Requests[0].Error == nil || v.Requests[0].Error.Code != agent.CodeLeaseExpired {
		t.Errorf("the lost request's record: %+v, %v", v.Requests, err)
	}
}

// A claim's lease is short (LeaseDuration), whatever the leg's deadline: a
// process that died is taken over in seconds, not minutes.
func TestLeaseIsShort(t *testing.T) {
	f := newFixture(t, nil)
	run, err := f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: text("one")})
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Task().Active.LeaseUntil.Sub(f.e.Now()); got != agent.LeaseDuration {
		t.Errorf("lease of a new claim: %s, want %s", got, agent.LeaseDuration)
	}
	// The process dies here. Past the lease, the task takes messages again.
	f.advance(agent.LeaseDuration)
	f.model.Add(agenttest.Say("ok"))
	if res, _ := f.invoke(t, agent.InvokeInput{TaskID: run.TaskID(), Items: text("two")}); res.Status != agent.StatusCompleted {
		t.Fatalf("a message %s after the death: %+v", agent.LeaseDuration, res)
	}
}

// A leg that stalled past its lease writes none of its buffered events when
// it wakes, before its watcher has even renewed: the request may be another
// invocation's now, numbering its own events.
func TestStalledLegFlushesNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Add(func(ctx context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "before the stall"})
		f.advance(agent.LeaseDuration + 5*time.Second) // the process stalls
		time.Sleep(3 * eventlog.FlushInterval)         // the event log's timer fires meanwhile
		return agenttest.Say("after")(ctx, nil, on)
	})
	run, err := f.e.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: text("go")})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(context.Background(), &recorder{})
	if res.Error == nil || res.Error.Code != agent.CodeRequestLost {
		t.Errorf("the stalled leg answered %s %+v, want request_lost", res.Status, res.Error)
	}
	if evs, _ := f.store.ListEvents(context.Background(), run.TaskID(), run.RequestID(), 0); len(evs) != 0 {
		t.Errorf("the stalled leg logged %d events", len(evs))
	}
}
