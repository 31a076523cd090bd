package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/opentelemetry"
	"github.com/hitch-agents/hitch/internal/prom"
)

// observed is hitch serve's observability (docs/guide/observability.md, "Observability"): Prometheus metrics
// at /metrics, traces when OTEL_EXPORTER_OTLP_ENDPOINT is set, and the
// trace and request ids in the log lines.
type observed struct {
	metrics *prom.Metrics
	tracing *opentelemetry.Tracing
}

func observe(ctx context.Context) (*observed, error) {
	tr, err := opentelemetry.Setup(ctx, "hitch-serve")
	if err != nil {
		return nil, err
	}
	return &observed{metrics: prom.New(), tracing: tr}, nil
}

// logger adds the ids of the request to every line.
func (o *observed) logger(h slog.Handler) *slog.Logger {
	return slog.New(opentelemetry.NewLogHandler(h, false))
}

// instrument sets the engine's metrics and tracer and traces its store.
func (o *observed) instrument(e *agent.Engine) {
	e.Metrics = o.metrics
	if o.tracing.Enabled {
		e.Tracer = o.tracing.Tracer()
		e.Store = opentelemetry.NewStore(e.Store, e.Tracer)
	}
}

// handler serves /metrics beside the API, traced.
func (o *observed) handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.metrics.Handler())
	mux.Handle("/", opentelemetry.Handler(o.tracing.Tracer(), api))
	return mux
}

func (o *observed) shutdown(ctx context.Context) error { return o.tracing.Shutdown(ctx) }
