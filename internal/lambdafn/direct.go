package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// DirectPayload is a direct invocation of the invoke function by Step
// Functions or another Lambda.
type DirectPayload struct {
	Agent          string            `json:"agent"`
	UserID         string            `json:"user_id"`
	SessionID      string            `json:"session_id,omitempty"`
	TaskID         string            `json:"task_id,omitempty"`
	Items          []agent.InputItem `json:"items"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
}

// Direct answers direct invocations: the RequestResult for every outcome
// (Completed, Paused, Failed, Canceled); a refusal is a function error whose
// errorType is Hitch.<code>, so a state machine can Retry or Catch it.
//
// The caller of a direct invocation is trusted by IAM (lambda:InvokeFunction
// on this function), so the payload names the user.
func Direct(e *agent.Engine) lambdahttp.DirectFunc {
	log := e.Log
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p DirectPayload
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, "the payload must be {agent, user_id, session_id?, task_id?, items, metadata?, idempotency_key?}: "+err.Error())
		}
		if p.UserID == "" {
			return nil, lambdahttp.Refusal(agent.CodeUnauthenticated, "user_id is required")
		}
		var idem *agent.Idempotency
		if p.IdempotencyKey != "" {
			idem = &agent.Idempotency{Key: p.IdempotencyKey, BodyHash: p.bodyHash()}
		}
		deadline, _ := ctx.Deadline()
		// The request outlives its caller: the commit happens even if the
		// invocation's context ends (DESIGN §2).
		wctx := context.WithoutCancel(ctx)
		run, err := e.StartInvoke(wctx, agent.InvokeInput{
			Agent: p.Agent, UserID: p.UserID, SessionID: p.SessionID, TaskID: p.TaskID,
			Items: p.Items, Metadata: p.Metadata, Deadline: deadline, Idem: idem,
		})
		if err != nil {
			var ae *agent.Error
			if errors.As(err, &ae) {
				return nil, lambdahttp.Refusal(ae.Code, ae.Message)
			}
			log.Error("direct invoke failed", "err", err)
			return nil, lambdahttp.Refusal(agent.CodeInternal, "the request could not be started")
		}
		return run.Execute(wctx, agent.Discard), nil
	}
}

// bodyHash identifies the call for its idempotency key as the HTTP invoke
// it stands for: the same key and message over HTTP or direct are one call.
func (p *DirectPayload) bodyHash() string {
	return agent.MessageHash(p.SessionID, p.TaskID, p.Items, p.Metadata)
}
