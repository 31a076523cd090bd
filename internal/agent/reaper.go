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
	"slices"
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
	// Agent is the request's agent: a reaper passes by the agents its
	// deployment lacks (another deployment's, on one table).
	Agent string `json:"agent,omitempty"`
}

// DueTakeovers sweeps the whole reaper's index (SweepDue) and returns up to
// limit takeovers due (limit 0: all): dead legs (the topmost of a chain
// only: a caller's takeover drives its dead children itself) and expired
// rounds. However many entries it cannot act on come first, it reads on
// past them.
func (e *Engine) DueTakeovers(ctx context.Context, limit int) (_ []Takeover, err error) {
	defer wrap(&err, "due takeovers")
	var out []Takeover
	_, err = e.SweepDue(ctx, "", time.Time{}, func(tk Takeover) bool {
		if limit > 0 && len(out) == limit {
			return false
		}
		out = append(out, tk)
		return true
	})
	return out, err
}

// SweepPage is how many entries of the reaper's index a sweep lists at a
// time, and SweepBatch how many candidates' METAs it reads in one batch
// (Store.ReapStates; DynamoDB's BatchGetItem takes 100).
const (
	SweepPage  = 1000
	SweepBatch = 100
)

// SweepDue pages through the reaper's index (docs/architecture.md, "The
// reaper") from the position from ("" from the start), with no cap: it
// reads the candidates' METAs in batches (Store.ReapStates) and calls do,
// in index order, for each takeover due. An entry it cannot act on — a
// live lease, a child whose caller runs, an agent this deployment lacks
// (do passes it by: Takeover.Agent) — never hides the entries after it. It stops when the index
// ends (next ""), when until (if set) has passed at the end of a batch (it
// handles one batch at least), or
// when do answers false (do could not take that one); next is then the
// position of the last entry handled, from which the next sweep resumes.
// On a store error next is where it got to.
func (e *Engine) SweepDue(ctx context.Context, from string, until time.Time, do func(Takeover) bool) (next string, err error) {
	defer wrap(&err, "sweep the due index from %q", from)
	now := e.now()
	next = from
	handled := false // a sweep handles one batch at least, however short until
	for {
		page, err := e.Store.ListDue(ctx, now.Add(-LeaseDuration), now, next, SweepPage)
		if err != nil {
			return next, err
		}
		for batch := range slices.Chunk(page, SweepBatch) {
			if handled && !until.IsZero() && !time.Now().Before(until) {
				return next, nil
			}
			handled = true
			due, err := e.dueOf(ctx, batch, now)
			if err != nil {
				return next, err
			}
			for i, d := range batch {
				if tk, ok := due[i]; ok && !do(tk) {
					return next, nil
				}
				next = d.Pos
			}
		}
		if len(page) < SweepPage {
			return "", nil
		}
	}
}

// dueOf reads a batch of index entries' METAs and tells which are due, by
// their place in the batch.
func (e *Engine) dueOf(ctx context.Context, batch []DueTask, now time.Time) (map[int]Takeover, error) {
	ids := make([]string, len(batch))
	for i, d := range batch {
		ids[i] = d.TaskID
	}
	states, err := e.Store.ReapStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	due := map[int]Takeover{}
	var callers []string
	for i, d := range batch {
		st, ok := states[d.TaskID]
		if !ok || st.RequestID == "" {
			continue
		}
		switch {
		case st.Status == StatusPaused && !st.Expires.IsZero() && !now.Before(st.Expires):
			due[i] = Takeover{TaskID: st.TaskID, RequestID: st.RequestID, Agent: st.Agent, Expired: true}
		case st.Status == StatusRunning && !now.Before(st.LeaseUntil):
			due[i] = Takeover{TaskID: st.TaskID, RequestID: st.RequestID, Agent: st.Agent}
			if st.Caller != nil {
				callers = append(callers, st.Caller.TaskID)
			}
		}
	}
	if len(callers) == 0 {
		return due, nil
	}
	// A dead child whose caller runs is the caller's (or its takeover's)
	// to drive, never the reaper's.
	cs, err := e.Store.ReapStates(ctx, callers)
	if err != nil {
		return nil, err
	}
	for i, tk := range due {
		c := states[batch[i].TaskID].Caller
		if tk.Expired || c == nil {
			continue
		}
		if cst, ok := cs[c.TaskID]; ok && cst.RequestID == c.RequestID && cst.Status == StatusRunning {
			delete(due, i)
		}
	}
	return due, nil
}

// callerRuns tells whether the request's caller is running: then its leg
// (or the takeover of its leg) drives this child, never the reaper beside it.
func (e *Engine) callerRuns(ctx context.Context, a *ActiveRequest) (bool, error) {
	if a.Parent == nil {
		return false, nil
	}
	pt, err := e.Store.GetTask(ctx, a.Parent.TaskID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read caller %s: %w", a.Parent.TaskID, err)
	}
	pa := pt.Active
	return pa != nil && pa.ID == a.Parent.RequestID && pa.Status == StatusRunning, nil
}

// StartTakeover acts on a request the reaper found (the resume function's
// {"op": "takeover"}): a dead leg is taken over — with its decision, its
// sub-agent calls re-attached, its started calls outcome_unknown — and the
// Run returned goes on; an expired round is expired (nil Run), a paused
// request flagged for cancel canceled with its tree (nil Run). Nothing to
// do (it moved on, or its caller runs) is nil, nil; ErrBusy: a live leg
// holds it. At MaxTakeovers dead takeovers the request ends Failed
// lease_expired, its open sub-agent calls canceled.
func (e *Engine) StartTakeover(ctx context.Context, taskID, rid string) (_ *Run, err error) {
	defer wrap(&err, "take over request %s of task %s", rid, taskID)
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
	case a.Status == StatusPaused && a.CancelRequested:
		// Flagged and left paused (the cancel that flagged it died, or
		// waits on what runs below it): canceled with its tree.
		ci := a.CancelFlag.info()
		_, err := e.cancelTree(ctx, ag, t, items, ci, time.Now().Add(CancelWait))
		return nil, err
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
	}
	// A read of the caller that fails takes nothing over: the next sweep
	// tries again (never a takeover beside a caller that runs).
	if runs, err := e.callerRuns(ctx, a); err != nil || runs {
		return nil, err
	}
	switch {
	case a.CancelRequested:
		_, err := e.finaliseCanceled(ctx, ag, t, items, a.CancelFlag.info())
		return nil, err
	case a.takeoversDied():
		return nil, e.endLost(ctx, ag, t, items, now)
	}
	e.log().Warn("the reaper takes over a request whose lease expired", "task_id", t.ID, "request_id", a.ID,
		"lease_until", a.LeaseUntil, "takeovers", a.Takeovers)
	return e.claimTakeover(ctx, ag, t, items)
}

// claimTakeover claims the reaper's takeover of a dead leg (legTakeover):
// a caller's leg goes on as its continuation does, any other as the kind
// it was — the round it carried out, or the model's turn. The claim is the
// continuation's (claimContinue: its takeover cuts the dead leg's events
// and counts the takeover); only what the leg says it is differs.
func (e *Engine) claimTakeover(ctx context.Context, ag *Agent, t *Task, items []Item) (*Run, error) {
	run, err := e.claimContinue(ctx, ag, t, items, nil, "")
	if err != nil {
		return nil, err
	}
	if len(e.openCalls(t, items)) == 0 {
		// Not a caller: the leg goes on as the kind it was.
		run.kind = t.Active.Kind
		if run.decided != nil {
			run.kind = KindResume
		}
	}
	return run, nil
}

// endLost records a request whose takeovers kept dying Failed
// lease_expired, its dangling calls closed as a dead leg's are, its open
// sub-agent calls' children flagged for cancel in the same transaction and
// then canceled (a cascade), so nothing is left running below it.
func (e *Engine) endLost(ctx context.Context, ag *Agent, t *Task, items []Item, now time.Time) error {
	e.log().Error("a request's takeovers died; it ends Failed", "task_id", t.ID, "request_id", t.Active.ID, "takeovers", t.Active.Takeovers)
	next := e.nextOf(t)
	open := e.openCalls(t, items)
	extra, rec := e.recordLost(ctx, next, items, now,
		fmt.Sprintf("the request stopped without finishing %d times (its lease expired each time); it was recorded as failed", MaxTakeovers))
	next.RetainUntil = e.retainUntil()
	next.UpdatedAt = now
	w := &Write{Task: next, PrevVersion: t.Version, Items: extra, Requests: []RequestRecord{rec}}
	ci := cancelInfo{by: "system:reaper", reason: "its caller failed", at: now}
	// The children are flagged in the same transaction: a process that
	// dies before canceling them leaves none to be taken over and run on
	// below the failed request (the reaper finalises a flagged one).
	_, flags, err := e.orphansOf(ctx, []ended{{agent: ag.Name, w: w, open: open}}, ci)
	if err != nil {
		return err
	}
	w.With = flags
	if err := e.write(ctx, w); err != nil {
		return err
	}
	e.settled(ctx, ag.Name, next, []RequestRecord{rec})
	e.cancelCalls(ctx, t.Agent, open, ci, time.Now().Add(CancelWait))
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

	// MaxInFlight bounds the takeovers this process runs at once
	// (DefaultReapInFlight when 0): a sweep that meets the bound stops and
	// the next one resumes there.
	MaxInFlight int

	mu     sync.Mutex
	busy   map[string]bool // tasks a takeover of this process works on
	wakeCh chan Takeover
	wg     sync.WaitGroup
	pos    string // where the last sweep stopped ("": it finished)
}

// DefaultReapInFlight is how many takeovers a Reaper runs at once.
const DefaultReapInFlight = 256

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

// Sweep takes over what is due now, paging through the whole index
// (Engine.SweepDue) from where the last sweep stopped; a sweep that cannot
// finish within the period, or meets MaxInFlight, stops after the last
// entry it handled and the next resumes there. It returns how many
// takeovers it started.
func (rp *Reaper) Sweep(ctx context.Context) int {
	every := rp.Every
	if every <= 0 {
		every = DefaultReapEvery
	}
	rp.mu.Lock()
	from := rp.pos
	rp.mu.Unlock()
	n := 0
	next, err := rp.Engine.SweepDue(ctx, from, time.Now().Add(every), func(tk Takeover) bool {
		if _, ok := rp.Engine.Agents.Get(tk.Agent); !ok && tk.Agent != "" {
			// Another deployment's agent (one table, two deployments), or
			// one removed: its takeover would fail here. Passed by.
			return true
		}
		started, full := rp.tryStart(ctx, tk)
		if started {
			n++
		}
		return !full
	})
	if err != nil && ctx.Err() == nil {
		rp.log().Warn("the reaper's sweep failed; the next resumes where it stopped", "err", err)
	}
	rp.mu.Lock()
	rp.pos = next
	rp.mu.Unlock()
	return n
}

func (rp *Reaper) start(ctx context.Context, tk Takeover) bool {
	started, _ := rp.tryStart(ctx, tk)
	return started
}

// tryStart starts a takeover of tk unless this process works on its task
// already; full: MaxInFlight takeovers run, tk was not started.
func (rp *Reaper) tryStart(ctx context.Context, tk Takeover) (started, full bool) {
	limit := rp.MaxInFlight
	if limit <= 0 {
		limit = DefaultReapInFlight
	}
	rp.mu.Lock()
	if rp.busy == nil {
		rp.busy = map[string]bool{}
	}
	if rp.busy[tk.TaskID] {
		rp.mu.Unlock()
		return false, false
	}
	if len(rp.busy) >= limit {
		rp.mu.Unlock()
		return false, true
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
	return true, false
}

func (rp *Reaper) log() *slog.Logger {
	if rp.Log != nil {
		return rp.Log
	}
	return rp.Engine.log()
}
