package bedrock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/hitch-agents/hitch/internal/agent"
)

// defaultRetryAfter is advised when throttling comes without a Retry-After.
const defaultRetryAfter = 2

// maxMessage bounds the part of Bedrock's message that is passed on.
const maxMessage = 300

// translate maps an SDK error to the domain: *agent.Error with code
// throttled, context_window_exceeded or model_error, or the context's error.
// Bedrock's messages describe the request (never credentials) and are passed
// on, cut short, with the exception's name and the AWS request id.
func translate(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return &agent.Error{Code: agent.CodeModelError, Message: "the model could not be reached or its answer could not be read" + requestID(err)}
	}
	code, msg := api.ErrorCode(), cut(api.ErrorMessage())
	switch strings.ToLower(code) {
	case "throttlingexception", "servicequotaexceededexception", "toomanyrequestsexception":
		return &agent.Error{
			Code:       agent.CodeThrottled,
			Message:    fmt.Sprintf("the model is throttled (%s): %s%s", code, msg, requestID(err)),
			RetryAfter: retryAfter(err),
		}
	case "validationexception":
		if tooLong(msg) {
			return &agent.Error{Code: agent.CodeContextWindowExceeded, Message: "the conversation is too long for the model: " + msg + requestID(err)}
		}
	}
	return &agent.Error{Code: agent.CodeModelError, Message: fmt.Sprintf("the model failed (%s): %s%s", code, msg, requestID(err))}
}

// tooLong recognises Bedrock's and the providers' wordings of an input over
// the context window.
func tooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"too long", "too many input tokens", "too many tokens", "context window", "context length", "maximum context", "prompt is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func retryAfter(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		h := re.Response.Header.Get("Retry-After")
		if s, perr := strconv.Atoi(strings.TrimSpace(h)); perr == nil && s > 0 {
			return s
		}
		if t, perr := http1Date(h); perr == nil {
			if s := int(time.Until(t).Seconds() + 0.999); s > 0 {
				return s
			}
		}
	}
	return defaultRetryAfter
}

func http1Date(s string) (time.Time, error) { return time.Parse(time.RFC1123, s) }

func requestID(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.ServiceRequestID() != "" {
		return " (request id " + re.ServiceRequestID() + ")"
	}
	return ""
}

func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	r := []rune(s)
	if len(r) <= maxMessage {
		return s
	}
	return string(r[:maxMessage]) + "…"
}
