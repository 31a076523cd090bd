package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Sentinel errors returned by stores and adapters. They are wrapped with the
// operation that failed; the edge maps them with errors.Is.
var (
	// ErrNotFound: the item does not exist (or its ttl has passed).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost a race. A *ConflictError carries
	// the item as it is now, when the store could read it.
	ErrConflict = errors.New("conflict")
	// ErrSessionOwner: the session exists and belongs to another user.
	ErrSessionOwner = errors.New("session owned by another user")
	// ErrIdemExists: an idempotency key is already bound.
	ErrIdemExists = errors.New("idempotency key already bound")
	// ErrQuotaExceeded: an addition to a user's artifact bytes would pass
	// their quota (Store.AddArtifactBytes).
	ErrQuotaExceeded = errors.New("artifact quota exceeded")
)

// ConflictError is returned by Store.Write when a condition failed. Current is
// the task META as the store saw it (ALL_OLD), or nil if it does not exist.
type ConflictError struct {
	Current *Task
}

func (e *ConflictError) Error() string { return "conflict: the task changed" }

// Unwrap lets errors.Is(err, ErrConflict) match.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Error is an error a client may see: a stable snake_case code (docs/api.md) and
// a sentence that helps. Its text never carries an internal error's text.
type Error struct {
	Code    string
	Message string
	// RetryAfter, in seconds, for throttled.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Codes of docs/api.md. The HTTP status of each lives in one table at the edge
// (httpapi.StatusOf).
const (
	CodeInvalidJSON           = "invalid_json"
	CodeUnknownField          = "unknown_field"
	CodeInvalidID             = "invalid_id"
	CodeInvalidItems          = "invalid_items"
	CodeInvalidContentType    = "invalid_content_type"
	CodeInvalidImage          = "invalid_image"
	CodeInvalidMetadata       = "invalid_metadata"
	CodeSessionMismatch       = "session_mismatch"
	CodeInvalidAction         = "invalid_action"
	CodeInvalidDecisions      = "invalid_decisions"
	CodeRoundRequired         = "round_required"
	CodeInvalidInput          = "invalid_input"
	CodeInvalidLastEventID    = "invalid_last_event_id"
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	CodeInvalidQuery          = "invalid_query"
	CodeUnauthenticated       = "unauthenticated"
	CodeNotOwner              = "not_owner"
	CodeForbidden             = "forbidden"
	// CodeNotApprover (403): a party of a request deciding a call its
	// policy does not let them decide (approvers.go).
	CodeNotApprover      = "not_approver"
	CodeAgentNotFound    = "agent_not_found"
	CodeTaskNotFound     = "task_not_found"
	CodeRequestNotFound  = "request_not_found"
	CodeSessionNotFound  = "session_not_found"
	CodeArtifactNotFound = "artifact_not_found"
	// CodeQuotaExceeded (413) is a save past the user's artifact quota;
	// it reaches the model as the save's error result.
	CodeQuotaExceeded        = "quota_exceeded"
	CodeRouteNotFound        = "route_not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeTaskBusy             = "task_busy"
	CodeTaskPaused           = "task_paused"
	CodeNotPaused            = "not_paused"
	CodeDecisionConflict     = "decision_conflict"
	CodeNotRunning           = "not_running"
	CodeRequestSuperseded    = "request_superseded"
	CodeApprovalExpired      = "approval_expired"
	CodeInputExpired         = "input_expired"
	CodeEventsExpired        = "events_expired"
	CodeBodyTooLarge         = "body_too_large"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeThrottled            = "throttled"
	CodeInternal             = "internal"
	CodeModelError           = "model_error"
	// CodeRemoteUnavailable: a decision for a remote A2A agent's call could
	// not reach it; nothing changed (docs/architecture.md and docs/api.md).
	CodeRemoteUnavailable     = "remote_unavailable"
	CodeContextWindowExceeded = "context_window_exceeded"
	CodeDeadlineExceeded      = "deadline_exceeded"
	CodeLeaseExpired          = "lease_expired"
	CodeRequestLost           = "request_lost"
	CodeOutcomeUnknown        = "outcome_unknown"
)

// CodeOf returns the client-visible code of err: its *Error's code, or
// internal for anything else.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// jsonProblem says in words what is wrong with JSON that did not decode,
// never naming the Go types it was decoded into (encoding/json's own texts
// do: "json: cannot unmarshal string into Go value of type struct {…}").
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		what := "the value"
		if te.Field != "" {
			what = te.Field
		}
		return fmt.Sprintf("%s must be a JSON %s, not a JSON %s", what, jsonKindOf(te.Type), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "not valid JSON"
}

// jsonKindOf is the JSON kind a Go type decodes from.
func jsonKindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	}
	return "value"
}

// wrap adds to an internal error an entry point returns the operation and
// its ids (pkgsite's derrors.Wrap), so that a log line says what failed
// where. A client's *Error is its answer as it stands, and the engine's
// own signals (ErrBusy, ErrWaiting) are compared as they are.
func wrap(errp *error, format string, args ...any) {
	err := *errp
	var ae *Error
	if err == nil || errors.As(err, &ae) || err == ErrBusy || err == ErrWaiting {
		return
	}
	*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
