// Package sfnfake is a wire-level Step Functions for tests: an httptest
// server answering SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat in
// the service's JSON 1.0 protocol, so tests use the real aws-sdk-go-v2 sfn
// client. It records each call; a token can be made unknown or timed out.
package sfnfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Call is a call received.
type Call struct {
	Op     string // SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat
	Token  string
	Output string // SendTaskSuccess
	Error  string // SendTaskFailure
	Cause  string // SendTaskFailure
	// At is when the call came; Status the HTTP status it was answered
	// (200, or the refusal's or the injected failure's).
	At     time.Time
	Status int
}

// Server is the fake.
type Server struct {
	URL string

	mu       sync.Mutex
	calls    []Call
	refused  map[string]string // token → error code
	closed   map[string]bool   // tokens answered (their tasks closed)
	failNext int
}

// New starts the fake, stopped when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{refused: map[string]string{}, closed: map[string]bool{}}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Client is the real sfn client pointed at the fake (no SDK retries).
func (s *Server) Client() *sfn.Client {
	return sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1})
}

// Refuse makes every later call with the token answer the error code
// (TaskDoesNotExist, TaskTimedOut, InvalidToken).
func (s *Server) Refuse(token, code string) {
	s.mu.Lock()
	s.refused[token] = code
	s.mu.Unlock()
}

// FailNext makes the next n calls answer 500.
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// Calls lists the calls so far, refused ones too.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions.")
	switch {
	case !ok || (op != "SendTaskSuccess" && op != "SendTaskFailure" && op != "SendTaskHeartbeat"):
		fail(w, http.StatusBadRequest, "UnknownOperationException", "the fake answers SendTask* only")
		return
	case r.Header.Get("Authorization") == "":
		fail(w, http.StatusForbidden, "MissingAuthenticationTokenException", "missing authentication token")
		return
	}
	var in struct {
		TaskToken string `json:"taskToken"`
		Output    string `json:"output"`
		Error     string `json:"error"`
		Cause     string `json:"cause"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.TaskToken == "" {
		fail(w, http.StatusBadRequest, "ValidationException", "taskToken is required")
		return
	}
	if op == "SendTaskSuccess" && !json.Valid([]byte(in.Output)) {
		fail(w, http.StatusBadRequest, "InvalidOutput", "output is not JSON")
		return
	}
	if op == "SendTaskSuccess" && len(in.Output) > 256*1024 {
		fail(w, http.StatusBadRequest, "InvalidOutput", fmt.Sprintf("output of %d bytes is over 256 KiB", len(in.Output)))
		return
	}
	s.mu.Lock()
	code, refused := s.refused[in.TaskToken]
	if !refused && s.closed[in.TaskToken] {
		// As Step Functions does: a token's task closes at its first
		// answer, and any call with it after that is TaskTimedOut ("the
		// task associated with the token has already been closed").
		code, refused = "TaskTimedOut", true
	}
	broken := s.failNext > 0
	if broken {
		s.failNext--
	}
	status := http.StatusOK
	switch {
	case broken:
		status = http.StatusInternalServerError
	case refused:
		status = http.StatusBadRequest
	}
	s.calls = append(s.calls, Call{Op: op, Token: in.TaskToken, Output: in.Output, Error: in.Error, Cause: in.Cause, At: time.Now(), Status: status})
	if status == http.StatusOK && op != "SendTaskHeartbeat" {
		s.closed[in.TaskToken] = true
	}
	s.mu.Unlock()
	switch {
	case broken:
		fail(w, http.StatusInternalServerError, "ServiceUnavailable", "injected")
	case refused:
		fail(w, http.StatusBadRequest, code, "task token "+in.TaskToken+" is refused")
	default:
		w.Write([]byte("{}"))
	}
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.swf.service.v2.model#" + code, "message": msg})
}
