package opentelemetry

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/hitch-agents/hitch/internal/agent"
)

// LogHandler adds the trace and the request's ids to every record logged
// with a context that carries them. XRay adds xray_trace_id too (set it in
// Lambda, where X-Ray is the trace view).
type LogHandler struct {
	Inner slog.Handler
	XRay  bool
}

// NewLogHandler wraps inner.
func NewLogHandler(inner slog.Handler, xray bool) *LogHandler {
	return &LogHandler{Inner: inner, XRay: xray}
}

// Enabled implements slog.Handler.
func (h *LogHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.Inner.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.Inner.Handle(ctx, r)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tid := sc.TraceID().String()
		r.AddAttrs(slog.String("trace_id", tid), slog.String("span_id", sc.SpanID().String()))
		if h.XRay {
			r.AddAttrs(slog.String("xray_trace_id", XRayID(sc.TraceID())))
		}
	}
	if ids, ok := agent.LogIDsFrom(ctx); ok {
		has := map[string]bool{}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "session_id", "task_id", "request_id":
				has[a.Key] = true
			}
			return true
		})
		for _, kv := range [...][2]string{{"session_id", ids.SessionID}, {"task_id", ids.TaskID}, {"request_id", ids.RequestID}} {
			if kv[1] != "" && !has[kv[0]] {
				r.AddAttrs(slog.String(kv[0], kv[1]))
			}
		}
	}
	return h.Inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *LogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &LogHandler{Inner: h.Inner.WithAttrs(as), XRay: h.XRay}
}

// WithGroup implements slog.Handler.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{Inner: h.Inner.WithGroup(name), XRay: h.XRay}
}

// XRayID is the trace id in X-Ray's form: 1-<8 hex digits>-<24 hex digits>
// (X-Ray's first 8 digits are the epoch seconds; OpenTelemetry's AWS X-Ray
// id generator makes them so, and any W3C id maps the same way).
func XRayID(id trace.TraceID) string {
	s := id.String()
	return "1-" + s[:8] + "-" + s[8:]
}

// WithXRay makes the X-Ray trace header of a Lambda invocation
// (Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1)
// the remote parent in ctx, so that spans and log lines of the invocation
// carry X-Ray's trace id. A header it cannot read leaves ctx as it is.
func WithXRay(ctx context.Context, header string) context.Context {
	var root, parent string
	sampled := false
	for _, part := range strings.Split(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	if len(root) != 35 || !strings.HasPrefix(root, "1-") || root[10] != '-' {
		return ctx
	}
	tid, err := trace.TraceIDFromHex(root[2:10] + root[11:])
	if err != nil {
		return ctx
	}
	sid, err := trace.SpanIDFromHex(parent)
	if err != nil {
		return ctx
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
}
