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
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Model calls Bedrock's ConverseStream.
type Model struct {
	client *bedrockruntime.Client
	log    *slog.Logger
	// uncached holds the model ids whose cache points Bedrock refused:
	// this process sends them none any more.
	uncached sync.Map
}

var _ agent.Model = (*Model)(nil)

// Option sets up a Model.
type Option func(*Model)

// WithLog sets the logger (default slog.Default()).
func WithLog(log *slog.Logger) Option { return func(m *Model) { m.log = log } }

// New returns a Model using client, which carries the region, credentials,
// retry policy and endpoint.
func New(client *bedrockruntime.Client, opts ...Option) *Model {
	m := &Model{client: client, log: slog.Default()}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Converse streams one model turn. See agent.Model.
//
// With req.CacheTTL set the request carries cache points (cachePoint). A
// request Bedrock refuses for them is sent again at once without them, and
// this Model sends none for that model id again: a model without prompt
// caching costs one refused call per process, not a failed request.
func (m *Model) Converse(ctx context.Context, req *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
	if on == nil {
		on = func(agent.Delta) {}
	}
	cache := cachePoint(req.CacheTTL)
	if _, off := m.uncached.Load(req.ModelID); off {
		cache = nil
	}
	in, err := converseInput(req, cache)
	if err != nil {
		return nil, err
	}
	out, err := m.client.ConverseStream(ctx, in, ownCodec)
	if err != nil && cache != nil && cacheRefused(err) && ctx.Err() == nil {
		m.uncached.Store(req.ModelID, true)
		m.log.WarnContext(ctx, "bedrock refused the request's cache points: prompt caching is off for this model in this process",
			"model", req.ModelID, "err", translate(ctx, err))
		if in, err = converseInput(req, nil); err != nil {
			return nil, err
		}
		out, err = m.client.ConverseStream(ctx, in, ownCodec)
	}
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
