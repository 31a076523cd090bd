package perf

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Usage is what a store's calls cost DynamoDB (UnitsClient): the capacity
// units they consumed, table and indexes together, as DynamoDB bills them
// on demand, and the bytes that went each way.
type Usage struct {
	// Calls by operation, the event log's BatchWriteItem included.
	Calls map[string]int
	// ReadUnits and WriteUnits are read and write request units.
	ReadUnits, WriteUnits float64
	// BytesSent and BytesReceived are the request and response bodies.
	BytesSent, BytesReceived int64
}

// UnitsClient returns a copy of base that asks every call for the capacity
// it consumed (ReturnConsumedCapacity INDEXES) and sums it, with the calls
// and their bodies' bytes, into Usage.
func (c *Counter) UnitsClient(base *dynamodb.Client) *dynamodb.Client {
	opts := base.Options()
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), c.installUnits)
	return dynamodb.New(opts)
}

// Usage is what was counted by UnitsClient since the last Reset.
func (c *Counter) Usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.units
	u.Calls = map[string]int{}
	for k, v := range c.units.Calls {
		u.Calls[k] = v
	}
	return u
}

func (c *Counter) installUnits(stack *middleware.Stack) error {
	if err := stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("hitch-units-sent",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok && req.ContentLength > 0 {
				c.mu.Lock()
				c.units.BytesSent += req.ContentLength
				c.mu.Unlock()
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After); err != nil {
		return err
	}
	if err := stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("hitch-units-received",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.ContentLength > 0 {
				c.mu.Lock()
				c.units.BytesReceived += resp.ContentLength
				c.mu.Unlock()
			}
			return out, md, err
		}), middleware.After); err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hitch-units",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			idx := types.ReturnConsumedCapacityIndexes
			switch p := in.Parameters.(type) {
			case *dynamodb.GetItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.QueryInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.BatchGetItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.TransactGetItemsInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.PutItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.UpdateItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.DeleteItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.BatchWriteItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.TransactWriteItemsInput:
				p.ReturnConsumedCapacity = idx
			}
			out, md, err := next.HandleInitialize(ctx, in)
			spent := capacityOf(out.Result)
			op := middleware.GetOperationName(ctx)
			write := !strings.HasPrefix(op, "Get") && !strings.HasPrefix(op, "Query") &&
				!strings.HasPrefix(op, "BatchGet") && !strings.HasPrefix(op, "TransactGet")
			c.mu.Lock()
			if c.units.Calls == nil {
				c.units.Calls = map[string]int{}
			}
			c.units.Calls[op]++
			for _, cc := range spent {
				if write {
					c.units.WriteUnits += aws.ToFloat64(cc.CapacityUnits)
				} else {
					c.units.ReadUnits += aws.ToFloat64(cc.CapacityUnits)
				}
			}
			c.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// capacityOf is the capacity a call's output says it consumed (none when
// it was not asked for).
func capacityOf(result any) []types.ConsumedCapacity {
	one := func(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
		if cc == nil {
			return nil
		}
		return []types.ConsumedCapacity{*cc}
	}
	switch r := result.(type) {
	case *dynamodb.GetItemOutput:
		return one(r.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(r.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(r.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(r.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(r.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return r.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return r.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return r.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return r.ConsumedCapacity
	}
	return nil
}
