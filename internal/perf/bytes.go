package perf

import (
	"context"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// countBytes adds the length of the response body to its operation's bytes.
func (c *Counter) countBytes(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.ContentLength > 0 {
		op := middleware.GetOperationName(ctx)
		c.mu.Lock()
		c.bytes[op] += resp.ContentLength
		c.mu.Unlock()
	}
	return out, md, err
}

// ReadBytes is the length of the read calls' responses (Query, GetItem):
// what the reads brought back over the wire.
func (c *Counter) ReadBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes["Query"] + c.bytes["GetItem"]
}
