// Package stepfunctions answers Step Functions task tokens (docs/architecture.md): a
// request's end (or a pause, with on_pause "return") through SendTaskSuccess
// or SendTaskFailure, a waiting request's state changes through
// SendTaskHeartbeat. It is the notifier's notify.Answerer for task tokens.
package stepfunctions

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
)

// Limits of SendTaskFailure.
const (
	maxError = 256
	maxCause = 32768
)

// Client answers task tokens.
type Client struct {
	API *sfn.Client
}

var _ notify.Answerer = (*Client)(nil)

// New returns a Client of the configuration's Step Functions (its endpoint
// set by AWS_ENDPOINT_URL_SFN, as the SDK reads it).
func New(cfg aws.Config) *Client { return &Client{API: sfn.NewFromConfig(cfg)} }

// Succeed sends the RequestResult as the task's output (cut to fit 256 KB).
func (c *Client) Succeed(ctx context.Context, token string, res *agent.RequestResult) error {
	out, err := notify.ResultJSON(res, notify.MaxResultBytes)
	if err != nil {
		return err
	}
	_, err = c.API.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(out))})
	return err
}

// Fail sends Hitch.<code> and the message.
func (c *Client) Fail(ctx context.Context, token string, res *agent.RequestResult) error {
	code, msg := ErrorOf(res)
	_, err := c.API.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token),
		Error: aws.String(cut(code, maxError)), Cause: aws.String(cut(msg, maxCause))})
	return err
}

// Heartbeat tells the task its request is alive.
func (c *Client) Heartbeat(ctx context.Context, token string) error {
	_, err := c.API.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return err
}

// Final tells the refusals retrying cannot cure: an unknown, used or
// timed-out token, or any other client error but throttling.
func (c *Client) Final(err error) bool {
	var dne *types.TaskDoesNotExist
	var tto *types.TaskTimedOut
	var inv *types.InvalidToken
	var out *types.InvalidOutput
	if errors.As(err, &dne) || errors.As(err, &tto) || errors.As(err, &inv) || errors.As(err, &out) {
		return true
	}
	return clientError(err)
}

// ErrorOf is a failed or canceled request's error as a waiter gets it:
// Hitch.<code> and the message.
func ErrorOf(res *agent.RequestResult) (string, string) {
	if res.Error != nil {
		return "Hitch." + res.Error.Code, res.Error.Message
	}
	if res.Status == agent.StatusCanceled {
		return "Hitch.canceled", fmt.Sprintf("request %s was canceled", res.RequestID)
	}
	return "Hitch." + agent.CodeInternal, fmt.Sprintf("request %s ended %s", res.RequestID, res.Status)
}

// clientError tells a 4xx answer other than throttling.
func clientError(err error) bool {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	st := re.HTTPStatusCode()
	return st >= 400 && st < 500 && st != http.StatusTooManyRequests && !throttled(err)
}

func throttled(err error) bool {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ThrottlingException", "TooManyRequestsException", "Throttling", "RequestLimitExceeded":
			return true
		}
	}
	return false
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
