package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

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
func Direct(e *agent.Engine) lambdahttp.DirectFunc {
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
		deadline, _ := ctx.Deadline()
		wctx := context.WithoutCancel(ctx)
		run, err := e.StartInvoke(wctx, agent.InvokeInput{
			Agent: p.Agent, UserID: p.UserID, SessionID: p.SessionID, TaskID: p.TaskID,
			Items: p.Items, Metadata: p.Metadata, Deadline: deadline,
		})
		if err != nil {
			var ae *agent.Error
			if errors.As(err, &ae) {
				return nil, lambdahttp.Refusal(ae.Code, ae.Message)
			}
			e.Log.Error("direct invoke failed", "err", err)
			return nil, lambdahttp.Refusal(agent.CodeInternal, "the request could not be started")
		}
		return run.Execute(wctx, agent.Discard), nil
	}
}
