package a2a

import (
	"context"
	"errors"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/hitch-agents/hitch/internal/agent"
)

// protoErr builds the A2A error for sentinel with the Hitch code in its
// ErrorInfo's metadata (docs/api.md Errors).
func protoErr(sentinel error, code, message string) *a2a.Error {
	return &a2a.Error{Err: sentinel, Message: message, TypedDetails: []*errordetails.Typed{
		errordetails.NewErrorInfo(a2a.ErrorReason(sentinel), a2a.ProtocolDomain, map[string]string{"code": code}),
	}}
}

// invalidParams is -32602 with a Hitch code.
func invalidParams(code, message string) *a2a.Error {
	return protoErr(a2a.ErrInvalidParams, code, message)
}

// taskNotFound is -32001: unknown, or another user's (never revealed).
func taskNotFound(id string) *a2a.Error {
	return protoErr(a2a.ErrTaskNotFound, agent.CodeTaskNotFound, "no task "+id)
}

// toProto maps an engine error to the A2A error a client sees. Internal
// errors are logged and answered without their text.
func toProto(err error, log *slog.Logger, id string) error {
	if pe := (*a2a.Error)(nil); errors.As(err, &pe) {
		return err // already the protocol's (a reply that is no decision)
	}
	var e *agent.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) {
			// The caller went away (its process died, it gave up): its
			// call ended, not this server.
			log.Info("a2a: the caller went away before the answer", "err", err)
			return protoErr(a2a.ErrInternalError, agent.CodeInternal, "the caller went away")
		}
		log.Error("a2a: internal error", "err", err)
		return protoErr(a2a.ErrInternalError, agent.CodeInternal, "the request could not be completed; it is logged")
	}
	switch e.Code {
	case agent.CodeTaskNotFound, agent.CodeRequestNotFound, agent.CodeNotOwner, agent.CodeSessionNotFound:
		return taskNotFound(id)
	case agent.CodeNotRunning:
		return protoErr(a2a.ErrTaskNotCancelable, e.Code, e.Message)
	case agent.CodeInvalidContentType, agent.CodeInvalidImage:
		return protoErr(a2a.ErrUnsupportedContentType, e.Code, e.Message)
	case agent.CodeTaskBusy, agent.CodeTaskPaused, agent.CodeNotPaused, agent.CodeDecisionConflict,
		agent.CodeRequestSuperseded, agent.CodeApprovalExpired, agent.CodeInputExpired, agent.CodeEventsExpired, agent.CodeIdempotencyKeyReused:
		return protoErr(a2a.ErrUnsupportedOperation, e.Code, e.Message)
	case agent.CodeInternal:
		return protoErr(a2a.ErrInternalError, e.Code, e.Message)
	}
	if len(e.Code) > 0 && isClientCode(e.Code) {
		return invalidParams(e.Code, e.Message)
	}
	return protoErr(a2a.ErrInternalError, e.Code, e.Message)
}

// isClientCode tells the 400 codes of docs/api.md, which are invalid params.
func isClientCode(code string) bool {
	switch code {
	case agent.CodeInvalidJSON, agent.CodeUnknownField, agent.CodeInvalidID, agent.CodeInvalidItems,
		agent.CodeInvalidMetadata, agent.CodeSessionMismatch, agent.CodeInvalidAction, agent.CodeInvalidDecisions,
		agent.CodeRoundRequired, agent.CodeInvalidInput, agent.CodeInvalidQuery, agent.CodeInvalidLastEventID,
		agent.CodeInvalidIdempotencyKey:
		return true
	}
	return false
}
