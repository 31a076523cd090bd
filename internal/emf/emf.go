// Package emf writes Hitch's metrics as CloudWatch Embedded Metric Format
// log lines (docs/guide/observability.md, "Observability"): one JSON line per moment on the function's output,
// which CloudWatch Logs turns into metrics — no API call per metric.
//
// Every line is in namespace Hitch (or the configured one) with the
// dimensions agent and function, plus one more where a metric is broken down
// (status, action, tool). A line is built by appending to a pooled buffer;
// nothing is marshalled by reflection.
package emf

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Metric names: the dashboard and the alarms of template.yaml use them
// (internal/deploy binds the two).
const (
	Requests          = "Requests"
	RequestDuration   = "RequestDuration"
	TimeToFirstEvent  = "TimeToFirstEvent"
	PauseToDecision   = "PauseToDecision"
	Approvals         = "Approvals"
	Expiries          = "Expiries"
	ToolCalls         = "ToolCalls"
	ToolErrors        = "ToolErrors"
	ToolDuration      = "ToolDuration"
	ModelCalls        = "ModelCalls"
	ModelErrors       = "ModelErrors"
	ModelInputTokens  = "ModelInputTokens"
	ModelOutputTokens = "ModelOutputTokens"
	// ModelCacheReadTokens and ModelCacheWriteTokens are the input tokens
	// read from and written to the prompt cache; ModelInputTokens are the
	// others, billed at the full price.
	ModelCacheReadTokens  = "ModelCacheReadTokens"
	ModelCacheWriteTokens = "ModelCacheWriteTokens"
	ModelLatency          = "ModelLatency"
	StoreConflicts        = "StoreConflicts"
	StoreRetries          = "StoreRetries"
	NotifierDeliveries    = "NotifierDeliveries"
	NotifierFailures      = "NotifierFailures"
	NotifierDuration      = "NotifierDuration"
)

// Names lists every metric the package emits.
var Names = []string{Requests, RequestDuration, TimeToFirstEvent, PauseToDecision, Approvals, Expiries,
	ToolCalls, ToolErrors, ToolDuration, ModelCalls, ModelErrors, ModelInputTokens, ModelOutputTokens,
	ModelCacheReadTokens, ModelCacheWriteTokens, ModelLatency, StoreConflicts, StoreRetries, NotifierDeliveries, NotifierFailures, NotifierDuration}

// Dimensions is each metric's dimension set, as the lines declare it.
var Dimensions = map[string][]string{}

func init() {
	for _, m := range []struct {
		extra string
		names []string
	}{
		{"status", []string{Requests, RequestDuration}},
		{"", []string{TimeToFirstEvent, PauseToDecision, Expiries, ModelCalls, ModelErrors, ModelInputTokens,
			ModelOutputTokens, ModelCacheReadTokens, ModelCacheWriteTokens, ModelLatency, StoreConflicts, StoreRetries}},
		{"action", []string{Approvals}},
		{"tool", []string{ToolCalls, ToolErrors, ToolDuration}},
		{"kind", []string{NotifierDeliveries, NotifierFailures, NotifierDuration}},
	} {
		for _, n := range m.names {
			Dimensions[n] = []string{"agent", "function"}
			if m.extra != "" {
				Dimensions[n] = append(Dimensions[n], m.extra)
			}
		}
	}
}

// Units (the CloudWatch names).
const (
	unitCount = "Count"
	unitMs    = "Milliseconds"
)

// DefaultNamespace is the CloudWatch namespace of Hitch's metrics.
const DefaultNamespace = "Hitch"

// Writer emits EMF lines. Safe for concurrent use.
type Writer struct {
	out       io.Writer
	namespace string
	function  string
	now       func() time.Time
	mu        sync.Mutex
	buf       []byte
}

var _ agent.Metrics = (*Writer)(nil)

// New returns a Writer of lines to out, in namespace ("" is Hitch), with
// the function dimension set to function.
func New(out io.Writer, namespace, function string) *Writer {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return &Writer{out: out, namespace: namespace, function: function, now: time.Now}
}

// value is one metric of a line.
type value struct {
	name, unit string
	v          float64
}

// line writes one EMF line: the metrics vs under dimensions agent, function
// and, when extraKey is set, extraKey=extraVal.
func (w *Writer) line(agentName, extraKey, extraVal string, vs ...value) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf[:0]
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, w.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, w.namespace)
	b = append(b, `,"Dimensions":[["agent","function"`...)
	if extraKey != "" {
		b = append(b, ',')
		b = appendString(b, extraKey)
	}
	b = append(b, `]],"Metrics":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, v.name)
		b = append(b, `,"Unit":`...)
		b = appendString(b, v.unit)
		b = append(b, '}')
	}
	b = append(b, `]}]},"agent":`...)
	b = appendString(b, agentName)
	b = append(b, `,"function":`...)
	b = appendString(b, w.function)
	if extraKey != "" {
		b = append(b, ',')
		b = appendString(b, extraKey)
		b = append(b, ':')
		b = appendString(b, extraVal)
	}
	for _, v := range vs {
		b = append(b, ',')
		b = appendString(b, v.name)
		b = append(b, ':')
		b = strconv.AppendFloat(b, v.v, 'f', -1, 64)
	}
	b = append(b, '}', '\n')
	w.buf = b
	_, _ = w.out.Write(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// RequestEnded implements agent.Metrics.
func (w *Writer) RequestEnded(ag string, status agent.Status, d time.Duration) {
	w.line(ag, "status", string(status), value{Requests, unitCount, 1}, value{RequestDuration, unitMs, ms(d)})
}

// FirstEvent implements agent.Metrics.
func (w *Writer) FirstEvent(ag string, d time.Duration) {
	w.line(ag, "", "", value{TimeToFirstEvent, unitMs, ms(d)})
}

// Decided implements agent.Metrics.
func (w *Writer) Decided(ag string, actions []string, waited time.Duration) {
	w.line(ag, "", "", value{PauseToDecision, unitMs, ms(waited)})
	for _, a := range actions {
		w.line(ag, "action", a, value{Approvals, unitCount, 1})
	}
}

// Expired implements agent.Metrics.
func (w *Writer) Expired(ag string, calls int) {
	w.line(ag, "", "", value{Expiries, unitCount, float64(calls)})
}

// ToolCalled implements agent.Metrics.
func (w *Writer) ToolCalled(ag, tool string, failed bool, d time.Duration) {
	w.line(ag, "tool", tool, value{ToolCalls, unitCount, 1}, value{ToolErrors, unitCount, bit(failed)},
		value{ToolDuration, unitMs, ms(d)})
}

// ModelCalled implements agent.Metrics.
func (w *Writer) ModelCalled(ag string, u agent.Usage, failed bool, d time.Duration) {
	w.line(ag, "", "", value{ModelCalls, unitCount, 1}, value{ModelErrors, unitCount, bit(failed)},
		value{ModelInputTokens, unitCount, float64(u.InputTokens)},
		value{ModelOutputTokens, unitCount, float64(u.OutputTokens)},
		value{ModelCacheReadTokens, unitCount, float64(u.CacheReadInputTokens)},
		value{ModelCacheWriteTokens, unitCount, float64(u.CacheWriteInputTokens)}, value{ModelLatency, unitMs, ms(d)})
}

// StoreConflict implements agent.Metrics.
func (w *Writer) StoreConflict(ag string) {
	w.line(ag, "", "", value{StoreConflicts, unitCount, 1})
}

// StoreRetry implements agent.Metrics.
func (w *Writer) StoreRetry(ag string) {
	w.line(ag, "", "", value{StoreRetries, unitCount, 1})
}

// Delivered implements agent.Metrics.
func (w *Writer) Delivered(ag, kind string, failed bool, d time.Duration) {
	w.line(ag, "kind", kind, value{NotifierDeliveries, unitCount, 1}, value{NotifierFailures, unitCount, bit(failed)},
		value{NotifierDuration, unitMs, ms(d)})
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
