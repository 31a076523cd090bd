package lambdahttp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// ErrHandlerPanic ends a non-SSE body whose handler panicked after its first
// byte: the runtime reads it from the body and reports the stream as failed.
var ErrHandlerPanic = errors.New("lambdahttp: the handler panicked after the response began")

// errBodyClosed is what a handler's Write returns once the runtime stopped
// reading the body (the client or the Runtime API went away).
var errBodyClosed = errors.New("lambdahttp: response body closed")

// Bodies written when a handler fails; the shapes are the HTTP API's (docs/api.md).
const (
	internalJSON = `{"error":{"code":"internal","message":"The server failed to answer; try again later."}}`
	internalSSE  = "event: error\ndata: {\"code\":\"internal\",\"message\":\"The server failed while streaming; the stream has ended.\"}\n\n"
)

// hopHeaders never reach the prelude: the stream's framing is the runtime's.
var hopHeaders = []string{"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Trailer", "Upgrade"}

// responseWriter is the http.ResponseWriter of one invocation. The handler
// writes into pw; the runtime reads the other end through body.
type responseWriter struct {
	resp *events.APIGatewayProxyStreamingResponse
	pw   *io.PipeWriter
	log  *slog.Logger

	header    http.Header
	committed chan struct{} // closed when status and headers are fixed
	done      chan struct{} // closed when the handler has returned and the body is closed

	mu     sync.Mutex
	commit bool
	status int
	sse    bool
	tail   [2]byte // the last two bytes written, to start an error event on a fresh line
	n      int64
}

var _ http.Flusher = (*responseWriter)(nil)

func newResponseWriter(pw *io.PipeWriter, log *slog.Logger) *responseWriter {
	return &responseWriter{
		resp:      &events.APIGatewayProxyStreamingResponse{},
		pw:        pw,
		log:       log,
		header:    http.Header{},
		committed: make(chan struct{}),
		done:      make(chan struct{}),
	}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.commit {
		w.log.Warn("lambdahttp: superfluous WriteHeader", "status", code)
		return
	}
	if code < 200 {
		return // informational answers cannot be streamed through API Gateway
	}
	w.commitLocked(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.commit {
		if w.header.Get("Content-Type") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.commitLocked(http.StatusOK)
	}
	return w.writeLocked(p)
}

// Flush commits the status and headers. Written bytes need no flushing: each
// Write returns only once the runtime has taken them.
func (w *responseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.commit {
		w.commitLocked(http.StatusOK)
	}
}

func (w *responseWriter) writeLocked(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := w.pw.Write(p)
	if n > 0 {
		w.n += int64(n)
		if n >= 2 {
			w.tail = [2]byte{p[n-2], p[n-1]}
		} else {
			w.tail = [2]byte{w.tail[1], p[0]}
		}
	}
	return n, err
}

func (w *responseWriter) commitLocked(code int) {
	w.commit = true
	w.status = code
	h := w.header.Clone()
	for _, k := range hopHeaders {
		h.Del(k)
	}
	single := map[string]string{}
	multi := map[string][]string{}
	for k, vs := range h {
		switch len(vs) {
		case 0:
		case 1:
			single[k] = vs[0]
		default:
			multi[k] = vs
		}
	}
	w.resp.StatusCode = code
	w.resp.Headers = single
	if len(multi) > 0 {
		w.resp.MultiValueHeaders = multi
	}
	w.resp.Cookies = []string{}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	w.sse = strings.EqualFold(mt, "text/event-stream")
	close(w.committed)
}

// serve runs the handler and ends the body whatever happens to it.
func (w *responseWriter) serve(h http.Handler, r *http.Request) {
	defer close(w.done)
	defer func() {
		w.finish(recover())
	}()
	h.ServeHTTP(w, r)
}

func (w *responseWriter) finish(p any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p == nil {
		if !w.commit {
			w.commitLocked(http.StatusOK)
		}
		w.pw.Close()
		return
	}
	if p == http.ErrAbortHandler {
		w.log.Warn("lambdahttp: handler aborted the response")
	} else {
		w.log.Error("lambdahttp: handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
	switch {
	case !w.commit:
		w.header = http.Header{"Content-Type": {"application/json"}}
		w.commitLocked(http.StatusInternalServerError)
		w.writeLocked([]byte(internalJSON))
	case w.sse:
		w.writeLocked([]byte(w.freshLine() + internalSSE))
	default:
		w.pw.CloseWithError(ErrHandlerPanic)
		return
	}
	w.pw.Close()
}

// freshLine returns the newlines that end whatever event was half written, so
// the error event is parsed as an event of its own.
func (w *responseWriter) freshLine() string {
	switch {
	case w.n == 0 || w.tail == [2]byte{'\n', '\n'}:
		return ""
	case w.tail[1] == '\n':
		return "\n"
	default:
		return "\n\n"
	}
}

// body is the read end of the pipe. Closing it (both aws-lambda-go and Start
// close the response once it is sent or has failed) stops the handler's
// writes and waits for the handler to return.
type body struct {
	pr   *io.PipeReader
	done <-chan struct{}
}

func (b *body) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *body) Close() error {
	b.pr.CloseWithError(errBodyClosed)
	<-b.done
	return nil
}
