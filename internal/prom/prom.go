// Package prom exposes Hitch's metrics (docs/guide/observability.md, "Observability") in the Prometheus text
// format, for `hitch serve`'s /metrics: the same moments as the EMF lines of
// the Lambda functions, as counters and histograms labelled by agent (and
// status, action, tool or kind where EMF has that dimension).
package prom

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Metrics records into its own registry. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestSeconds  *prometheus.HistogramVec
	firstEvent      *prometheus.HistogramVec
	pauseToDecision *prometheus.HistogramVec
	approvals       *prometheus.CounterVec
	expiries        *prometheus.CounterVec
	toolCalls       *prometheus.CounterVec
	toolErrors      *prometheus.CounterVec
	modelCalls      *prometheus.CounterVec
	modelErrors     *prometheus.CounterVec
	modelTokens     *prometheus.CounterVec
	storeConflicts  *prometheus.CounterVec
	storeRetries    *prometheus.CounterVec
	deliveries      *prometheus.CounterVec
	deliveryFails   *prometheus.CounterVec
}

var _ agent.Metrics = (*Metrics)(nil)

// New makes the metrics and their registry (with the Go runtime's and the
// process's collectors).
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "hitch", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "hitch", Name: name, Help: help, Buckets: buckets}, []string{"agent"})
		reg.MustRegister(h)
		return h
	}
	waits := []float64{1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}
	return &Metrics{
		reg:             reg,
		requests:        counter("requests_total", "Request legs ended, by status.", "agent", "status"),
		requestSeconds:  hist("request_duration_seconds", "How long a request leg ran.", prometheus.DefBuckets),
		firstEvent:      hist("time_to_first_event_seconds", "From a leg's start to its first model output.", prometheus.DefBuckets),
		pauseToDecision: hist("pause_to_decision_seconds", "From a pause to its decision.", waits),
		approvals:       counter("approvals_total", "Decided calls, by action.", "agent", "action"),
		expiries:        counter("expiries_total", "Calls whose approval expired.", "agent"),
		toolCalls:       counter("tool_calls_total", "Tool calls, by tool.", "agent", "tool"),
		toolErrors:      counter("tool_errors_total", "Tool calls that ended in an error result, by tool.", "agent", "tool"),
		modelCalls:      counter("model_calls_total", "Model calls.", "agent"),
		modelErrors:     counter("model_errors_total", "Model calls that failed.", "agent"),
		modelTokens:     counter("model_tokens_total", "Model tokens, by direction: input (billed at the full price), cache_read, cache_write (input read from and written to the prompt cache), output.", "agent", "direction"),
		storeConflicts:  counter("store_conflicts_total", "Versioned writes that met a changed task.", "agent"),
		storeRetries:    counter("store_retries_total", "Writes tried again.", "agent"),
		deliveries:      counter("notifier_deliveries_total", "Notifications delivered or tried, by kind.", "agent", "kind"),
		deliveryFails:   counter("notifier_failures_total", "Notifications that failed, by kind.", "agent", "kind"),
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is where the metrics live (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestEnded implements agent.Metrics.
func (m *Metrics) RequestEnded(ag string, status agent.Status, d time.Duration) {
	m.requests.WithLabelValues(ag, string(status)).Inc()
	if d > 0 {
		m.requestSeconds.WithLabelValues(ag).Observe(d.Seconds())
	}
}

// FirstEvent implements agent.Metrics.
func (m *Metrics) FirstEvent(ag string, d time.Duration) {
	m.firstEvent.WithLabelValues(ag).Observe(d.Seconds())
}

// Decided implements agent.Metrics.
func (m *Metrics) Decided(ag string, actions []string, waited time.Duration) {
	m.pauseToDecision.WithLabelValues(ag).Observe(waited.Seconds())
	for _, a := range actions {
		m.approvals.WithLabelValues(ag, a).Inc()
	}
}

// Expired implements agent.Metrics.
func (m *Metrics) Expired(ag string, calls int) {
	m.expiries.WithLabelValues(ag).Add(float64(calls))
}

// ToolCalled implements agent.Metrics.
func (m *Metrics) ToolCalled(ag, tool string, failed bool, _ time.Duration) {
	m.toolCalls.WithLabelValues(ag, tool).Inc()
	if failed {
		m.toolErrors.WithLabelValues(ag, tool).Inc()
	}
}

// ModelCalled implements agent.Metrics.
func (m *Metrics) ModelCalled(ag string, u agent.Usage, failed bool, _ time.Duration) {
	m.modelCalls.WithLabelValues(ag).Inc()
	if failed {
		m.modelErrors.WithLabelValues(ag).Inc()
	}
	m.modelTokens.WithLabelValues(ag, "input").Add(float64(u.InputTokens))
	m.modelTokens.WithLabelValues(ag, "cache_read").Add(float64(u.CacheReadInputTokens))
	m.modelTokens.WithLabelValues(ag, "cache_write").Add(float64(u.CacheWriteInputTokens))
	m.modelTokens.WithLabelValues(ag, "output").Add(float64(u.OutputTokens))
}

// StoreConflict implements agent.Metrics.
func (m *Metrics) StoreConflict(ag string) { m.storeConflicts.WithLabelValues(ag).Inc() }

// StoreRetry implements agent.Metrics.
func (m *Metrics) StoreRetry(ag string) { m.storeRetries.WithLabelValues(ag).Inc() }

// Delivered implements agent.Metrics.
func (m *Metrics) Delivered(ag, kind string, failed bool, _ time.Duration) {
	m.deliveries.WithLabelValues(ag, kind).Inc()
	if failed {
		m.deliveryFails.WithLabelValues(ag, kind).Inc()
	}
}
