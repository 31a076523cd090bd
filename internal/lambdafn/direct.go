package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// DirectPayload is a direct invocation of the invoke function by Step
// Functions, a durable function or another Lambda (docs/architecture.md): Op is
// invoke (the default), resume, cancel or get.
type DirectPayload struct {
	Op             string            `json:"op,omitempty"`
	Agent          string            `json:"agent"`
	UserID         string            `json:"user_id"`
	SessionID      string            `json:"session_id,omitempty"`
	TaskID         string            `json:"task_id,omitempty"`
	RequestID      string            `json:"request_id,omitempty"`
	Items          []agent.InputItem `json:"items,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	// resume: the ResumeRequest's fields.
	Action    string                `json:"action,omitempty"`
	Round     *int                  `json:"round,omitempty"`
	Reason    string                `json:"reason,omitempty"`
	Decisions []agent.DecisionInput `json:"decisions,omitempty"`
	Remember  string                `json:"remember,omitempty"`
	// invoke and resume: who waits for the end (docs/architecture.md).
	TaskToken  *string `json:"task_token,omitempty"`
	CallbackID *string `json:"callback_id,omitempty"`
	OnPause    *string `json:"on_pause,omitempty"`
}

// Direct operations.
const (
	OpInvoke = "invoke"
	OpResume = "resume"
	OpCancel = "cancel"
	OpGet    = "get"
)

// opFields are the fields each op takes, required ones first.
var opFields = map[string]struct{ required, optional []string }{
	OpInvoke: {[]string{"agent", "user_id", "items"}, []string{"op", "session_id", "task_id", "metadata", "idempotency_key", "task_token", "callback_id", "on_pause"}},
	OpResume: {[]string{"agent", "user_id", "task_id", "request_id"}, []string{"op", "action", "decisions", "round", "reason", "remember", "idempotency_key", "task_token", "callback_id", "on_pause"}},
	OpCancel: {[]string{"agent", "user_id", "task_id"}, []string{"op", "reason"}},
	OpGet:    {[]string{"agent", "user_id", "task_id"}, []string{"op"}},
}

// callbackID is the Lambda API's CallbackId: 1 to 1,024 characters of
// [A-Za-z0-9+/]+={0,2} (API_SendDurableExecutionCallbackSuccess).
var callbackID = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,2}$`)

// maxTaskToken is Step Functions' longest task token.
const maxTaskToken = 1024

// Direct answers direct invocations: the RequestResult for every outcome of
// invoke and resume (Completed, Paused, Failed, Canceled), the cancel
// route's answer for cancel, the task view for get; a refusal is a function
// error whose errorType is Hitch.<code>, so a state machine can Retry or
// Catch it.
//
// The caller of a direct invocation is trusted by IAM (lambda:InvokeFunction
// on this function), so the payload names the user.
func Direct(e *agent.Engine) lambdahttp.DirectFunc {
	log := e.Log
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		p, err := parseDirect(raw)
		if err != nil {
			return nil, err
		}
		deadline, _ := ctx.Deadline()
		// The request outlives its caller: the commit happens even if the
		// invocation's context ends (docs/architecture.md).
		wctx := context.WithoutCancel(ctx)
		var run agent.Leg
		switch p.Op {
		case OpInvoke:
			run, err = e.StartInvoke(wctx, agent.InvokeInput{
				Agent: p.Agent, UserID: p.UserID, SessionID: p.SessionID, TaskID: p.TaskID,
				Items: p.Items, Metadata: p.Metadata, Deadline: deadline, Idem: p.idem(p.bodyHash()), Waiter: p.waiter(),
			})
		case OpResume:
			run, err = e.StartResume(wctx, agent.ResumeInput{
				Agent: p.Agent, UserID: p.UserID, Via: "direct", TaskID: p.TaskID, RequestID: p.RequestID, Body: p.resumeRequest(),
				Deadline: deadline, Idem: p.idem(p.resumeHash()), Waiter: p.waiter(),
			})
		case OpCancel:
			var out *agent.CancelOutcome
			if out, err = e.Cancel(wctx, agent.CancelInput{Agent: p.Agent, UserID: p.UserID, TaskID: p.TaskID, Reason: p.Reason}); err == nil {
				if out.Pending {
					return CancelPending{RequestID: out.RequestID, Status: agent.StatusRunning, CancelRequested: true}, nil
				}
				return out.Result, nil
			}
		case OpGet:
			var v *agent.TaskView
			if v, err = e.GetTask(ctx, p.Agent, p.UserID, p.TaskID, agent.ViewOptions{Limit: agent.DefaultItemLimit}); err == nil {
				return v, nil
			}
		}
		if err != nil {
			var ae *agent.Error
			if errors.As(err, &ae) {
				return nil, lambdahttp.Refusal(ae.Code, ae.Message)
			}
			log.Error("direct "+p.Op+" failed", "err", err)
			return nil, lambdahttp.Refusal(agent.CodeInternal, "the request could not be started")
		}
		return run.Execute(wctx, agent.Discard), nil
	}
}

// CancelPending is a cancel's answer while the request still runs (the
// HTTP route's 202 body).
type CancelPending struct {
	RequestID       string       `json:"request_id"`
	Status          agent.Status `json:"status"`
	CancelRequested bool         `json:"cancel_requested"`
}

// parseDirect decodes and checks a payload: its op, the op's fields, the
// waiter's. Every refusal is Hitch.invalid_json (Hitch.unauthenticated
// without a user), saying what the op expects.
func parseDirect(raw json.RawMessage) (*DirectPayload, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, "the payload must be a JSON object {op?, agent, user_id, …}: "+errText(err))
	}
	var p DirectPayload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, "the payload does not decode: "+err.Error()+"; "+expects(p.Op))
	}
	if p.Op == "" {
		p.Op = OpInvoke
	}
	spec, ok := opFields[p.Op]
	if !ok {
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("op %q is not one of invoke, resume, cancel, get", p.Op))
	}
	if _, ok := fields["user_id"]; !ok || p.UserID == "" {
		return nil, lambdahttp.Refusal(agent.CodeUnauthenticated, "user_id is required")
	}
	var missing, extra []string
	for _, f := range spec.required {
		if _, ok := fields[f]; !ok {
			missing = append(missing, f)
		}
	}
	for f := range fields {
		if !slices.Contains(spec.required, f) && !slices.Contains(spec.optional, f) {
			extra = append(extra, f)
		}
	}
	sort.Strings(extra)
	switch {
	case len(missing) > 0:
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("op %s: %s missing; %s", p.Op, strings.Join(missing, ", "), expects(p.Op)))
	case len(extra) > 0:
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("op %s does not take %s; %s", p.Op, strings.Join(extra, ", "), expects(p.Op)))
	case p.Op == OpResume && p.Action == "" && len(p.Decisions) == 0:
		return nil, lambdahttp.Refusal(agent.CodeInvalidJSON, "op resume needs action or decisions; "+expects(p.Op))
	}
	if err := p.checkWaiter(); err != nil {
		return nil, err
	}
	return &p, nil
}

// expects says what an op's payload is.
func expects(op string) string {
	switch op {
	case OpResume:
		return "op resume takes {op, agent, user_id, task_id, request_id, action | decisions, round?, reason?, remember?, idempotency_key?, task_token | callback_id?, on_pause?}"
	case OpCancel:
		return "op cancel takes {op, agent, user_id, task_id, reason?}"
	case OpGet:
		return "op get takes {op, agent, user_id, task_id}"
	}
	return "op invoke (the default) takes {op?, agent, user_id, session_id?, task_id?, items, metadata?, idempotency_key?, task_token | callback_id?, on_pause?}"
}

func errText(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// checkWaiter checks task_token, callback_id and on_pause (docs/architecture.md).
func (p *DirectPayload) checkWaiter() error {
	switch {
	case p.TaskToken != nil && p.CallbackID != nil:
		return lambdahttp.Refusal(agent.CodeInvalidJSON, "task_token and callback_id are exclusive: a request answers a Step Functions task or a durable execution")
	case p.TaskToken != nil && (*p.TaskToken == "" || len(*p.TaskToken) > maxTaskToken):
		return lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("task_token must have 1 to %d characters, it has %d", maxTaskToken, len(*p.TaskToken)))
	case p.CallbackID != nil && (len(*p.CallbackID) == 0 || len(*p.CallbackID) > 1024 || !callbackID.MatchString(*p.CallbackID)):
		return lambdahttp.Refusal(agent.CodeInvalidJSON, "callback_id must be 1 to 1,024 characters of [A-Za-z0-9+/] ending in at most two '=' (the Lambda API's CallbackId)")
	case p.OnPause != nil && p.TaskToken == nil && p.CallbackID == nil:
		return lambdahttp.Refusal(agent.CodeInvalidJSON, "on_pause goes with a task_token or a callback_id")
	case p.OnPause != nil && *p.OnPause != agent.OnPauseWait && *p.OnPause != agent.OnPauseReturn:
		return lambdahttp.Refusal(agent.CodeInvalidJSON, fmt.Sprintf("on_pause must be %q or %q, not %q", agent.OnPauseWait, agent.OnPauseReturn, *p.OnPause))
	}
	return nil
}

func (p *DirectPayload) waiter() *agent.Waiter {
	w := &agent.Waiter{OnPause: agent.OnPauseWait}
	switch {
	case p.TaskToken != nil:
		w.Kind, w.ID = agent.WaiterTaskToken, *p.TaskToken
	case p.CallbackID != nil:
		w.Kind, w.ID = agent.WaiterCallback, *p.CallbackID
	default:
		return nil
	}
	if p.OnPause != nil {
		w.OnPause = *p.OnPause
	}
	return w
}

func (p *DirectPayload) idem(hash string) *agent.Idempotency {
	if p.IdempotencyKey == "" {
		return nil
	}
	return &agent.Idempotency{Key: p.IdempotencyKey, BodyHash: hash}
}

func (p *DirectPayload) resumeRequest() agent.ResumeRequest {
	return agent.ResumeRequest{Action: p.Action, Round: p.Round, Reason: p.Reason, Decisions: p.Decisions, Remember: p.Remember}
}

// bodyHash identifies the call for its idempotency key as the HTTP invoke
// it stands for: the same key and message over HTTP or direct are one call.
func (p *DirectPayload) bodyHash() string {
	return agent.MessageHash(p.SessionID, p.TaskID, p.Items, p.Metadata)
}

// resumeHash identifies a resume for its idempotency key: its ids and its
// decision.
func (p *DirectPayload) resumeHash() string {
	body, _ := json.Marshal(p.resumeRequest())
	return agent.BodyHash([]string{p.TaskID, p.RequestID}, body)
}
