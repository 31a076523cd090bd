package agent

// The reaper: every request finishes without a client's help
// (docs/architecture.md, "The reaper"). A request whose process died is
// taken over by the system itself, and a paused round past its expiry is
// expired, so that waiters, webhooks, tokens and callbacks hear of it.
//
// The index (Store.ListDue) names the candidates; each META is read again
// before anything is done, and every action is an ordinary conditional
// claim, so a reaper racing a client (or another reaper) changes nothing
// twice: the first claim wins, the other finds nothing to do.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// MaxTakeovers is how many takeovers of a request in a row may die before
// it ends Failed lease_expired: nothing is retried forever.
const MaxTakeovers = 3

// Takeover names a request the reaper acts on: its leg died, or its paused
// round expired.
type Takeover struct {
	TaskID    string `json:"task_id"`
	RequestID string `json:"request_id"`
	// Expired: the round expired (else: the leg died).
	Expired bool `json:"expired,omitempty"`
}

// DueTakeovers reads the reaper's index and each candidate's META, and
// returns what is due: dead legs (the topmost of a chain only: a caller's
// takeover drives its dead children itself) and expired rounds.
func (e *Engine) DueTakeovers(ctx context.Context, limit int) ([]Takeover, error) {
	now := e.now()
	due, err := e.Store.ListDue(ctx, now.Add(-LeaseDuration), now, limit)
	if err != nil {
		return nil, err
	}
	var out []Takeover
	for _, d := range due {
		t, err := e.Store.GetTask(ctx, d.TaskID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		a := t.Active
		switch {
		case a == nil:
		case a.Status == StatusPaused && len(a.Awaits) == 0 && roundExpired(a, now):
			out = append(out, Takeover{TaskID: t.ID, RequestID: a.ID, Expired: true})
		case a.Status == StatusRunning && !now.Before(a.LeaseUntil):
			if e.callerRuns(ctx, a) {
				continue
			}
			out = append(out, Takeover{TaskID: t.ID, RequestID: a.ID})
		}
	}
	return out, nil
}

// callerRuns tells whether the request's caller is running: then its leg
// (or the takeover of its leg) drives this child, never the reaper beside it.
func (e *Engine) callerRuns(ctx context.Context, a *ActiveRequest) bool {
	if a.Parent == nil {
		return false
	}
	pt, err := e.Store.GetTask(ctx, a.Parent.TaskID)
	if err != nil {
		return false
	}
	pa := pt.Active
	return pa != nil && pa.ID == a.Parent.RequestID && pa.Status == StatusRunning
}

// StartTakeover acts on a request the reaper found (the resume function's
// {"op": "takeover"}): a dead leg is taken over — with its decision, its
// sub-agent calls re-attached, its started calls outcome_unknown — and the
// Run returned goes on; an expired round is expired (nil Run). Nothing to
// do (it moved on, or its caller runs) is nil, nil; ErrBusy: a live leg
// holds it. At MaxTakeovers dead takeovers the request ends Failed
// lease_expired, its open sub-agent calls canceled.
func (e *Engine) StartTakeover(ctx context.Context, taskID, rid string) (*Run, error) {
	run, err := again(false, func() (*Run, error) { return e.tryTakeover(ctx, taskID, rid) })
	if ce := (*ConflictError)(nil); errors.As(err, &ce) {
		return nil, ErrBusy // others keep moving it: they carry it on
	}
	return run, err
}

func (e *Engine) tryTakeover(ctx context.Context, taskID, rid string) (*Run, error) {
	t, items, ag, err := e.loadActive(ctx, taskID, rid)
	if t == nil || err != nil {
		return nil, err
	}
	a := t.Active
	now := e.now()
	switch {
	case a.Status == StatusPaused:
		if len(a.Awaits) > 0 || !roundExpired(a, now) {
			return nil, nil
		}
		_, err := e.applyExpiry(ctx, ag, t, items, now)
		return nil, err
	case a.Status != StatusRunning:
		return nil, nil
	case now.Before(a.LeaseUntil):
		return nil, ErrBusy
	case e.callerRuns(ctx, a):
		return nil, nil
	case a.CancelRequested:
		_, err := e.finaliseCanceled(ctx, ag, t, items, cancelInfo{by: a.CanceledBy, reason: a.CancelReason, at: a.CanceledAt})
		return nil, err
	case a.Takeovers >= MaxTakeovers:
		return nil, e.endLost(ctx, ag, t, items, now)
	}
	e.log().Warn("the reaper takes over a request whose lease expired", "task_id", t.ID, "request_id", a.ID,
		"lease_until", a.LeaseUntil, "takeovers", a.Takeovers)
	run, err := e.claimContinue(ctx, ag, t, items, nil, "")
	if err != nil {
		return nil, err
	}
	if len(e.openCalls(t, items)) == 0 {
		// Not a caller: the leg goes on as the kind it was.
		run.kind = a.Kind
		if run.decided != nil {
			run.kind = KindResume
		}
	}
	return run, nil
}

// endLost records a request whose takeovers kept dying Failed
// lease_expired, its dangling calls closed as a dead leg's are, and cancels
// its open sub-agent calls (a cascade), so nothing is left running below it.
func (e *Engine) endLost(ctx context.Context, ag *Agent, t *Task, items []Item, now time.Time) error {
	e.log().Error("a request's takeovers died; it ends Failed", "task_id", t.ID, "request_id", t.Active.ID, "takeovers", t.Active.Takeovers)
	next := e.nextOf(t)
	open := e.openCalls(t, items)
	extra, rec := e.recordLost(ctx, next, items, now,
		fmt.Sprintf("the request stopped without finishing %d times (its lease expired each time); it was recorded as failed", MaxTakeovers))
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = now
	if err := e.write(ctx, &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{rec}}); err != nil {
		return err
	}
	e.settled(ctx, ag.Name, next, []RequestRecord{rec})
	e.cancelCalls(ctx, t.Agent, open, cancelInfo{by: "system:reaper", reason: "its caller failed", at: now}, time.Now().Add(CancelWait))
	return nil
}

// wakeReaper asks the reaper, when one runs in this process, to look at a
// task now rather than at its next sweep (a message found its caller dead).
func (e *Engine) wakeReaper(taskID, rid string) {
	if e.Wake != nil {
		e.Wake(Takeover{TaskID: taskID, RequestID: rid})
	}
}

// Reaper sweeps the reaper's index in this process (hitch serve): every
// Every it takes over what is due, each takeover in a goroutine of its own.
// On AWS the notifier's schedule sweeps and hands each takeover to the
// resume function instead.
type Reaper struct {
	Engine *Engine
	// Every is the sweep period (DefaultReapEvery when 0).
	Every time.Duration
	Log   *slog.Logger

	mu     sync.Mutex
	busy   map[string]bool // tasks a takeover of this process works on
	wakeCh chan Takeover
	wg     sync.WaitGroup
}

// DefaultReapEvery is the sweep period under hitch serve.
const DefaultReapEvery = 5 * time.Second

// Run sweeps until ctx ends, then waits for the takeovers it started.
func (rp *Reaper) Run(ctx context.Context) {
	every := rp.Every
	if every <= 0 {
		every = DefaultReapEvery
	}
	wake := rp.wakes()
	defer rp.wg.Wait()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case tk := <-wake:
			rp.start(ctx, tk)
		case <-tick.C:
			rp.Sweep(ctx)
		}
	}
}

// Wake asks the reaper to take a request over now rather than at its next
// sweep (Engine.Wake: set it before the engine serves requests).
func (rp *Reaper) Wake(tk Takeover) {
	select {
	case rp.wakes() <- tk:
	default: // full: the sweep finds it
	}
}

func (rp *Reaper) wakes() chan Takeover {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.wakeCh == nil {
		rp.wakeCh = make(chan Takeover, 64)
	}
	return rp.wakeCh
}

// Sweep takes over what is due now; it returns how many it started.
func (rp *Reaper) Sweep(ctx context.Context) int {
	due, err := rp.Engine.DueTakeovers(ctx, 100)
	if err != nil {
		rp.log().Warn("the reaper's sweep failed", "err", err)
	}
	n := 0
	for _, tk := range due {
		if rp.start(ctx, tk) {
			n++
		}
	}
	return n
}

func (rp *Reaper) start(ctx context.Context, tk Takeover) bool {
	rp.mu.Lock()
	if rp.busy == nil {
		rp.busy = map[string]bool{}
	}
	if rp.busy[tk.TaskID] {
		rp.mu.Unlock()
		return false
	}
	rp.busy[tk.TaskID] = true
	rp.mu.Unlock()
	rp.wg.Add(1)
	go func() {
		defer rp.wg.Done()
		defer func() {
			rp.mu.Lock()
			delete(rp.busy, tk.TaskID)
			rp.mu.Unlock()
		}()
		wctx := context.WithoutCancel(ctx)
		run, err := rp.Engine.StartTakeover(wctx, tk.TaskID, tk.RequestID)
		if err != nil && !errors.Is(err, ErrBusy) {
			rp.log().Warn("a takeover failed", "task_id", tk.TaskID, "request_id", tk.RequestID, "err", err)
			return
		}
		if run != nil {
			res := run.Execute(wctx, Discard)
			rp.log().Info("a request was taken over", "task_id", tk.TaskID, "request_id", tk.RequestID, "status", res.Status)
		}
	}()
	return true
}

func (rp *Reaper) log() *slog.Logger {
	if rp.Log != nil {
		return rp.Log
	}
	return rp.Engine.log()
}
