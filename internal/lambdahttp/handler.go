package lambdahttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// DirectFunc answers a direct invocation (Step Functions, another Lambda):
// the raw JSON payload in, a JSON-encodable result out. A *FunctionError sets
// the errorType the caller sees.
type DirectFunc func(ctx context.Context, payload json.RawMessage) (any, error)

// HandlerFunc is what Start runs for each invocation. A result of type
// *events.APIGatewayProxyStreamingResponse is streamed; any other is sent as
// JSON.
type HandlerFunc func(ctx context.Context, event json.RawMessage) (any, error)

// Handler serves API Gateway REST proxy events with an http.Handler over a
// streamed response, and direct invocations with a DirectFunc.
type Handler struct {
	// HTTP serves the API Gateway events.
	HTTP http.Handler
	// Direct serves every other event; nil refuses them with a
	// *FunctionError of type Hitch.unsupported_event.
	Direct DirectFunc
	// Log receives handler panics; nil means slog.Default().
	Log *slog.Logger
}

// New returns a Handler serving h, and direct invocations with direct (which
// may be nil).
func New(h http.Handler, direct DirectFunc) *Handler {
	return &Handler{HTTP: h, Direct: direct}
}

// Handle is the function to start, with Start or with aws-lambda-go's
// lambda.Start: an API Gateway event answers a
// *events.APIGatewayProxyStreamingResponse, any other event goes to Direct.
func (h *Handler) Handle(ctx context.Context, event json.RawMessage) (any, error) {
	if !IsProxyEvent(event) {
		if h.Direct == nil {
			return nil, &FunctionError{Type: ErrorType("unsupported_event"), Message: "This function answers only API Gateway requests."}
		}
		return h.Direct(ctx, event)
	}
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, &FunctionError{Type: ErrorType("invalid_event"), Message: "The API Gateway event is not valid JSON of a REST proxy request."}
	}
	resp, err := h.ServeEvent(ctx, ev)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ServeEvent runs the http.Handler on the event in a goroutine and returns as
// soon as the handler has fixed its status and headers. The response's Body
// streams what the handler writes and ends when the handler returns; closing
// it waits for the handler.
func (h *Handler) ServeEvent(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
	r, err := NewRequest(ctx, ev)
	if errors.Is(err, errBase64Body) {
		return nil, &FunctionError{Type: ErrorType("invalid_event"), Message: "The request body is not valid base64."}
	}
	if err != nil {
		return nil, &FunctionError{Type: ErrorType("invalid_event"), Message: "The event's method or path does not make an HTTP request."}
	}
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	pr, pw := io.Pipe()
	w := newResponseWriter(pw, log)
	w.resp.Body = &body{pr: pr, done: w.done}
	go w.serve(h.HTTP, r)
	// The handler commits at the latest when it returns, so this never waits
	// for longer than the handler runs.
	<-w.committed
	return w.resp, nil
}

// IsProxyEvent tells an API Gateway event from a direct payload: API
// Gateway's is a JSON object with requestContext or httpMethod at its top.
func IsProxyEvent(event json.RawMessage) bool {
	event = bytes.TrimSpace(event)
	if len(event) == 0 || event[0] != '{' {
		return false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(event, &top); err != nil {
		return false
	}
	_, rc := top["requestContext"]
	_, m := top["httpMethod"]
	return rc || m
}

// FunctionError is an error the runtime reports as a function error with its
// own errorType, so that a state machine can Retry or Catch on it (the invoke
// function's refusals use Hitch.<code>, e.g. Hitch.task_busy).
type FunctionError struct {
	Type    string // errorType, e.g. "Hitch.task_busy"
	Message string // errorMessage: a sentence the caller may see
}

func (e *FunctionError) Error() string { return fmt.Sprintf("%s: %s", e.Type, e.Message) }

// ErrorType is the errorType of a Hitch error code: "Hitch." + code.
func ErrorType(code string) string { return "Hitch." + code }

// Refusal returns the *FunctionError of a Hitch error code.
func Refusal(code, message string) *FunctionError {
	return &FunctionError{Type: ErrorType(code), Message: message}
}
