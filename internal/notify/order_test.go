package notify_test

import (
	"context"
	"errors"
	"log/slog"
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
	"github.com/hitch-agents/hitch/internal/webhook"
)

// stores are the stores the Runner's ordering is checked on, each with
// the feed hitch serve would read (the memory store's queue, the table's
// stream on DynamoDB Local).
var stores = map[string]func(*testing.T) (agent.Store, <-chan agent.OutboxItem){
	"memory": func(*testing.T) (agent.Store, <-chan agent.OutboxItem) {
		s := memstore.New()
		return s, s.Feed()
	},
	"dynamodb": func(t *testing.T) (agent.Store, <-chan agent.OutboxItem) {
		s, feed := streamed(t, 20*time.Millisecond)
		time.Sleep(300 * time.Millisecond) // the stream's iterators are taken before the first write
		return s, feed
	},
}

// unswept is a store whose sweep finds nothing yet (the items are younger
// than the sweep's age): only the feed brings them.
type unswept struct{ agent.Store }

func (unswept) ListOutbox(context.Context, time.Time, int) ([]agent.OutboxItem, error) {
	return nil, nil
}

// ordering is an engine whose agent's webhook goes, through the real
// sender, to a receiver that holds the first attempt of a pause half a
// second unless another delivery of its request starts meanwhile; and a
// task token answerer.
type ordering struct {
	env     *enginetest.Env
	store   agent.Store
	rcv     *notifytest.Receiver
	answers *notifytest.Answers
}

func newOrdering(t *testing.T, store agent.Store) *ordering {
	t.Helper()
	o := &ordering{env: enginetest.New(t, store), store: store, rcv: notifytest.NewReceiver(t), answers: &notifytest.Answers{}}
	o.rcv.Hold, o.rcv.HoldEvent = 500*time.Millisecond, "paused"
	ag, _ := o.env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: o.rcv.URL, Events: agent.NotificationEvents, Secret: []byte("0123456789abcdef")}}
	return o
}

// run starts the dispatcher in process, fed by feed; a failed delivery is
// retried after backoff.
func (o *ordering) run(t *testing.T, feed <-chan agent.OutboxItem, backoff time.Duration) {
	t.Helper()
	d := &notify.Dispatcher{Engine: o.env.E, Webhooks: &webhook.Sender{}, Answerers: map[string]notify.Answerer{agent.WaiterTaskToken: o.answers},
		Now: o.env.Now, Log: slog.New(slog.DiscardHandler)}
	r := &notify.Runner{D: d, Feed: feed, Backoff: func(int) time.Duration { return backoff }, SweepEvery: time.Hour, SweepAge: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// pauseAndComplete runs a request to its pause, and approves it to its end
// on a clock moved by skew (another process's); nothing delivers meanwhile.
func (o *ordering) pauseAndComplete(t *testing.T, skew time.Duration) (res *agent.RequestResult, paused, completed agent.OutboxItem) {
	t.Helper()
	o.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ = o.env.Invoke(t, "", "do it")
	if res.Status != agent.StatusPaused {
		t.Fatalf("invoke: %+v", res)
	}
	o.env.Advance(skew)
	o.env.Model.Add(agenttest.Say("done"))
	if out, _, err := o.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	o.env.Advance(-skew)
	items, err := o.store.ListRequestOutbox(context.Background(), res.TaskID, res.RequestID)
	if err != nil || len(items) != 2 || items[0].Event != agent.EventRequestPaused || items[1].Event != agent.EventRequestCompleted {
		t.Fatalf("the request's outbox: %+v %v", items, err)
	}
	return res, items[0], items[1]
}

func (o *ordering) wantEmpty(t *testing.T, res *agent.RequestResult) {
	t.Helper()
	wait(t, "the request's outbox to empty", func() bool {
		left, err := o.store.ListRequestOutbox(context.Background(), res.TaskID, res.RequestID)
		return err == nil && len(left) == 0
	})
}

var inOrder = []string{"paused start", "paused 200", "completed start", "completed 200"}

// TestRunnerSweepsInCommitOrder: hitch serve restarts with a request's
// pause and completion undelivered, the completion committed by a process
// whose clock was 2 s behind (the sweep lists by creation time: the
// completion first). The receiver, slow on the pause, hears it accepted
// before the completion starts.
func TestRunnerSweepsInCommitOrder(t *testing.T) {
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			store, _ := newStore(t)
			o := newOrdering(t, store)
			res, _, _ := o.pauseAndComplete(t, -2*time.Second)
			o.run(t, make(chan agent.OutboxItem), 5*time.Millisecond)
			o.rcv.Wait(t, res.RequestID, 4)
			if diff := cmp.Diff(inOrder, o.rcv.Log(res.RequestID)); diff != "" {
				t.Errorf("the receiver heard (-want +got):\n%s", diff)
			}
			o.wantEmpty(t, res)
		})
	}
}

// TestRunnerFeedReversed: the feed brings a request's completion before its
// pause (a stream read across a shard split), with the pause refused once
// or not: the pause is accepted, on its retry if need be, before the
// completion starts.
func TestRunnerFeedReversed(t *testing.T) {
	for name, newStore := range stores {
		for _, refused := range []int{0, 1} {
			t.Run(name+"/refused="+string(rune('0'+refused)), func(t *testing.T) {
				store, _ := newStore(t)
				o := newOrdering(t, unswept{store})
				o.rcv.Refuse["paused"] = refused
				res, paused, completed := o.pauseAndComplete(t, 0)
				feed := make(chan agent.OutboxItem, 2)
				feed <- completed
				feed <- paused
				o.run(t, feed, 50*time.Millisecond)
				want := inOrder
				if refused > 0 {
					want = append([]string{"paused start", "paused 500"}, inOrder...)
				}
				o.rcv.Wait(t, res.RequestID, len(want))
				if diff := cmp.Diff(want, o.rcv.Log(res.RequestID)); diff != "" {
					t.Errorf("the receiver heard (-want +got):\n%s", diff)
				}
				o.wantEmpty(t, res)
			})
		}
	}
}

// TestRunnerRecipientsApart: order is per recipient. A webhook receiver
// that refuses the pause (its retry an hour away) holds back the
// request's later webhook, not its task token's answers: the waiter hears
// the pause's heartbeat, the resume's, then the result.
func TestRunnerRecipientsApart(t *testing.T) {
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			store, feed := newStore(t)
			o := newOrdering(t, store)
			o.rcv.Refuse["paused"] = 1 << 30
			o.run(t, feed, time.Hour)
			o.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
			run, err := o.env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}},
				Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-1", OnPause: agent.OnPauseWait}})
			if err != nil {
				t.Fatal(err)
			}
			res := run.Execute(context.Background(), nil)
			o.env.Model.Add(agenttest.Say("done"))
			if out, _, err := o.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("resume: %+v %v", out, err)
			}
			wait(t, "the token's answers", func() bool { return len(o.answers.Calls()) == 3 })
			if diff := cmp.Diff([]string{"heartbeat tok-1", "heartbeat tok-1", "success tok-1 Completed"}, o.answers.Calls()); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			o.rcv.Wait(t, res.RequestID, 2)
			time.Sleep(100 * time.Millisecond)
			if diff := cmp.Diff([]string{"paused start", "paused 500"}, o.rcv.Log(res.RequestID)); diff != "" {
				t.Errorf("the receiver heard (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeliverBehind: the dispatcher puts off a request's completion while
// its pause to the same webhook is undelivered (a *Behind, an ErrRetry,
// naming the pause), and delivers it once the pause is.
func TestDeliverBehind(t *testing.T) {
	o := newOrdering(t, memstore.New())
	o.rcv.HoldEvent = ""
	res, paused, completed := o.pauseAndComplete(t, 0)
	d := &notify.Dispatcher{Engine: o.env.E, Webhooks: &webhook.Sender{}, Now: o.env.Now, Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	err := d.Deliver(ctx, completed)
	var behind *notify.Behind
	if !errors.As(err, &behind) || !errors.Is(err, notify.ErrRetry) || behind.Earlier.SK() != paused.SK() {
		t.Fatalf("Deliver(completion) = %v, want a Behind the pause", err)
	}
	if got := o.rcv.Log(res.RequestID); len(got) != 0 {
		t.Fatalf("delivered: %v", got)
	}
	for _, it := range []agent.OutboxItem{paused, completed, completed} {
		if err := d.Deliver(ctx, it); err != nil {
			t.Fatalf("Deliver(%s): %v", it.Event, err)
		}
	}
	if diff := cmp.Diff(inOrder, o.rcv.Log(res.RequestID)); diff != "" {
		t.Errorf("the receiver heard (-want +got):\n%s", diff)
	}
}

// goneHeartbeats refuses heartbeats for good (the token timed out).
type goneHeartbeats struct{ notifytest.Answers }

func (g *goneHeartbeats) Heartbeat(ctx context.Context, token string) error {
	_ = g.Answers.Heartbeat(ctx, token)
	return notifytest.ErrGone
}

// TestRefusedForGoodHoldsNothingBack: a heartbeat the service refuses for
// good is dropped (its item deleted, like every final refusal), so the
// token's later items are not held behind it.
func TestRefusedForGoodHoldsNothingBack(t *testing.T) {
	store := memstore.New()
	o := newOrdering(t, store)
	answers := &goneHeartbeats{}
	d := &notify.Dispatcher{Engine: o.env.E, Answerers: map[string]notify.Answerer{agent.WaiterTaskToken: answers}, Now: o.env.Now,
		Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	o.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	run, err := o.env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "do it"}},
		Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "tok-1", OnPause: agent.OnPauseWait}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(ctx, nil)
	o.env.Model.Add(agenttest.Say("done"))
	if out, _, err := o.env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	all, err := store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	var token []agent.OutboxItem // the pause's heartbeat, the resume's, the answer
	for _, it := range all {
		if it.Kind == agent.OutboxTaskToken {
			token = append(token, it)
		}
	}
	if len(token) != 3 || token[2].Event != agent.EventRequestCompleted {
		t.Fatalf("the token's items: %+v", token)
	}
	if err := d.Deliver(ctx, token[2]); !errors.Is(err, notify.ErrRetry) {
		t.Fatalf("Deliver(answer) before the heartbeats = %v, want Behind", err)
	}
	for _, it := range token[:2] {
		if err := d.Deliver(ctx, it); err != nil {
			t.Fatalf("Deliver(heartbeat): %v", err)
		}
	}
	if err := d.Deliver(ctx, token[2]); err != nil {
		t.Errorf("Deliver(answer) after the heartbeats were refused for good = %v, want done", err)
	}
	if _, err := store.GetOutbox(ctx, res.TaskID, token[2].SK()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the answer's item is still there: %v", err)
	}
	if diff := cmp.Diff([]string{"heartbeat tok-1", "heartbeat tok-1", "success tok-1 Completed"}, answers.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// continuations records the continuations it is handed.
type continuations struct {
	mu  sync.Mutex
	got []string
}

func (c *continuations) Continue(_ context.Context, o agent.OutboxItem) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, o.SK())
	return notify.ErrKept
}

// TestContinuationsNotOrdered: a continuation is no notification (its
// recipient, the caller, reads its child's state as it is): it is handed
// on although an earlier continuation of the same child and the request's
// pause webhook are undelivered.
func TestContinuationsNotOrdered(t *testing.T) {
	store := memstore.New()
	o := newOrdering(t, store)
	cont := &continuations{}
	d := &notify.Dispatcher{Engine: o.env.E, Webhooks: &webhook.Sender{}, Continuer: cont, Now: o.env.Now, Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	o.env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := o.env.Invoke(t, "", "do it")
	cur, err := store.GetTask(ctx, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	item := func(eventID int64) agent.OutboxItem {
		return agent.OutboxItem{TaskID: res.TaskID, RequestID: res.RequestID, Epoch: 1, EventID: eventID, Agent: "acc", UserID: "alice",
			Kind: agent.OutboxContinue, Event: agent.EventContinue, Recipient: "ct-child", CreatedAt: o.env.Now()}
	}
	first, second := item(1), item(2)
	next := cur.Clone()
	next.Version, next.WriteID = cur.Version+1, "w-cont"
	if err := store.Write(ctx, &agent.Write{Task: next, PrevVersion: cur.Version, Outbox: []agent.OutboxItem{first, second}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Deliver(ctx, second); err != nil {
		t.Fatalf("Deliver(the later continuation) = %v", err)
	}
	if diff := cmp.Diff([]string{second.SK()}, cont.got); diff != "" {
		t.Errorf("continued (-want +got):\n%s", diff)
	}
	if notify.Ordered(first) || !notify.Ordered(agent.OutboxItem{Kind: agent.OutboxWebhook}) || !notify.Ordered(agent.OutboxItem{Kind: agent.OutboxCallback}) {
		t.Errorf("Ordered: a continuation is not ordered, webhooks and callbacks are")
	}
}

// TestRunnersApartInOrder: two hitch serve processes on one store, each
// fed one of a request's items: the one with the pause has it refused once
// and retries; the other, with the completion, holds it until the pause is
// accepted (its check of the store, not its queue, tells).
func TestRunnersApartInOrder(t *testing.T) {
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			store, _ := newStore(t)
			o := newOrdering(t, unswept{store})
			o.rcv.Refuse["paused"] = 1
			res, paused, completed := o.pauseAndComplete(t, 0)
			a, b := make(chan agent.OutboxItem, 1), make(chan agent.OutboxItem, 1)
			o.run(t, a, 300*time.Millisecond)
			o.run(t, b, 300*time.Millisecond)
			a <- paused
			b <- completed
			want := append([]string{"paused start", "paused 500"}, inOrder...)
			o.rcv.Wait(t, res.RequestID, len(want))
			if diff := cmp.Diff(want, o.rcv.Log(res.RequestID)); diff != "" {
				t.Errorf("the receiver heard (-want +got):\n%s", diff)
			}
			o.wantEmpty(t, res)
		})
	}
}
