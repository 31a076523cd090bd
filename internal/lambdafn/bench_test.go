package lambdafn_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// nextProbe is the least of a Runtime API: it tells when a function first
// asks for an invocation (GET …/invocation/next) and then holds the request
// open, as the Runtime API does while no event is queued. An init error is
// reported too.
type nextProbe struct {
	srv  *httptest.Server
	next chan time.Time
	init chan string
}

func newNextProbe(tb testing.TB) *nextProbe {
	p := &nextProbe{next: make(chan time.Time, 1), init: make(chan string, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		select {
		case p.next <- at:
		default:
		}
		<-r.Context().Done()
	})
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case p.init <- string(b):
		default:
		}
		w.WriteHeader(http.StatusAccepted)
	})
	p.srv = httptest.NewServer(mux)
	tb.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// BenchmarkColdStart measures each function binary from the start of its
// process to its first GET …/invocation/next (docs/guide/budgets.md, "Budgets": ≤ 50 ms), and
// reports the binary's size (≤ 30 MB). The binaries are built as for Lambda
// (CGO_ENABLED=0, -tags lambda.norpc, -trimpath, -ldflags "-s -w") but for
// this machine's architecture. ns/op is the mean start-up; p50-ms and
// max-ms the median and the worst.
func BenchmarkColdStart(b *testing.B) {
	for _, name := range []string{"invoke", "resume", "gettask", "authorizer"} {
		b.Run(name, func(b *testing.B) {
			bin := buildFunction(b, name)
			st, err := os.Stat(bin)
			if err != nil {
				b.Fatal(err)
			}
			probe := newNextProbe(b)
			env := append(awsEnv(b),
				"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(probe.srv.URL, "http://"),
				"AWS_LAMBDA_FUNCTION_NAME=hitch-"+name,
				"HITCH_TABLE=hitch-bench",
				"HITCH_ISSUERS=https://login.microsoftonline.com/3f2b8c1e-9d4a-4e6b-8a7c-5d1e2f3a4b5c/v2.0",
				"HITCH_AUDIENCE=api://hitch",
			)
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin)
				cmd.Env = env
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				var d time.Duration
				select {
				case at := <-probe.next:
					d = at.Sub(start)
				case msg := <-probe.init:
					cmd.Process.Kill()
					cmd.Wait()
					b.Fatalf("functions/%s failed to start: %s", name, msg)
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					cmd.Wait()
					b.Fatalf("functions/%s never asked for an invocation", name)
				}
				b.StopTimer()
				samples = append(samples, d)
				cmd.Process.Kill()
				cmd.Wait()
				b.StartTimer()
			}
			slices.Sort(samples)
			b.ReportMetric(float64(st.Size()), "bytes")
			b.ReportMetric(float64(samples[len(samples)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(samples[len(samples)-1])/1e6, "max-ms")
		})
	}
}
