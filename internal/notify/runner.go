package notify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Backoff is the wait before a delivery's attempt+1-th retry: exponential
// from 1 s with ±20 % jitter, at most 24 h (docs/architecture.md).
func Backoff(attempt int) time.Duration {
	d := time.Second
	for i := 0; i < attempt && d < 24*time.Hour; i++ {
		d *= 2
	}
	d = min(d, 24*time.Hour)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Runner runs the dispatcher in process (`hitch serve`): it delivers what
// Feed brings, and at start and every SweepEvery whatever the store still
// holds (items a dead process committed and never delivered). Deliveries
// to one recipient of one request go one at a time, in commit order,
// however the feed and the sweep bring them (the sweep lists by creation
// time, which another process's clock may skew); the dispatcher's check
// keeps that order across processes and restarts too. A failed one is
// retried after Backoff, holding back only that recipient's later
// notifications of the request.
type Runner struct {
	D    *Dispatcher
	Feed <-chan agent.OutboxItem
	// SweepEvery is how often the store is swept (default 30 s); an item
	// is swept once it is SweepAge old (default 10 s), so that the feed
	// delivers fresh ones.
	SweepEvery, SweepAge time.Duration
	// Backoff overrides the package's Backoff (tests).
	Backoff func(attempt int) time.Duration

	mu     sync.Mutex
	queues map[string]*queue // by task, request and recipient
	known  map[string]bool   // queued or in delivery, by task and key
	wg     sync.WaitGroup
}

// queue is one recipient's items of one request, in commit order; wake
// tells its drain that an item came in at the head.
type queue struct {
	items []agent.OutboxItem
	wake  chan struct{}
}

// Run delivers until ctx ends, then waits for deliveries under way.
func (r *Runner) Run(ctx context.Context) {
	r.mu.Lock()
	r.queues, r.known = map[string]*queue{}, map[string]bool{}
	r.mu.Unlock()
	every, age := r.SweepEvery, r.SweepAge
	if every <= 0 {
		every = 30 * time.Second
	}
	if age <= 0 {
		age = 10 * time.Second
	}
	r.sweep(ctx, r.D.now().Add(time.Second))
	tick := time.NewTicker(every)
	defer tick.Stop()
	defer r.wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case o, ok := <-r.Feed:
			if !ok {
				r.Feed = nil
				continue
			}
			r.enqueue(ctx, o)
		case <-tick.C:
			r.sweep(ctx, r.D.now().Add(-age))
		}
	}
}

func (r *Runner) sweep(ctx context.Context, before time.Time) {
	items, err := r.D.Engine.Store.ListOutbox(ctx, before, 0)
	if err != nil {
		if ctx.Err() == nil {
			r.D.log().Warn("sweeping the outbox failed", "err", err)
		}
		return
	}
	for _, o := range items {
		r.enqueue(ctx, o)
	}
}

// enqueue puts o in its recipient's queue, in commit order. Each recipient
// has its queue: a poll of remote agents waits as long as they do and a
// dead webhook holds back only its own later notifications.
func (r *Runner) enqueue(ctx context.Context, o agent.OutboxItem) {
	id := o.TaskID + "/" + o.SK()
	key := o.TaskID + "/" + o.RequestID + "/" + o.Recipient
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known[id] {
		return
	}
	r.known[id] = true
	q := r.queues[key]
	if q == nil {
		q = &queue{wake: make(chan struct{}, 1)}
		r.queues[key] = q
		r.wg.Add(1)
		go r.drain(ctx, key, q)
	}
	at, _ := slices.BinarySearchFunc(q.items, o, agent.CompareOutbox)
	q.items = slices.Insert(q.items, at, o)
	if at == 0 && len(q.items) > 1 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// drain delivers a queue's head until the queue is empty: the next item
// only once the one before it is done with.
func (r *Runner) drain(ctx context.Context, key string, q *queue) {
	defer r.wg.Done()
	attempts, waits := map[string]int{}, map[string]int{}
	for {
		r.mu.Lock()
		if len(q.items) == 0 || ctx.Err() != nil {
			delete(r.queues, key)
			r.mu.Unlock()
			return
		}
		o := q.items[0]
		r.mu.Unlock()
		select {
		case <-q.wake: // this is the head it told of
		default:
		}
		sk := o.SK()
		next, done := r.try(ctx, o, attempts[sk], waits[sk])
		if done {
			r.mu.Lock()
			q.items = slices.DeleteFunc(q.items, func(x agent.OutboxItem) bool { return x.SK() == sk })
			delete(r.known, o.TaskID+"/"+sk)
			r.mu.Unlock()
			delete(attempts, sk)
			delete(waits, sk)
			continue
		}
		switch {
		case next.behind:
			waits[sk]++
		case !next.poll:
			attempts[sk]++
		}
		select {
		case <-ctx.Done(): // the item stays: the next start's sweep delivers it
		case <-q.wake: // an earlier item came in: it goes first
		case <-time.After(next.d):
		}
	}
}

// retryIn is when a delivery is tried again, and why: no failure when it
// is behind an earlier one or a poll that found nothing new.
type retryIn struct {
	d            time.Duration
	behind, poll bool
}

// try delivers o once, its attempt-th attempt after waits times Behind;
// done: o is done with, else when to try again.
func (r *Runner) try(ctx context.Context, o agent.OutboxItem, attempt, waits int) (retryIn, bool) {
	err := r.D.Deliver(ctx, o)
	if err == nil || !errors.Is(err, ErrRetry) {
		return retryIn{}, true
	}
	if b := (*Behind)(nil); errors.As(err, &b) {
		wait := WaitBehind(waits)
		r.D.log().Debug("a delivery waits for an earlier one", "task_id", o.TaskID, "request_id", o.RequestID, "kind", o.Kind,
			"event", o.Event, "delivery_id", o.DeliveryID(), "in", wait, "err", err)
		return retryIn{d: wait, behind: true}, false
	}
	if ra := (*RetryAfter)(nil); errors.As(err, &ra) {
		// A poll that found nothing new: not a failure, the wait is the
		// poll's and does not grow.
		return retryIn{d: ra.After, poll: true}, false
	}
	backoff := r.Backoff
	if backoff == nil {
		backoff = Backoff
	}
	wait := backoff(attempt)
	if o.Event == agent.EventPoll {
		// A poll of a caller a leg holds: its lease ends within 15 s; a
		// leg that died is taken over soon after.
		wait = min(wait, agent.LeaseDuration/3)
	}
	r.D.log().Log(ctx, retryLevel(o, err), "a delivery failed; retrying", "task_id", o.TaskID, "request_id", o.RequestID, "kind", o.Kind,
		"event", o.Event, "delivery_id", o.DeliveryID(), "attempt", attempt+1, "in", wait, "err", err)
	return retryIn{d: wait}, false
}

// retryLevel is the level a delivery tried again is logged at: debug for
// a poll and for a continuation of a caller whose leg still runs (the
// usual case: the leg hears of its child itself), info for a failure.
func retryLevel(o agent.OutboxItem, err error) slog.Level {
	if o.Event == agent.EventPoll || errors.Is(err, agent.ErrBusy) {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
