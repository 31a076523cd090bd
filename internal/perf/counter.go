package perf

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts a DynamoDB client's calls by operation and sums their time.
type Counter struct {
	mu    sync.Mutex
	calls map[string]int
	spent time.Duration
	// bytes sums the response bodies' lengths by operation.
	bytes map[string]int64
	// index sums the write units spent on each index (IndexClient).
	index map[string]float64
	// units is what UnitsClient counts.
	units Usage
}

// NewCounter returns a counter.
func NewCounter() *Counter { return &Counter{calls: map[string]int{}, bytes: map[string]int64{}} }

// Client returns a copy of base that reports to the counter.
func (c *Counter) Client(base *dynamodb.Client) *dynamodb.Client {
	opts := base.Options()
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), c.install)
	return dynamodb.New(opts)
}

func (c *Counter) install(stack *middleware.Stack) error {
	if err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("hitch-count-bytes", c.countBytes), middleware.After); err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hitch-count",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			op := middleware.GetOperationName(ctx)
			c.mu.Lock()
			c.calls[op]++
			c.spent += time.Since(start)
			c.mu.Unlock()
			return out, md, err
		}), middleware.Before)
}

// Reset forgets what was counted.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
	c.bytes = map[string]int64{}
	c.index = map[string]float64{}
	c.units = Usage{}
	c.spent = 0
}

// Calls returns the calls by operation, less the event log's BatchWriteItem
// (not counted, docs/architecture.md), and their total.
func (c *Counter) Calls() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	total := 0
	for op, n := range c.calls {
		if op == "BatchWriteItem" {
			continue
		}
		out[op] = n
		total += n
	}
	return out, total
}

// Spent is the time spent in DynamoDB calls.
func (c *Counter) Spent() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spent
}
