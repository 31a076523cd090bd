// Package fakeruntime is a Lambda Runtime API at the wire, for tests that run
// a built bootstrap (or lambdahttp.Run) against it. It queues events, hands
// them out on GET …/invocation/next, and records every answer: the POST's
// headers, transfer encoding and trailers, and each body chunk with the time
// it arrived, so that a test can show a stream arriving as it is produced.
package fakeruntime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Chunk is one read of a response body, as it arrived.
type Chunk struct {
	At   time.Time
	Data []byte
}

// Invocation is one event and what the function answered.
type Invocation struct {
	ID      string
	Payload []byte
	// Kind is "response" or "error" once answered, "" before.
	Kind string
	// Header, TransferEncoding and Trailer of the answering POST.
	Header           http.Header
	TransferEncoding []string
	Trailer          http.Header
	Chunks           []Chunk
	Body             []byte
	Delivered        time.Time // when next handed it out
	Done             time.Time // when the answer's body ended
}

// Server is a fake Runtime API. Its zero value is not usable; call New.
type Server struct {
	srv     *httptest.Server
	timeout time.Duration

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	queue     []*Invocation
	byID      map[string]*Invocation
	initError *Invocation
	seq       int
	closed    chan struct{}
}

// New starts a fake Runtime API, closed by tb's cleanup. Invocations get a
// deadline 60 s after they are handed out.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		timeout: 60 * time.Second,
		changed: make(chan struct{}),
		byID:    map[string]*Invocation{},
		closed:  make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", s.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", s.answer("response"))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", s.answer("error"))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", s.initErr)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// Addr is the host:port to put in AWS_LAMBDA_RUNTIME_API.
func (s *Server) Addr() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// Close stops the server; a function blocked in next sees an error.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue queues an event and returns its request id.
func (s *Server) Enqueue(payload []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	inv := &Invocation{ID: fmt.Sprintf("req-%04d", s.seq), Payload: payload}
	s.queue = append(s.queue, inv)
	s.byID[inv.ID] = inv
	s.notifyLocked()
	return inv.ID
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond (evaluated under the lock) holds or ctx ends.
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return fmt.Errorf("fakeruntime: closed")
		}
	}
}

func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	var inv *Invocation
	err := s.waitFor(r.Context(), func() bool {
		if len(s.queue) == 0 {
			return false
		}
		inv, s.queue = s.queue[0], s.queue[1:]
		inv.Delivered = time.Now()
		return true
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Lambda-Runtime-Aws-Request-Id", inv.ID)
	w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(s.timeout).UnixMilli(), 10))
	w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:fake")
	w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
	w.Header().Set("Content-Type", "application/json")
	w.Write(inv.Payload)
}

func (s *Server) answer(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		inv := s.byID[r.PathValue("id")]
		if inv == nil || inv.Kind != "" || inv.Delivered.IsZero() {
			s.mu.Unlock()
			http.Error(w, `{"errorType":"InvalidRequestID"}`, http.StatusBadRequest)
			return
		}
		inv.Kind = kind
		inv.Header = r.Header.Clone()
		inv.TransferEncoding = r.TransferEncoding
		s.notifyLocked()
		s.mu.Unlock()

		s.record(inv, r.Body)

		s.mu.Lock()
		inv.Trailer = r.Trailer.Clone()
		inv.Done = time.Now()
		s.notifyLocked()
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}
}

// record keeps each read of the body as a chunk: with chunked encoding a
// read returns what has arrived, so the times are the arrival times.
func (s *Server) record(inv *Invocation, body io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			s.mu.Lock()
			inv.Chunks = append(inv.Chunks, Chunk{At: time.Now(), Data: bytes.Clone(buf[:n])})
			inv.Body = append(inv.Body, buf[:n]...)
			s.notifyLocked()
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (s *Server) initErr(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.initError = &Invocation{Kind: "init_error", Header: r.Header.Clone(), Body: b, Done: time.Now()}
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Wait blocks until the invocation's answer has ended and returns a copy.
func (s *Server) Wait(ctx context.Context, id string) (Invocation, error) {
	var out Invocation
	err := s.waitFor(ctx, func() bool {
		inv := s.byID[id]
		if inv == nil || inv.Done.IsZero() {
			return false
		}
		out = inv.copy()
		return true
	})
	return out, err
}

// WaitBody blocks until the body received so far for the invocation contains
// substr: a test uses it to see a piece of a stream arrive before the rest is
// produced.
func (s *Server) WaitBody(ctx context.Context, id, substr string) error {
	return s.waitFor(ctx, func() bool {
		inv := s.byID[id]
		return inv != nil && bytes.Contains(inv.Body, []byte(substr))
	})
}

// InitError returns the init error reported, if any.
func (s *Server) InitError() (Invocation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initError == nil {
		return Invocation{}, false
	}
	return s.initError.copy(), true
}

func (inv *Invocation) copy() Invocation {
	c := *inv
	c.Chunks = append([]Chunk(nil), inv.Chunks...)
	c.Body = bytes.Clone(inv.Body)
	return c
}

// StreamingProblems lists what is wrong with an answer that should have been
// streamed as an HTTP integration response: the mode header, chunked
// encoding and the content type. Empty means it was.
func StreamingProblems(inv Invocation) []string {
	var p []string
	if inv.Kind != "response" {
		p = append(p, fmt.Sprintf("answered with %q, not a response", inv.Kind))
	}
	if got := inv.Header.Get("Lambda-Runtime-Function-Response-Mode"); got != "streaming" {
		p = append(p, fmt.Sprintf("Lambda-Runtime-Function-Response-Mode = %q, want streaming", got))
	}
	if len(inv.TransferEncoding) != 1 || inv.TransferEncoding[0] != "chunked" {
		p = append(p, fmt.Sprintf("Transfer-Encoding = %q, want chunked", inv.TransferEncoding))
	}
	if got := inv.Header.Get("Content-Type"); got != "application/vnd.awslambda.http-integration-response" {
		p = append(p, fmt.Sprintf("Content-Type = %q, want the http-integration-response type", got))
	}
	return p
}

// SplitFrame splits an HTTP integration response into its JSON prelude and
// its body at the 8 NUL bytes.
func SplitFrame(b []byte) (prelude, body []byte, err error) {
	i := bytes.Index(b, make([]byte, 8))
	if i < 0 {
		return nil, nil, fmt.Errorf("fakeruntime: no 8 NUL bytes after the prelude in %q", b)
	}
	return b[:i], b[i+8:], nil
}
