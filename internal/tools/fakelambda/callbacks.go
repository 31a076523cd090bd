package fakelambda

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Callback is a durable execution callback call the server received: its
// operation (succeed, fail, heartbeat), the callback id and the body (the
// result of a succeed, the ErrorObject of a fail).
type Callback struct {
	Op   string
	ID   string
	Body []byte
	// At is when the call came; Status the HTTP status it was answered
	// (200, or the refusal's or the injected failure's).
	At     time.Time
	Status int
}

// callbackPrefix is the durable callbacks' route (Lambda API 2025-12-01).
const callbackPrefix = "/2025-12-01/durable-execution-callbacks/"

// Refuse makes every later call about the callback id answer the Lambda
// API's error code (e.g. CallbackTimeoutException, 400;
// ResourceNotFoundException, 404), as for a timed-out or unknown callback.
func (s *Server) Refuse(id, code string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = map[string]refusal{}
	}
	s.refused[id] = refusal{code, status}
}

// FailNext makes the next n callback calls answer 500 ServiceException.
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// Callbacks returns the callback calls received so far (refused ones too).
func (s *Server) Callbacks() []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Callback(nil), s.callbacks...)
}

type refusal struct {
	code   string
	status int
}

// serveCallback answers the three callback routes: POST
// /2025-12-01/durable-execution-callbacks/{CallbackId}/(succeed|fail|heartbeat).
func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), callbackPrefix)
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, "/")
	if r.Method != http.MethodPost || i <= 0 {
		awsError(w, http.StatusNotFound, "UnknownOperationException", "unknown operation "+r.Method+" "+r.URL.Path)
		return true
	}
	id, err := url.PathUnescape(rest[:i])
	op := rest[i+1:]
	if err != nil || (op != "succeed" && op != "fail" && op != "heartbeat") {
		awsError(w, http.StatusNotFound, "UnknownOperationException", "unknown operation "+r.URL.Path)
		return true
	}
	if r.Header.Get("Authorization") == "" {
		awsError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "missing authentication token")
		return true
	}
	body, _ := io.ReadAll(r.Body)
	if op == "fail" && len(body) > 0 && !json.Valid(body) {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return true
	}
	s.mu.Lock()
	ref, refused := s.refused[id]
	fail := s.failNext > 0
	if fail {
		s.failNext--
	}
	status := http.StatusOK
	switch {
	case fail:
		status = http.StatusInternalServerError
	case refused:
		status = ref.status
	}
	s.callbacks = append(s.callbacks, Callback{Op: op, ID: id, Body: body, At: time.Now(), Status: status})
	s.mu.Unlock()
	switch {
	case fail:
		awsError(w, http.StatusInternalServerError, "ServiceException", "injected")
	case refused:
		awsError(w, ref.status, ref.code, "callback "+id+" is refused")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("{}"))
	}
	return true
}
