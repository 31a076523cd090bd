package perf_test

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// localServer is hitch serve's stack in process: the embedded agents, the
// in-memory store, the local model over the wire, dev auth.
func localServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	model, stop, err := localmodel.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	cat, err := catalog.Load(agents.FS, ".", catalog.Env{Files: true, BaseDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
	srv := httptest.NewServer((&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}).Handler())
	tb.Cleanup(srv.Close)
	return srv
}

func post(tb testing.TB, url, body string, sse bool) (int, string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		sb.WriteString(sc.Text())
		sb.WriteByte('\n')
	}
	return resp.StatusCode, sb.String()
}

// BenchmarkLocalTurn is a new task's turn through hitch serve's stack (JSON
// mode, the local model over the wire); it reports the p50 and p99.
func BenchmarkLocalTurn(b *testing.B) {
	srv := localServer(b)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code, body := post(b, srv.URL+"/agents/assistant/invoke", `{"items":[{"content":"hello there"}]}`, false); code != 200 {
			b.Fatalf("%d %s", code, body)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkDynamoTurns runs follow-on turns and resumes on DynamoDB Local and
// reports the time spent beyond the DynamoDB calls as a share of the time in
// them (budget: ≤ 30 %), with an in-process model so that only Hitch's own
// work is counted.
func BenchmarkDynamoTurns(b *testing.B) {
	for _, kind := range []string{"follow-on", "resume"} {
		b.Run(kind, func(b *testing.B) {
			env, c := dynamoEnv(b)
			env.Model.Add(agenttest.Say("hello"))
			first, _ := env.Invoke(b, "", "hi")
			var total, ddb time.Duration
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var paused *agent.RequestResult
				if kind == "follow-on" {
					env.Model.Add(agenttest.Say("again"))
				} else {
					env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g", "guarded", "x")), agenttest.Say("ok"))
					paused, _ = env.Invoke(b, first.TaskID, "pause")
				}
				spent := c.Spent()
				start := time.Now()
				b.StartTimer()
				if kind == "follow-on" {
					env.Invoke(b, first.TaskID, "again")
				} else if _, _, err := env.Resume(paused, "alice", enginetest.Approve()); err != nil {
					b.Fatal(err)
				}
				d := time.Since(start)
				total += d
				ddb += c.Spent() - spent
				lat = append(lat, d)
			}
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
			b.ReportMetric(100*float64(total-ddb)/float64(ddb), "service-%-of-ddb")
		})
	}
}

// BenchmarkDeltaToSSE measures a model delta → its SSE event read by the
// client (budget: p99 ≤ 5 ms).
func BenchmarkDeltaToSSE(b *testing.B) {
	model := &agenttest.ScriptModel{}
	ag := &agent.Agent{Name: "acc", Version: "1", ModelID: "m"}
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: oneAgent{ag}, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
	srv := httptest.NewServer((&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}).Handler())
	defer srv.Close()
	const deltas = 200
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		model.Add(func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
			for k := 0; k < deltas; k++ {
				tok := "d" + strings.Repeat("x", k%7) + string(rune('a'+k%26)) + itoa(k)
				mu.Lock()
				sent[tok] = time.Now()
				mu.Unlock()
				on(agent.Delta{Kind: agent.DeltaAnswer, Text: tok})
				time.Sleep(200 * time.Microsecond)
			}
			return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("done")}, StopReason: agent.StopEndTurn}, nil
		})
		req, _ := http.NewRequest("POST", srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"go"}]}`))
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, `data: {"delta":"`) {
				continue
			}
			tok := strings.TrimSuffix(strings.TrimPrefix(line, `data: {"delta":"`), `"}`)
			mu.Lock()
			if t0, ok := sent[tok]; ok {
				lat = append(lat, time.Since(t0))
				delete(sent, tok)
			}
			mu.Unlock()
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var s []byte
	for n > 0 {
		s = append([]byte{byte('0' + n%10)}, s...)
		n /= 10
	}
	return string(s)
}

type oneAgent struct{ a *agent.Agent }

func (o oneAgent) Get(n string) (*agent.Agent, bool) { return o.a, n == o.a.Name }

// BenchmarkLongHistoryMemory runs a turn over 1,000 history items (of about
// 1 KB each) and reports the peak heap the turn adds to what was in use
// before it (budget: ≤ 64 MB).
func BenchmarkLongHistoryMemory(b *testing.B) {
	store := memstore.New()
	env := enginetest.New(b, store)
	env.E.Log = slog.New(slog.DiscardHandler)
	env.Model.Add(agenttest.Say("hello"))
	first, _ := env.Invoke(b, "", "hi")
	seed(b, store, first.TaskID, 1000, 1000)
	var peak, base atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base.Store(ms.HeapInuse)
		env.Model.Add(agenttest.Say("long"))
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > base.Load() && ms.HeapInuse-base.Load() > peak.Load() {
					peak.Store(ms.HeapInuse - base.Load())
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		b.StartTimer()
		env.Invoke(b, first.TaskID, "over a long history")
		b.StopTimer()
		close(stop)
		<-done
		b.StartTimer()
	}
	b.ReportMetric(float64(peak.Load())/(1<<20), "turn-peak-heap-MB")
}

// TestConcurrentStreams runs 500 concurrent SSE invokes against the local
// server's stack: every one must end with request_complete.
func TestConcurrentStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("500 streams")
	}
	srv := localServer(t)
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 500
	const n = 500
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := post(t, srv.URL+"/agents/assistant/invoke", `{"items":[{"content":"stream number `+itoa(i)+`"}]}`, true)
			if code != 200 || !strings.Contains(body, "event: request_complete") || !strings.Contains(body, "echo: stream number "+itoa(i)) {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d streams failed", f, n)
	}
}
