package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// LambdaInvoker invokes Lambda functions; *lambda.Client is one.
type LambdaInvoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ LambdaInvoker = (*lambda.Client)(nil)

// Lambda is a Lambda function as a tool.
type Lambda struct {
	client   LambdaInvoker
	function string
	spec     agent.ToolSpec
	schema   *Schema
	from     *S3Prefix
}

var (
	_ agent.Tool           = (*Lambda)(nil)
	_ agent.InputValidator = (*Lambda)(nil)
)

// LambdaConfig describes a Lambda function as a tool.
type LambdaConfig struct {
	// Function is the function's name or ARN, optionally qualified.
	Function    string
	Name        string
	Description string
	InputSchema *Schema
	// ArtifactsFrom, when set, is where the function's artifacts may name
	// objects (s3_uri); nil: only content_base64.
	ArtifactsFrom *S3Prefix
}

// NewLambda makes a Lambda function a tool.
func NewLambda(client LambdaInvoker, cfg LambdaConfig) (*Lambda, error) {
	if client == nil {
		return nil, errors.New("no Lambda client")
	}
	if cfg.InputSchema == nil {
		return nil, errors.New("no input schema")
	}
	spec := agent.ToolSpec{Name: cfg.Name, Description: cfg.Description, InputSchema: cfg.InputSchema.Raw()}
	if f := cfg.ArtifactsFrom; f != nil && f.Client == nil {
		return nil, errors.New("artifacts_from needs an S3 client")
	}
	return &Lambda{client: client, function: cfg.Function, spec: spec, schema: cfg.InputSchema, from: cfg.ArtifactsFrom}, nil
}

// Spec describes the tool.
func (t *Lambda) Spec() agent.ToolSpec { return t.spec }

// ValidateInput checks the input against the schema.
func (t *Lambda) ValidateInput(input json.RawMessage) error { return t.schema.Validate(input) }

// lambdaPayload is what the function receives (see the package doc).
type lambdaPayload struct {
	Input          json.RawMessage `json:"input"`
	ToolName       string          `json:"tool_name"`
	ToolCallID     string          `json:"tool_call_id"`
	RequestID      string          `json:"request_id"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// Run invokes the function and turns its answer into the result.
func (t *Lambda) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	if err := t.schema.Validate(call.Input); err != nil {
		return agent.ToolOutput{}, err
	}
	input := call.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	key := call.IdempotencyKey
	if key == "" {
		key = call.RequestID + "#" + call.ID
	}
	payload, err := json.Marshal(lambdaPayload{
		Input:          input,
		ToolName:       t.spec.Name,
		ToolCallID:     call.ID,
		RequestID:      call.RequestID,
		IdempotencyKey: key,
	})
	if err != nil {
		return agent.ToolOutput{}, fmt.Errorf("encode the payload: %v", err)
	}
	out, err := t.client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(t.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		return agent.ToolOutput{}, fmt.Errorf("invoke %s: %w", t.spec.Name, err)
	}
	if out.FunctionError != nil {
		return agent.ToolOutput{}, functionError(aws.ToString(out.FunctionError), out.Payload)
	}
	entries, rest, has, err := splitArtifacts(bytes.TrimSpace(out.Payload))
	if !has {
		return lambdaResult(out.Payload), nil
	}
	if err != nil {
		return agent.ToolOutput{}, err
	}
	if err := saveLambdaArtifacts(ctx, entries, t.from); err != nil {
		return agent.ToolOutput{}, err
	}
	if rest == nil {
		if len(entries) == 0 {
			return lambdaResult(out.Payload), nil
		}
		return agent.ToolOutput{}, nil // the engine names the artifacts
	}
	return lambdaResult(rest), nil
}

// functionError is the error of a function that failed: its errorMessage.
func functionError(kind string, payload []byte) error {
	var fe struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(payload, &fe) == nil && fe.ErrorMessage != "" {
		return errors.New(fe.ErrorMessage)
	}
	if s := strings.TrimSpace(string(payload)); s != "" {
		return fmt.Errorf("function error (%s): %s", kind, s)
	}
	return fmt.Errorf("function error (%s)", kind)
}

// lambdaResult turns a function's answer into blocks: a JSON string is
// text, another JSON value is json, null or nothing is the text "null".
func lambdaResult(payload []byte) agent.ToolOutput {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return text("null")
	}
	if !json.Valid(p) {
		return text(string(p))
	}
	if p[0] == '"' {
		var s string
		if err := json.Unmarshal(p, &s); err == nil {
			if s == "" {
				// Bedrock rejects blank text blocks.
				return text(`""`)
			}
			return text(s)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, p); err != nil {
		return text(string(p))
	}
	return agent.ToolOutput{Content: []agent.Block{{Type: agent.BlockJSON, JSON: compact.Bytes()}}}
}
