// Package sse writes Server-Sent Events to an HTTP response through a bounded
// buffer, so that a slow or gone client never holds up the engine.
//
// The engine emits events into the Writer; one goroutine writes them to the
// connection, flushing whenever it has written all that was queued. When a
// write fails or the buffer is full the Writer detaches: further events are
// dropped here (they are still logged by the engine's event log) and the
// engine goes on. A comment line
// ": keepalive" goes out after a period of silence.
//
// A replay (GET …/events) reads the event log, not the engine: its Writer is
// paced (NewPacedWriter). Emit waits while the buffer is full, so the replay
// reads the log at its reader's pace and never detaches for being slow;
// only a failed connection, one that takes no byte for ReplayStall, or the
// request's end stops it.
package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Defaults.
const (
	DefaultBuffer    = 4096
	DefaultKeepalive = 15 * time.Second
	// WriteTimeout bounds one write to the connection.
	WriteTimeout = 10 * time.Second
	// PacedBuffer is a paced writer's buffer, in frames: the follower
	// waits for room, so it needs only enough to keep the connection busy.
	PacedBuffer = 64
	// ReplayStall bounds one write of a paced writer: a connection that
	// takes no byte for so long is gone, not slow.
	ReplayStall = time.Minute
)

// SetHeaders sets the SSE response headers.
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// Frame encodes one event.
func Frame(e agent.Event) []byte {
	data, err := json.Marshal(e.Data)
	if err != nil {
		data = []byte(`{}`)
	}
	var b bytes.Buffer
	b.Grow(len(data) + 48)
	b.WriteString("id: ")
	b.WriteString(strconv.FormatInt(e.ID, 10))
	b.WriteString("\nevent: ")
	b.WriteString(e.Name)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// Writer streams events to one response.
type Writer struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	ch        chan []byte
	done      chan struct{}
	keepalive time.Duration
	log       *slog.Logger
	// paced: Emit waits for room (a replay) until the connection fails
	// (gone) or ctx ends.
	paced bool
	ctx   context.Context
	gone  chan struct{}

	mu       sync.Mutex
	detached bool
	closed   bool
}

// NewWriter starts a writer on w; the caller has already set the headers.
// buffer and keepalive default when zero.
func NewWriter(w http.ResponseWriter, buffer int, keepalive time.Duration, log *slog.Logger) *Writer {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	if keepalive <= 0 {
		keepalive = DefaultKeepalive
	}
	if log == nil {
		log = slog.Default()
	}
	sw := &Writer{w: w, rc: http.NewResponseController(w), ch: make(chan []byte, buffer), done: make(chan struct{}),
		keepalive: keepalive, log: log, gone: make(chan struct{})}
	go sw.pump()
	return sw
}

// NewPacedWriter starts a replay's writer on w (docs/api.md Reconnecting):
// its Emit waits while the buffer is full, until the connection took a
// frame, failed, or ctx ended, so it never detaches for being slow. Its
// Emit and Close are called by one goroutine (the follower's).
func NewPacedWriter(ctx context.Context, w http.ResponseWriter, keepalive time.Duration, log *slog.Logger) *Writer {
	sw := NewWriter(w, PacedBuffer, keepalive, log)
	sw.paced, sw.ctx = true, ctx
	return sw
}

// Gone is closed when the writer gave up on the connection (a failed
// write): a replay stops reading the log.
func (s *Writer) Gone() <-chan struct{} { return s.gone }

// Emit queues an event; it never blocks unless the writer is paced.
func (s *Writer) Emit(e agent.Event) {
	s.WriteRaw(Frame(e))
}

// WriteRaw queues bytes already framed.
func (s *Writer) WriteRaw(frame []byte) {
	if s.paced {
		s.mu.Lock()
		stop := s.detached || s.closed
		s.mu.Unlock()
		if stop {
			return
		}
		select {
		case s.ch <- frame:
		case <-s.gone:
		case <-s.ctx.Done():
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detached || s.closed {
		return
	}
	select {
	case s.ch <- frame:
	default:
		s.detachLocked()
		s.log.Warn("sse: the client is too slow; detached from the stream")
	}
}

// detachLocked gives up on the connection; s.mu is held.
func (s *Writer) detachLocked() {
	if !s.detached {
		s.detached = true
		close(s.gone)
	}
}

// Close flushes what is queued and stops the writer. It returns when the
// pump has finished (at once if it had detached).
func (s *Writer) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.mu.Unlock()
	<-s.done
}

// Detached tells whether the writer gave up on the connection.
func (s *Writer) Detached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.detached
}

func (s *Writer) pump() {
	defer close(s.done)
	t := time.NewTimer(s.keepalive)
	defer t.Stop()
	broken := false
	for {
		select {
		case b, ok := <-s.ch:
			if !ok || !s.send(b, &broken) {
				return
			}
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(s.keepalive)
		case <-t.C:
			if !s.send([]byte(": keepalive\n\n"), &broken) {
				return
			}
			t.Reset(s.keepalive)
		}
	}
}

// send writes b and every frame already queued behind it, then flushes once:
// the frames the engine queued while the last flush was under way go out in
// one write, and a frame still reaches the wire as soon as the connection
// takes it. It reports false when it found the queue closed.
func (s *Writer) send(b []byte, broken *bool) (open bool) {
	open = true
	if *broken || s.Detached() {
		*broken = true
		return open
	}
	// A stalled connection must not hold the handler past the commit. A
	// paced writer's bound is per write: its reader may be slow, not gone.
	s.deadline(true)
	_, err := s.w.Write(b)
drain:
	for err == nil {
		select {
		case next, ok := <-s.ch:
			if !ok {
				open = false
				break drain
			}
			s.deadline(false)
			_, err = s.w.Write(next)
		default:
			break drain
		}
	}
	if err == nil {
		s.deadline(false)
		err = s.rc.Flush()
	}
	if err != nil {
		*broken = true
		s.mu.Lock()
		s.detachLocked()
		s.mu.Unlock()
	}
	return open
}

// deadline sets the write deadline: once per send for a live writer
// (first), before each write for a paced one.
func (s *Writer) deadline(first bool) {
	switch {
	case s.paced:
		_ = s.rc.SetWriteDeadline(time.Now().Add(ReplayStall))
	case first:
		_ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	}
}
