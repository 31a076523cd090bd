package notify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Backoff is the wait before a delivery's attempt+1-th retry: exponential
// from 1 s with ±20 % jitter, at most 24 h (DESIGN §11).
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
// holds (items a dead process committed and never delivered). Deliveries of
// one request go in order, one at a time; a failed one is retried after
// Backoff, holding back only that request's later notifications.
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
	queues map[string][]agent.OutboxItem // by task and request
	known  map[string]bool               // queued or in delivery, by task and key
	wg     sync.WaitGroup
}

// Run delivers until ctx ends, then waits for deliveries under way.
func (r *Runner) Run(ctx context.Context) {
	r.mu.Lock()
	r.queues, r.known = map[string][]agent.OutboxItem{}, map[string]bool{}
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
	items, err := r.D.Engine.Store.ListOutbox(ctx, before, 1000)
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

func (r *Runner) enqueue(ctx context.Context, o agent.OutboxItem) {
	id := o.TaskID + "/" + o.SK()
	q := o.TaskID + "/" + o.RequestID
	if o.Event == agent.EventPoll {
		// A poll of remote agents waits as long as they do: it holds back
		// no notification of the request.
		q += "/poll"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known[id] {
		return
	}
	r.known[id] = true
	r.queues[q] = append(r.queues[q], o)
	if len(r.queues[q]) == 1 {
		r.wg.Add(1)
		go r.drain(ctx, q)
	}
}

// drain delivers a request's queue in order.
func (r *Runner) drain(ctx context.Context, q string) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		o := r.queues[q][0]
		r.mu.Unlock()
		r.deliver(ctx, o)
		r.mu.Lock()
		delete(r.known, o.TaskID+"/"+o.SK())
		r.queues[q] = r.queues[q][1:]
		if len(r.queues[q]) == 0 || ctx.Err() != nil {
			delete(r.queues, q)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

func (r *Runner) deliver(ctx context.Context, o agent.OutboxItem) {
	backoff := r.Backoff
	if backoff == nil {
		backoff = Backoff
	}
	for attempt := 0; ; attempt++ {
		err := r.D.Deliver(ctx, o)
		if err == nil || !errors.Is(err, ErrRetry) {
			return
		}
		var wait time.Duration
		if ra := (*RetryAfter)(nil); errors.As(err, &ra) {
			// A poll that found nothing new: not a failure, the wait is
			// the poll's and does not grow.
			wait = ra.After
			attempt--
		} else {
			wait = backoff(attempt)
			if o.Event == agent.EventPoll {
				// A poll of a caller a leg holds: its lease ends within
				// 15 s; a leg that died is taken over soon after.
				wait = min(wait, agent.LeaseDuration/3)
			}
			level := slog.LevelInfo
			if o.Event == agent.EventPoll {
				level = slog.LevelDebug
			}
			r.D.log().Log(ctx, level, "a delivery failed; retrying", "task_id", o.TaskID, "request_id", o.RequestID, "kind", o.Kind,
				"event", o.Event, "delivery_id", o.DeliveryID(), "attempt", attempt+1, "in", wait, "err", err)
		}
		select {
		case <-ctx.Done():
			return // the item stays: the next start's sweep delivers it
		case <-time.After(wait):
		}
	}
}
