package sse_test

import (
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
