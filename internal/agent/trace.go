package agent

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Span names (docs/guide/observability.md, "Observability": a span per request leg, model call and tool call;
// store calls and deliveries are traced by their adapters).
const (
	SpanLeg   = "hitch.leg"
	SpanModel = "hitch.model"
	SpanTool  = "hitch.tool"
)

var noopTracer trace.Tracer = noop.NewTracerProvider().Tracer("")

func (e *Engine) tracer() trace.Tracer {
	if e.Tracer != nil {
		return e.Tracer
	}
	return noopTracer
}

// endSpan records err (if any) on the span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// LogIDs are the ids every log line of a request carries (STYLE: session_id,
// task_id, request_id); a log handler reads them from the context.
type LogIDs struct {
	SessionID, TaskID, RequestID string
}

type logIDsKey struct{}

// WithLogIDs returns ctx carrying ids.
func WithLogIDs(ctx context.Context, ids LogIDs) context.Context {
	return context.WithValue(ctx, logIDsKey{}, ids)
}

// LogIDsFrom returns the ids ctx carries, if any.
func LogIDsFrom(ctx context.Context) (LogIDs, bool) {
	ids, ok := ctx.Value(logIDsKey{}).(LogIDs)
	return ids, ok
}

// startLeg starts the leg's span and puts the request's ids in ctx.
func (r *Run) startLeg(ctx context.Context) (context.Context, trace.Span) {
	t := r.task
	ctx = WithLogIDs(ctx, LogIDs{SessionID: t.SessionID, TaskID: t.ID, RequestID: r.reqID})
	return r.e.tracer().Start(ctx, SpanLeg, trace.WithAttributes(
		attribute.String("hitch.agent", r.agent.Name),
		attribute.String("hitch.session_id", t.SessionID),
		attribute.String("hitch.task_id", t.ID),
		attribute.String("hitch.request_id", r.reqID),
		attribute.String("hitch.kind", r.legKind()),
	))
}
