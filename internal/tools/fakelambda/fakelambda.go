// Package fakelambda is a wire-level fake of the Lambda API for tests: an
// httptest server that answers POST /2015-03-31/functions/{name}/invocations
// (Invoke) and the durable execution callbacks' routes (callbacks.go) as
// Lambda does, so tests use the real aws-sdk-go-v2 lambda client.
package fakelambda

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// Result is what a fake function answers. When FunctionError is set, the
// invocation is a function error: Payload should then be
// {"errorMessage", "errorType"} (see Fail).
type Result struct {
	Payload       []byte
	FunctionError string
}

// Fail is the result of a function that returned an error.
func Fail(errorType, message string) Result {
	b, _ := json.Marshal(map[string]string{"errorMessage": message, "errorType": errorType})
	return Result{Payload: b, FunctionError: "Unhandled"}
}

// JSON is the result of a function that returned v.
func JSON(v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakelambda: " + err.Error())
	}
	return Result{Payload: b}
}

// Handler is a fake function: it gets the payload and answers.
type Handler func(payload []byte) Result

// Invocation is a call the server received.
type Invocation struct {
	Function       string
	InvocationType string
	Payload        []byte
}

// Server is the fake Lambda service.
type Server struct {
	URL string

	mu          sync.Mutex
	functions   map[string]Handler
	invocations []Invocation
	callbacks   []Callback
	refused     map[string]refusal
	failNext    int
}

// New starts a server, closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{functions: map[string]Handler{}}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Handle registers the function name (a name, not an ARN; invocations by ARN
// are matched on the name the ARN holds).
func (s *Server) Handle(name string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.functions[name] = h
}

// Invocations returns the calls received so far.
func (s *Server) Invocations() []Invocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Invocation(nil), s.invocations...)
}

// Client returns a real Lambda client talking to the server: static dummy
// credentials, region us-east-1, no retries.
func (s *Server) Client(tb testing.TB) *lambda.Client {
	tb.Helper()
	return lambda.New(lambda.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(s.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake-secret", ""),
		RetryMaxAttempts: 1,
	})
}

const prefix = "/2015-03-31/functions/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveCallback(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	fn, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		awsError(w, http.StatusNotFound, "UnknownOperationException", "unknown operation "+r.Method+" "+r.URL.Path)
		return
	}
	fn, err := url.PathUnescape(fn)
	if err != nil {
		awsError(w, http.StatusBadRequest, "InvalidParameterValueException", "bad function name")
		return
	}
	if r.Header.Get("Authorization") == "" {
		awsError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "missing authentication token")
		return
	}
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	if len(payload) > 0 && !json.Valid(payload) {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	invType := r.Header.Get("X-Amz-Invocation-Type")
	if invType == "" {
		invType = "RequestResponse"
	}
	name := functionName(fn)

	s.mu.Lock()
	h := s.functions[name]
	s.invocations = append(s.invocations, Invocation{Function: fn, InvocationType: invType, Payload: payload})
	s.mu.Unlock()

	if h == nil {
		awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+fn)
		return
	}
	res := h(payload)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if res.FunctionError != "" {
		w.Header().Set("X-Amz-Function-Error", res.FunctionError)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(res.Payload)
}

// functionName reduces an ARN (arn:aws:lambda:region:account:function:NAME[:QUALIFIER])
// or NAME:QUALIFIER to the name.
func functionName(fn string) string {
	if i := strings.Index(fn, ":function:"); i >= 0 {
		fn = fn[i+len(":function:"):]
	}
	if i := strings.Index(fn, ":"); i >= 0 {
		fn = fn[:i]
	}
	return fn
}

// awsError writes an error as the Lambda REST-JSON protocol does.
func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
