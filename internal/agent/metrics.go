package agent

import "time"

// Metrics receives the moments of a request that operations watch
// (docs/guide/observability.md, "Observability"). The engine calls it once per request leg, model call, tool call,
// decision, expiry and store conflict — never per streamed delta. Adapters
// (emf, prom) turn the calls into metrics; they must be cheap and safe for
// concurrent use. A nil Engine.Metrics is NopMetrics.
type Metrics interface {
	// RequestEnded: a request leg ended with status (Completed, Paused,
	// Failed, Canceled), after d. A request settled outside a leg (an
	// expired approval, a lost lease) ends with d = 0.
	RequestEnded(agent string, status Status, d time.Duration)
	// FirstEvent: the leg's first model output (a delta or a tool call)
	// came d after the leg started.
	FirstEvent(agent string, d time.Duration)
	// Decided: a paused round was decided, waited after the pause. actions
	// holds each call's action (approve, reject, edit).
	Decided(agent string, actions []string, waited time.Duration)
	// Expired: a paused round's approval expired with calls pending.
	Expired(agent string, calls int)
	// ToolCalled: a tool ran for d; failed when its result is an error.
	ToolCalled(agent, tool string, failed bool, d time.Duration)
	// ModelCalled: a model call took d and used u; failed when it errored.
	ModelCalled(agent string, u Usage, failed bool, d time.Duration)
	// StoreConflict: a versioned write met a changed META.
	StoreConflict(agent string)
	// StoreRetry: a write was tried again (rebased on a META whose claim
	// was still ours, or checked after an ambiguous error).
	StoreRetry(agent string)
	// Delivered: a notification (webhook, Step Functions callback, …) of
	// kind was delivered, or failed, after d.
	Delivered(agent, kind string, failed bool, d time.Duration)
}

// NopMetrics records nothing.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) RequestEnded(string, Status, time.Duration)     {}
func (NopMetrics) FirstEvent(string, time.Duration)               {}
func (NopMetrics) Decided(string, []string, time.Duration)        {}
func (NopMetrics) Expired(string, int)                            {}
func (NopMetrics) ToolCalled(string, string, bool, time.Duration) {}
func (NopMetrics) ModelCalled(string, Usage, bool, time.Duration) {}
func (NopMetrics) StoreConflict(string)                           {}
func (NopMetrics) StoreRetry(string)                              {}
func (NopMetrics) Delivered(string, string, bool, time.Duration)  {}

func (e *Engine) metrics() Metrics {
	if e.Metrics != nil {
		return e.Metrics
	}
	return NopMetrics{}
}

// observeSettled counts requests ended by a write outside a leg: expired
// approvals and lost leases.
func (e *Engine) observeSettled(agentName string, recs []RequestRecord) {
	m := e.metrics()
	for _, r := range recs {
		m.RequestEnded(agentName, r.Status, 0)
		if r.Error != nil && IsExpiry(r.Error.Code) {
			m.Expired(agentName, r.pendingCalls())
		}
	}
}

// pendingCalls is how many calls an expired round left undecided.
func (r RequestRecord) pendingCalls() int {
	if n := len(r.Decisions); n > 0 && r.Decisions[n-1].Approver == ApproverExpiry {
		return len(r.Decisions[n-1].Calls)
	}
	return 0
}

// observeDecision counts a round's decision: each call's action, and the
// time since the pause (the paused META's last update).
func (e *Engine) observeDecision(agentName string, d *Decision, waited time.Duration) {
	actions := make([]string, len(d.Calls))
	for i, c := range d.Calls {
		actions[i] = c.Action
	}
	e.metrics().Decided(agentName, actions, max(waited, 0))
}
