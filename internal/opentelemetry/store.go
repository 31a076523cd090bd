package opentelemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// Store span names: hitch.store.<method>.
const spanStore = "hitch.store."

// Store wraps an agent.Store with a client span per call. Methods the
// wrapper does not know pass through the embedded store untraced.
type Store struct {
	agent.Store
	tr trace.Tracer
}

// NewStore wraps s.
func NewStore(s agent.Store, tr trace.Tracer) *Store { return &Store{Store: s, tr: tr} }

var _ agent.Store = (*Store)(nil)

func (s *Store) start(ctx context.Context, op, taskID string) (context.Context, trace.Span) {
	return s.tr.Start(ctx, spanStore+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("hitch.task_id", taskID)))
}

func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Write implements agent.Store.
func (s *Store) Write(ctx context.Context, w *agent.Write) (err error) {
	ctx, span := s.start(ctx, "Write", w.Task.ID)
	defer func() { end(span, err) }()
	return s.Store.Write(ctx, w)
}

// LoadTask implements agent.Store.
func (s *Store) LoadTask(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	ctx, span := s.start(ctx, "LoadTask", taskID)
	defer func() { end(span, err) }()
	return s.Store.LoadTask(ctx, taskID)
}

// GetTask implements agent.Store.
func (s *Store) GetTask(ctx context.Context, taskID string) (_ *agent.Task, err error) {
	ctx, span := s.start(ctx, "GetTask", taskID)
	defer func() { end(span, err) }()
	return s.Store.GetTask(ctx, taskID)
}

// ListItems implements agent.Store.
func (s *Store) ListItems(ctx context.Context, t *agent.Task, afterSeq int64, limit int) (_ []agent.Item, err error) {
	ctx, span := s.start(ctx, "ListItems", t.ID)
	defer func() { end(span, err) }()
	return s.Store.ListItems(ctx, t, afterSeq, limit)
}

// ListRequests implements agent.Store.
func (s *Store) ListRequests(ctx context.Context, taskID string) (_ []agent.RequestRecord, err error) {
	ctx, span := s.start(ctx, "ListRequests", taskID)
	defer func() { end(span, err) }()
	return s.Store.ListRequests(ctx, taskID)
}

// GetIdem implements agent.Store.
func (s *Store) GetIdem(ctx context.Context, key string) (_ *agent.IdemRecord, err error) {
	ctx, span := s.start(ctx, "GetIdem", "")
	defer func() { end(span, err) }()
	return s.Store.GetIdem(ctx, key)
}

// ListDecisions implements agent.Store.
func (s *Store) ListDecisions(ctx context.Context, taskID, requestID string) (_ []agent.RequestDecision, err error) {
	ctx, span := s.start(ctx, "ListDecisions", taskID)
	defer func() { end(span, err) }()
	return s.Store.ListDecisions(ctx, taskID, requestID)
}

// AppendEvents implements agent.Store.
func (s *Store) AppendEvents(ctx context.Context, taskID, requestID string, events []eventlog.Event, expires time.Time) (err error) {
	ctx, span := s.start(ctx, "AppendEvents", taskID)
	defer func() { end(span, err) }()
	return s.Store.AppendEvents(ctx, taskID, requestID, events, expires)
}

// ListEvents implements agent.Store.
func (s *Store) ListEvents(ctx context.Context, taskID, requestID string, after int64) (_ []eventlog.Event, err error) {
	ctx, span := s.start(ctx, "ListEvents", taskID)
	defer func() { end(span, err) }()
	return s.Store.ListEvents(ctx, taskID, requestID, after)
}

// DeleteTask implements agent.Store.
func (s *Store) DeleteTask(ctx context.Context, t *agent.Task) (err error) {
	ctx, span := s.start(ctx, "DeleteTask", t.ID)
	defer func() { end(span, err) }()
	return s.Store.DeleteTask(ctx, t)
}

// SpanDelivery is the name of a notification delivery's span.
const SpanDelivery = "hitch.delivery"

// StartDelivery starts the span of one delivery of kind (webhook, sfn, …)
// to target; call end with its error.
func StartDelivery(ctx context.Context, tr trace.Tracer, kind, target string) (context.Context, func(error)) {
	ctx, span := tr.Start(ctx, SpanDelivery, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("hitch.delivery.kind", kind), attribute.String("hitch.delivery.target", target)))
	return ctx, func(err error) { end(span, err) }
}
