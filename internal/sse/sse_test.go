package sse_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/sse"
)

func TestFrame(t *testing.T) {
	got := string(sse.Frame(agent.Event{ID: 7, Name: "answer", Data: map[string]string{"delta": "hi\nthere"}}))
	want := "id: 7\nevent: answer\ndata: {\"delta\":\"hi\\nthere\"}\n\n"
	if got != want {
		t.Errorf("Frame = %q, want %q", got, want)
	}
}

func TestHeaders(t *testing.T) {
	h := http.Header{}
	sse.SetHeaders(h)
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if h.Get(k) != v {
			t.Errorf("%s = %q", k, h.Get(k))
		}
	}
}

func TestWritesInOrderAndKeepalive(t *testing.T) {
	rec := httptest.NewRecorder()
	w := sse.NewWriter(rec, 0, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	w.Emit(agent.Event{ID: 1, Name: "a", Data: 1})
	time.Sleep(70 * time.Millisecond)
	w.Emit(agent.Event{ID: 2, Name: "b", Data: 2})
	w.Close()
	body := rec.Body.String()
	first, second := strings.Index(body, "id: 1"), strings.Index(body, "id: 2")
	if first < 0 || second < first || !strings.Contains(body[first:second], ": keepalive\n\n") {
		t.Errorf("body = %q: want event 1, a keepalive, event 2", body)
	}
	if w.Detached() {
		t.Error("a healthy writer detached")
	}
}

// blockedWriter blocks every write until released: a stalled client.
type blockedWriter struct {
	header  http.Header
	release chan struct{}
	mu      sync.Mutex
	written int
}

func (b *blockedWriter) Header() http.Header { return b.header }
func (b *blockedWriter) WriteHeader(int)     {}
func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	b.written += len(p)
	b.mu.Unlock()
	return len(p), nil
}

func TestFullBufferDetachesWithoutBlocking(t *testing.T) {
	bw := &blockedWriter{header: http.Header{}, release: make(chan struct{})}
	w := sse.NewWriter(bw, 4, time.Hour, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() {
		for i := 1; i <= 100; i++ {
			w.Emit(agent.Event{ID: int64(i), Name: "answer", Data: i})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Emit blocked on a stalled client")
	}
	if !w.Detached() {
		t.Error("a full buffer did not detach")
	}
	close(bw.release)
	w.Close()
}

type failingWriter struct{ header http.Header }

func (f *failingWriter) Header() http.Header         { return f.header }
func (f *failingWriter) WriteHeader(int)             {}
func (f *failingWriter) Write(p []byte) (int, error) { return 0, errors.New("connection reset") }

func TestWriteErrorDetaches(t *testing.T) {
	w := sse.NewWriter(&failingWriter{header: http.Header{}}, 0, time.Hour, slog.New(slog.DiscardHandler))
	w.Emit(agent.Event{ID: 1, Name: "a", Data: 1})
	w.Close()
	if !w.Detached() {
		t.Error("a write error did not detach")
	}
	w.Emit(agent.Event{ID: 2, Name: "b", Data: 2}) // after Close: dropped, no panic
}

// gateWriter takes one write each time the test lets it: a reader slower
// than its writer.
type gateWriter struct {
	header http.Header
	gate   chan struct{}
	mu     sync.Mutex
	body   strings.Builder
}

func (g *gateWriter) Header() http.Header { return g.header }
func (g *gateWriter) WriteHeader(int)     {}
func (g *gateWriter) Flush()              {}
func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.body.Write(p)
}

// A paced writer (a replay) waits for its reader: 10 times its buffer of
// frames through a connection that takes one write at a time arrive
// whole, in order, and it never detaches.
func TestPacedWriterWaitsForItsReader(t *testing.T) {
	gw := &gateWriter{header: http.Header{}, gate: make(chan struct{})}
	w := sse.NewPacedWriter(context.Background(), gw, time.Hour, slog.New(slog.DiscardHandler))
	n := 10 * sse.PacedBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			w.Emit(agent.Event{ID: int64(i), Name: "answer", Data: i})
		}
	}()
	go func() {
		for {
			select {
			case gw.gate <- struct{}{}:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}()
	<-done
	w.Close()
	if w.Detached() {
		t.Error("a paced writer detached from a slow reader")
	}
	gw.mu.Lock()
	body := gw.body.String()
	gw.mu.Unlock()
	want := strings.Builder{}
	for i := 1; i <= n; i++ {
		want.Write(sse.Frame(agent.Event{ID: int64(i), Name: "answer", Data: i}))
	}
	if body != want.String() {
		t.Errorf("the reader got %d bytes, want the %d frames in order (%d bytes)", len(body), n, want.Len())
	}
}

// A paced writer's Emit returns once the connection failed (Gone closes)
// or its context ended, whatever the buffer holds.
func TestPacedWriterStops(t *testing.T) {
	w := sse.NewPacedWriter(context.Background(), &failingWriter{header: http.Header{}}, time.Hour, slog.New(slog.DiscardHandler))
	for i := 1; i <= 10*sse.PacedBuffer; i++ {
		w.Emit(agent.Event{ID: int64(i), Name: "answer", Data: i})
	}
	<-w.Gone()
	w.Close()

	bw := &blockedWriter{header: http.Header{}, release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	w = sse.NewPacedWriter(ctx, bw, time.Hour, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 10*sse.PacedBuffer; i++ {
			w.Emit(agent.Event{ID: int64(i), Name: "answer", Data: i})
		}
	}()
	cancel()
	<-done
	close(bw.release)
	w.Close()
}
