package perf_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/emf"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/opentelemetry"
	"github.com/hitch-agents/hitch/internal/prom"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkObservedTurn is BenchmarkLocalTurn's turn with the observability
// of docs/guide/observability.md, "Observability" on (none: the engine's no-op default; prom: hitch serve's
// /metrics counters; emf: the Lambda functions' EMF lines), the trace
// handler in front, tracing not exported (the default). It reports the
// process's CPU per turn (server, local model and client together).
func BenchmarkObservedTurn(b *testing.B) {
	for _, kind := range []string{"none", "prom", "emf"} {
		b.Run(kind, func(b *testing.B) {
			model, stop, err := localmodel.Start(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(stop)
			cat, err := catalog.Load(agents.FS, ".", catalog.Env{Files: true, BaseDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
			var h http.Handler = (&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}).Handler()
			switch kind {
			case "prom":
				e.Metrics = prom.New()
				h = opentelemetry.Handler(noop.NewTracerProvider().Tracer(""), h)
			case "emf":
				e.Metrics = emf.New(io.Discard, "", "invoke")
				h = opentelemetry.Handler(noop.NewTracerProvider().Tracer(""), h)
			}
			srv := httptest.NewServer(h)
			b.Cleanup(srv.Close)
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if code, body := post(b, srv.URL+"/agents/assistant/invoke", `{"items":[{"content":"/call get_time {\"zone\": \"UTC\"}"}]}`, false); code != 200 {
					b.Fatalf("%d %s", code, body)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/turn")
		})
	}
}
