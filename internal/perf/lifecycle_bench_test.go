package perf_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// BenchmarkLocalResume is a resume (approve, run the tool, the model's
// answer) through hitch serve's stack with the local model over the wire,
// the pause not counted; it reports the p50.
func BenchmarkLocalResume(b *testing.B) {
	srv := localServer(b)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		code, body := post(b, srv.URL+"/agents/assistant/invoke", `{"items":[{"content":"/call write_file {\"path\": \"a.txt\", \"content\": \"x\"}"}]}`, false)
		var paused map[string]any
		if err := json.Unmarshal([]byte(body), &paused); err != nil || code != 200 || paused["status"] != "Paused" {
			b.Fatalf("%d %s", code, body)
		}
		b.StartTimer()
		start := time.Now()
		if code, body := post(b, srv.URL+paused["resume_url"].(string), `{"action":"approve"}`, false); code != 200 || !strings.Contains(body, "Completed") {
			b.Fatalf("%d %s", code, body)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
}

// BenchmarkCancel measures a cancel call → the cancelled event on the
// request's stream, canceled from the same process (at once) and from another
// one (through the store's flag, noticed by the engine's poll).
func BenchmarkCancel(b *testing.B) {
	for _, where := range []string{"same-process", "through-store"} {
		b.Run(where, func(b *testing.B) {
			store := memstore.New()
			env := enginetest.New(b, store)
			env.E.Now = nil
			srv := httptest.NewServer((&httpapi.Server{Engine: env.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}).Handler())
			defer srv.Close()
			canceller := srv
			if where == "through-store" {
				other := &agent.Engine{Store: store, Model: env.Model, Agents: env.E.Agents, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
				canceller = httptest.NewServer((&httpapi.Server{Engine: other, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}).Handler())
				defer canceller.Close()
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				started := make(chan struct{})
				env.Model.Add(agenttest.Blocking(started))
				req, _ := http.NewRequest("POST", srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"long"}]}`))
				req.Header.Set("Accept", "text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				<-started
				sc := bufio.NewScanner(resp.Body)
				var tid string
				for tid == "" && sc.Scan() {
					if line := sc.Text(); strings.HasPrefix(line, "data: ") {
						var d map[string]any
						_ = json.Unmarshal([]byte(line[6:]), &d)
						tid, _ = d["task_id"].(string)
					}
				}
				start := time.Now()
				go func() {
					creq, _ := http.NewRequestWithContext(context.Background(), "POST", canceller.URL+"/agents/acc/tasks/"+tid+"/cancel", nil)
					if r, err := http.DefaultClient.Do(creq); err == nil {
						r.Body.Close()
					}
				}()
				for sc.Scan() {
					if sc.Text() == "event: cancelled" {
						lat = append(lat, time.Since(start))
					}
				}
				resp.Body.Close()
			}
			if len(lat) != b.N {
				b.Fatalf("%d of %d streams saw cancelled", len(lat), b.N)
			}
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
		})
	}
}
