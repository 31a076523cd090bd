package perf_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/agents"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/artifactdir"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// artifactSize is the benchmark's artifact: 10 MB.
const artifactSize = 10 << 20

// heapPeak samples the heap in use every millisecond until stop, and
// returns the peak above what was in use when it started.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(quit); <-done; return peak.Load() }
}

// BenchmarkArtifact10MB saves a 10 MB file of the assistant's sandbox as an
// artifact (save_artifact from_path, through the local model) and downloads
// it, under hitch serve's stack (the artifacts in a directory); it reports
// each step's time and the peak heap they add: the bytes are streamed, never
// held whole (budget: ≤ 4 MB, well under the artifact's 10).
func BenchmarkArtifact10MB(b *testing.B) {
	model, stopModel, err := localmodel.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stopModel)
	base := b.TempDir()
	cat, err := catalog.Load(agents.FS, ".", catalog.Env{Files: true, BaseDir: base})
	if err != nil {
		b.Fatal(err)
	}
	arts, err := artifactdir.New(filepath.Join(base, "artifacts"))
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, Log: log, LegTimeout: time.Minute, Artifacts: arts}
	srv := httptest.NewServer((&httpapi.Server{Engine: e, Auth: httpapi.DevAuth, Log: log}).Handler())
	b.Cleanup(srv.Close)
	sandbox := filepath.Join(base, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(sandbox, "big.bin"))
	if err != nil {
		b.Fatal(err)
	}
	chunk := []byte(strings.Repeat("0123456789abcdef", 4096))
	for n := 0; n < artifactSize; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()

	var saveTotal, dlTotal time.Duration
	var peakMax uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stop := heapPeak()
		start := time.Now()
		code, body := post(b, srv.URL+"/agents/assistant/invoke", `{"items":[{"content":"/call save_artifact {\"name\": \"big.bin\", \"from_path\": \"big.bin\"}"}]}`, false)
		saved := time.Since(start)
		var res struct {
			TaskID string `json:"task_id"`
			Output string `json:"output"`
		}
		if err := json.Unmarshal([]byte(body), &res); code != 200 || err != nil || !strings.Contains(res.Output, "Saved artifact") {
			b.Fatalf("save: %d %s", code, body)
		}
		start = time.Now()
		n := download(b, srv.URL, res.TaskID)
		dl := time.Since(start)
		peak := stop()
		if n != artifactSize {
			b.Fatalf("downloaded %d bytes, want %d", n, artifactSize)
		}
		saveTotal += saved
		dlTotal += dl
		peakMax = max(peakMax, peak)
	}
	b.ReportMetric(float64(saveTotal.Milliseconds())/float64(b.N), "save-ms")
	b.ReportMetric(float64(dlTotal.Milliseconds())/float64(b.N), "download-ms")
	b.ReportMetric(float64(peakMax)/(1<<20), "peak-heap-MB")
}

// download reads the task's one artifact through the API, into nothing.
func download(tb testing.TB, base, taskID string) int64 {
	tb.Helper()
	resp, err := http.Get(base + "/agents/assistant/tasks/" + taskID)
	if err != nil {
		tb.Fatal(err)
	}
	var v struct {
		Artifacts []struct{ URL string } `json:"artifacts"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || len(v.Artifacts) != 1 {
		tb.Fatalf("GET task: %v %v", v, err)
	}
	resp, err = http.Get(base + v.Artifacts[0].URL)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	return n
}
