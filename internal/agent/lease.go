package agent

import (
	"context"
	"errors"
	"time"
)

// errLeaseLost is the cause of a leg's context when its lease could not be
// kept: another invocation may hold the request now, so the leg starts
// nothing more, commits nothing and logs no event (docs/architecture.md).
var errLeaseLost = errors.New("the request's lease was lost")

// leaseGrace is how long before its end the holder stops trusting its lease
// (the clocks of two processes differ).
const leaseGrace = time.Second

// renewDue tells whether the leg has written nothing for RenewAfter.
func (r *Run) renewDue(now time.Time) bool {
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	return now.Sub(r.leaseSent) >= RenewAfter
}

// leaseEnds is when the holder's lease ends by its own count: the last
// renewal or write sent, plus the lease, less the grace.
func (r *Run) leaseEnds() time.Time {
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	return r.leaseSent.Add(LeaseDuration - leaseGrace)
}

// renew extends the lease; it returns META as renewed (its cancel flag
// stands in for a poll). A *ConflictError means the claim is no longer ours
// or its lease ended.
func (r *Run) renew(ctx context.Context) (*Task, error) {
	r.leaseMu.Lock()
	defer r.leaseMu.Unlock()
	return r.renewLocked(ctx)
}

// renewLocked is renew with leaseMu held.
func (r *Run) renewLocked(ctx context.Context) (*Task, error) {
	if r.lost.Load() {
		return nil, errLeaseLost
	}
	a := r.task.Active
	if a == nil || a.ClaimToken == "" {
		return nil, nil // paused or committed: nothing holds a lease
	}
	sent := r.e.now()
	meta, err := r.e.Store.RenewLease(ctx, r.taskID, a.ClaimToken, sent.Add(LeaseDuration), sent)
	if err != nil {
		return nil, err
	}
	r.leaseSent, r.renewed = sent, meta.Version
	if ma := meta.Active; ma != nil && ma.ID == a.ID {
		// The leg's next write puts its own META over this version:
		// waiters bound since its last write stay bound (bindWaiter).
		r.boundWaiters = unionWaiters(r.boundWaiters, ma.Waiters)
	}
	return meta, nil
}

// keepLease is one tick of the leg's watcher: a renewal when one is due,
// else a cancel poll. It returns the META read, if any, and whether the lease
// is lost.
func (r *Run) keepLease(ctx context.Context) (*Task, bool) {
	now := r.e.now()
	if !r.renewDue(now) {
		meta, err := r.e.Store.GetTask(ctx, r.taskID)
		if err != nil {
			return nil, false
		}
		return meta, false
	}
	meta, err := r.renew(ctx)
	var ce *ConflictError
	switch {
	case errors.As(err, &ce), errors.Is(err, ErrNotFound):
		r.e.log().Warn("the request's lease was lost; the leg stops", "task_id", r.taskID, "request_id", r.reqID)
		return nil, true
	case err != nil:
		// The renewal did not land: try again next tick, while the lease
		// still holds by our count.
		r.e.log().Warn("renewing the lease failed", "task_id", r.taskID, "request_id", r.reqID, "err", err)
		return nil, !r.e.now().Before(r.leaseEnds())
	}
	return meta, false
}

// loseLease stops the leg: it writes, runs and logs nothing more.
func (r *Run) loseLease() {
	r.lost.Store(true)
	if r.elog != nil {
		r.elog.Abandon()
	}
	if r.stopLeg != nil {
		r.stopLeg(errLeaseLost)
	}
}

// ensureLease tells whether the leg may start something (a model call, a
// tool): its lease holds by its own count, or a renewal lands now. A process
// that stalled past its lease (a pause, SIGSTOP) thus finds it lost before it
// starts anything, whatever its watcher has noticed.
func (r *Run) ensureLease(ctx context.Context) bool {
	if r.lost.Load() {
		return false
	}
	if r.e.now().Before(r.leaseEnds()) {
		return true
	}
	if _, err := r.renew(ctx); err != nil {
		r.e.log().Warn("the request's lease ended before the leg could go on; it stops", "task_id", r.taskID, "request_id", r.reqID, "err", err)
		r.loseLease()
		return false
	}
	return true
}

// abandon ends a leg whose lease was lost: nothing is committed and no event
// logged; its client is told the request was lost (it reconnects to the
// events, or retries, and sees the outcome of whoever took it over).
func (r *Run) abandon() *RequestResult {
	if r.elog != nil {
		r.elog.Abandon()
	}
	res := &RequestResult{SessionID: r.task.SessionID, TaskID: r.taskID, RequestID: r.reqID, Status: StatusFailed,
		Error: &ErrorInfo{Code: CodeRequestLost, Message: "this invocation lost the request's lease and stopped; follow the request's events or retry"},
		Usage: r.task.Active.Usage, Source: r.agent.Source()}
	r.emit(terminalEvent(res))
	return res
}
