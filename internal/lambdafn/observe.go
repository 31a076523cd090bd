package lambdafn

import (
	"os"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/emf"
	"github.com/hitch-agents/hitch/internal/opentelemetry"
)

// observe gives the engine its metrics (EMF lines, dimension function = the
// function's short name) and, when tracing is on, its tracer and a traced
// store. It returns the tracer of the HTTP spans.
func observe(e *agent.Engine, c Config) trace.Tracer {
	out := c.Metrics
	if out == nil {
		out = os.Stdout
	}
	e.Metrics = emf.New(out, c.MetricsNamespace, c.Function)
	if c.Tracing == nil || !c.Tracing.Enabled {
		return noop.NewTracerProvider().Tracer("")
	}
	e.Tracer = c.Tracing.Tracer()
	e.Store = opentelemetry.NewStore(e.Store, e.Tracer)
	return e.Tracer
}
