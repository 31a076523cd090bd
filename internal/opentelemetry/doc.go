// Package opentelemetry traces Hitch with OpenTelemetry (docs/guide/observability.md, "Observability").
//
// The engine (internal/agent) makes the spans of a request leg, its model
// calls and its tool calls through the trace API alone; this package adds
// the rest and the plumbing:
//
//   - Setup builds the tracer provider from the environment: an OTLP/HTTP
//     exporter when OTEL_EXPORTER_OTLP_ENDPOINT (or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, otherwise none — tracing
//     then costs nothing.
//   - Handler accepts W3C trace context (traceparent, tracestate) from
//     incoming requests and makes a server span per HTTP request.
//   - Store wraps an agent.Store with a span per store call.
//   - LogHandler adds trace_id and span_id — and, in Lambda, the X-Ray form
//     xray_trace_id (1-xxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy) — with the
//     request's session_id, task_id and request_id to every log line written
//     with a context.
package opentelemetry
