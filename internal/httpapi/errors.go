package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/hitch-agents/hitch/internal/agent"
)

// statusOf is the one table mapping error codes to HTTP statuses (docs/api.md).
var statusOf = map[string]int{
	agent.CodeInvalidJSON:           http.StatusBadRequest,
	agent.CodeUnknownField:          http.StatusBadRequest,
	agent.CodeInvalidID:             http.StatusBadRequest,
	agent.CodeInvalidItems:          http.StatusBadRequest,
	agent.CodeInvalidContentType:    http.StatusBadRequest,
	agent.CodeInvalidImage:          http.StatusBadRequest,
	agent.CodeInvalidMetadata:       http.StatusBadRequest,
	agent.CodeSessionMismatch:       http.StatusBadRequest,
	agent.CodeInvalidAction:         http.StatusBadRequest,
	agent.CodeInvalidDecisions:      http.StatusBadRequest,
	agent.CodeRoundRequired:         http.StatusBadRequest,
	agent.CodeInvalidInput:          http.StatusBadRequest,
	agent.CodeInvalidLastEventID:    http.StatusBadRequest,
	agent.CodeInvalidIdempotencyKey: http.StatusBadRequest,
	agent.CodeInvalidQuery:          http.StatusBadRequest,
	agent.CodeUnauthenticated:       http.StatusUnauthorized,
	agent.CodeNotOwner:              http.StatusUnauthorized,
	agent.CodeForbidden:             http.StatusForbidden,
	agent.CodeNotApprover:           http.StatusForbidden,
	agent.CodeAgentNotFound:         http.StatusNotFound,
	agent.CodeTaskNotFound:          http.StatusNotFound,
	agent.CodeRequestNotFound:       http.StatusNotFound,
	agent.CodeSessionNotFound:       http.StatusNotFound,
	agent.CodeArtifactNotFound:      http.StatusNotFound,
	agent.CodeRouteNotFound:         http.StatusNotFound,
	agent.CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	agent.CodeTaskBusy:              http.StatusConflict,
	agent.CodeTaskPaused:            http.StatusConflict,
	agent.CodeNotPaused:             http.StatusConflict,
	agent.CodeDecisionConflict:      http.StatusConflict,
	agent.CodeNotRunning:            http.StatusConflict,
	agent.CodeRequestSuperseded:     http.StatusConflict,
	agent.CodeApprovalExpired:       http.StatusGone,
	agent.CodeInputExpired:          http.StatusGone,
	agent.CodeEventsExpired:         http.StatusGone,
	agent.CodeBodyTooLarge:          http.StatusRequestEntityTooLarge,
	agent.CodeQuotaExceeded:         http.StatusRequestEntityTooLarge,
	agent.CodeIdempotencyKeyReused:  http.StatusUnprocessableEntity,
	agent.CodeThrottled:             http.StatusTooManyRequests,
	agent.CodeInternal:              http.StatusInternalServerError,
	agent.CodeModelError:            http.StatusBadGateway,
	agent.CodeRemoteUnavailable:     http.StatusBadGateway,
	agent.CodeContextWindowExceeded: http.StatusBadGateway,
	agent.CodeDeadlineExceeded:      http.StatusGatewayTimeout,
	// A request lost to an expired lease is reported like an internal failure.
	agent.CodeLeaseExpired:   http.StatusInternalServerError,
	agent.CodeOutcomeUnknown: http.StatusInternalServerError,
	// A duplicate that waited for a request whose process died: try again
	// (Retry-After) to take it over.
	agent.CodeRequestLost: http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status of an error code; unknown codes are 500.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error agent.ErrorInfo `json:"error"`
}

// writeError answers err as the error body of docs/api.md. An error that is not
// an *agent.Error is internal: it is logged, and its text never shown.
// writeError answers err as the error body; an internal error is logged with
// the request's context (its trace and ids) and never shown.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var e *agent.Error
	if !errors.As(err, &e) {
		log.ErrorContext(r.Context(), "internal error", "err", err)
		e = &agent.Error{Code: agent.CodeInternal, Message: "the server failed to handle the request; it has been logged"}
	}
	if e.Code == agent.CodeThrottled || e.Code == agent.CodeRequestLost {
		ra := e.RetryAfter
		if ra <= 0 {
			ra = 1
		}
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	writeJSON(w, StatusOf(e.Code), errorBody{agent.ErrorInfo{Code: e.Code, Message: e.Message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"the answer could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
