// Package bedrock is the agent.Model of Amazon Bedrock: one ConverseStream
// call per model turn through aws-sdk-go-v2's bedrockruntime client.
//
// Converse maps the domain's messages and blocks to Bedrock content blocks
// (reasoning sent back verbatim with its signature or redacted bytes, tool
// input and JSON results as documents), streams text and reasoning deltas to
// the caller as they arrive, joins tool input sent in fragments, and
// translates errors at the boundary into *agent.Error codes: throttled,
// context_window_exceeded, model_error. A canceled context returns the
// context's error.
//
// The subpackage bedrockwire is the server side of the same wire protocol;
// fakebedrock (tests) and the local model are built on it.
package bedrock

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Model calls Bedrock's ConverseStream.
type Model struct {
	client *bedrockruntime.Client
}

var _ agent.Model = (*Model)(nil)

// New returns a Model using client, which carries the region, credentials,
// retry policy and endpoint.
func New(client *bedrockruntime.Client) *Model {
	return &Model{client: client}
}

// Converse streams one model turn. See agent.Model.
func (m *Model) Converse(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	if on == nil {
		on = func(agent.Delta) {}
	}
	in, err := converseInput(req)
	if err != nil {
		return nil, err
	}
	out, err := m.client.ConverseStream(ctx, in, ownCodec)
	if err != nil {
		return nil, translate(ctx, err)
	}
	stream := out.GetStream()
	defer stream.Close()
	resp, err := readStream(ctx, stream, on)
	if err != nil {
		return nil, err
	}
	if resp.StopReason == agent.StopContextWindow {
		return nil, &agent.Error{Code: agent.CodeContextWindowExceeded, Message: fmt.Sprintf("the conversation no longer fits the context window of model %s", req.ModelID)}
	}
	return resp, nil
}

// ownCodec gives the call a protocol of its own. The client's restJson1
// protocol holds one event-stream decoder and payload buffer, shared by every
// stream the client reads at once (smithy-go v1.28: a data race that mixes up
// concurrent streams' events). A protocol per call keeps each stream's
// decoding to itself.
func ownCodec(o *bedrockruntime.Options) {
	o.Protocol = restjson1.New(schemas.AmazonBedrockFrontendService)
}
