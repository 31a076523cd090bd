// Package durable answers Lambda durable executions' callbacks (docs/architecture.md):
// a request's end (or a pause, with on_pause "return") through
// SendDurableExecutionCallbackSuccess or SendDurableExecutionCallbackFailure,
// a waiting request's state changes through
// SendDurableExecutionCallbackHeartbeat. It is the notifier's
// notify.Answerer for callback ids.
package durable

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/stepfunctions"
)

// Client answers callbacks.
type Client struct {
	API *lambda.Client
}

var _ notify.Answerer = (*Client)(nil)

// New returns a Client of the configuration's Lambda API (its endpoint set
// by AWS_ENDPOINT_URL_LAMBDA, as the SDK reads it).
func New(cfg aws.Config) *Client { return &Client{API: lambda.NewFromConfig(cfg)} }

// Succeed sends the RequestResult as the callback's result (cut to fit
// 256 KB).
func (c *Client) Succeed(ctx context.Context, id string, res *agent.RequestResult) error {
	out, err := notify.ResultJSON(res, notify.MaxResultBytes)
	if err != nil {
		return err
	}
	_, err = c.API.SendDurableExecutionCallbackSuccess(ctx, &lambda.SendDurableExecutionCallbackSuccessInput{CallbackId: aws.String(id), Result: out})
	return err
}

// Fail sends Hitch.<code>, the message, and the RequestResult as the
// error's data.
func (c *Client) Fail(ctx context.Context, id string, res *agent.RequestResult) error {
	code, msg := stepfunctions.ErrorOf(res)
	data, err := notify.ResultJSON(res, notify.MaxResultBytes)
	if err != nil {
		return err
	}
	_, err = c.API.SendDurableExecutionCallbackFailure(ctx, &lambda.SendDurableExecutionCallbackFailureInput{CallbackId: aws.String(id),
		Error: &types.ErrorObject{ErrorType: aws.String(code), ErrorMessage: aws.String(msg), ErrorData: aws.String(string(data))}})
	return err
}

// Heartbeat tells the execution its request is alive.
func (c *Client) Heartbeat(ctx context.Context, id string) error {
	_, err := c.API.SendDurableExecutionCallbackHeartbeat(ctx, &lambda.SendDurableExecutionCallbackHeartbeatInput{CallbackId: aws.String(id)})
	return err
}

// Final tells the refusals retrying cannot cure: a timed-out, unknown or
// answered callback, or any other client error but throttling.
func (c *Client) Final(err error) bool {
	var to *types.CallbackTimeoutException
	var nf *types.ResourceNotFoundException
	var inv *types.InvalidParameterValueException
	if errors.As(err, &to) || errors.As(err, &nf) || errors.As(err, &inv) {
		return true
	}
	var tm *types.TooManyRequestsException
	if errors.As(err, &tm) {
		return false
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		st := re.HTTPStatusCode()
		return st >= 400 && st < 500 && st != http.StatusTooManyRequests
	}
	return false
}
