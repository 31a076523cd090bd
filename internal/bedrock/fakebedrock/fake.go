// Package fakebedrock is a wire-level fake of Bedrock's ConverseStream for
// tests: an httptest server that the real bedrockruntime client talks to.
// Tests script its answers turn by turn (text, reasoning with a signature,
// tool use with input split across deltas, stop reasons, usage, in-stream
// exceptions, HTTP errors such as 429 ThrottlingException), read back every
// request it received, decoded, and rely on it to refuse, like Bedrock, a
// conversation that does not start and end with a user message, does not
// alternate roles, or leaves a toolUse unanswered (400 ValidationException).
package fakebedrock

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/bedrock/bedrockwire"
)

// Aliases of the scripting types, so tests need not import bedrockwire.
type (
	Turn      = bedrockwire.Turn
	Block     = bedrockwire.Block
	ToolCall  = bedrockwire.ToolCall
	Usage     = bedrockwire.Usage
	Exception = bedrockwire.Exception
	Request   = bedrockwire.Request
)

// Response is the scripted answer to one valid request.
type Response struct {
	// Turn is streamed unless Status is set.
	Turn Turn
	// Status, when not 0, answers with this HTTP status, the exception
	// ErrorType (e.g. ThrottlingException) and Message instead of a stream.
	Status    int
	ErrorType string
	Message   string
	// RetryAfter, if set, is sent as the Retry-After header of an HTTP error.
	RetryAfter string
	// Hang keeps the stream open after the turn's blocks until the client
	// goes away, instead of ending the message (cancellation tests).
	Hang bool
}

// Server is the fake.
type Server struct {
	*httptest.Server
	tb       testing.TB
	mu       sync.Mutex
	script   []Response
	requests []*Request
}

// New starts a fake, closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{tb: tb}
	wire := &bedrockwire.Server{Respond: s.respond, Received: s.received}
	s.Server = httptest.NewServer(wire)
	tb.Cleanup(s.Close)
	return s
}

// Push appends responses to the script; each valid request takes the next.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, rs...)
}

// Requests returns every request received so far, valid or not, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Client returns a bedrockruntime client for the fake, without retries so
// that a scripted error reaches the caller at once.
func (s *Server) Client(optFns ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	noRetry := func(o *bedrockruntime.Options) { o.RetryMaxAttempts = 1 }
	return bedrock.EndpointClient(s.URL, append([]func(*bedrockruntime.Options){noRetry}, optFns...)...)
}

// Model returns a bedrock.Model talking to the fake.
func (s *Server) Model() *bedrock.Model { return bedrock.New(s.Client()) }

func (s *Server) received(req *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

func (s *Server) next() (Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return Response{}, false
	}
	r := s.script[0]
	s.script = s.script[1:]
	return r, true
}

func (s *Server) respond(ctx context.Context, _ *Request, w *bedrockwire.ResponseWriter) {
	r, ok := s.next()
	if !ok {
		s.tb.Errorf("fakebedrock: a request arrived but no response is scripted")
		w.Fail(http.StatusInternalServerError, "InternalServerException", "fakebedrock: no response scripted")
		return
	}
	if r.Status != 0 {
		if r.RetryAfter != "" {
			w.Header().Set("Retry-After", r.RetryAfter)
		}
		w.Fail(r.Status, r.ErrorType, r.Message)
		return
	}
	if !r.Hang {
		w.WriteTurn(r.Turn)
		return
	}
	w.WriteBlocks(r.Turn)
	<-ctx.Done()
}
