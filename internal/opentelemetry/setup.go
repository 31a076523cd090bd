package opentelemetry

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerName is the instrumentation name of Hitch's spans.
const TracerName = "github.com/hitch-agents/hitch"

// Tracing is a configured tracer provider.
type Tracing struct {
	Provider trace.TracerProvider
	// Enabled tells whether spans are exported.
	Enabled bool
	sdk     *sdktrace.TracerProvider
}

// Tracer is Hitch's tracer of the provider.
func (t *Tracing) Tracer() trace.Tracer { return t.Provider.Tracer(TracerName) }

// Flush exports the spans ended so far (a Lambda calls it before its
// invocation returns, as the sandbox may freeze afterwards).
func (t *Tracing) Flush(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Setup builds tracing from the environment (the OTEL_EXPORTER_OTLP_*
// variables of the OpenTelemetry specification): OTLP over HTTP when an
// endpoint is set, else a no-op provider. service names the resource
// (OTEL_SERVICE_NAME wins).
func Setup(ctx context.Context, service string) (*Tracing, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return &Tracing{Provider: noop.NewTracerProvider()}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("opentelemetry: OTLP exporter: %w", err)
	}
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		service = s
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, fmt.Errorf("opentelemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Enabled: true, sdk: tp}, nil
}

// NewTracing wraps a provider built elsewhere (tests: an in-memory
// recorder).
func NewTracing(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{Provider: tp, Enabled: true, sdk: tp}
}
