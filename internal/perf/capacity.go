package perf

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// IndexClient returns a copy of base that asks every write for the
// capacity it consumed per index (ReturnConsumedCapacity INDEXES) and sums
// the write units spent on each global secondary index: IndexWrites tells
// what a store's writes cost its indexes.
func (c *Counter) IndexClient(base *dynamodb.Client) *dynamodb.Client {
	opts := base.Options()
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), c.install, c.installCapacity)
	return dynamodb.New(opts)
}

func (c *Counter) installCapacity(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hitch-capacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			idx := types.ReturnConsumedCapacityIndexes
			switch p := in.Parameters.(type) {
			case *dynamodb.UpdateItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.PutItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.DeleteItemInput:
				p.ReturnConsumedCapacity = idx
			case *dynamodb.TransactWriteItemsInput:
				p.ReturnConsumedCapacity = idx
			}
			out, md, err := next.HandleInitialize(ctx, in)
			spent := capacityOf(out.Result)
			c.mu.Lock()
			if c.index == nil {
				c.index = map[string]float64{}
			}
			for _, cc := range spent {
				for name, u := range cc.GlobalSecondaryIndexes {
					units := aws.ToFloat64(u.CapacityUnits) + aws.ToFloat64(u.WriteCapacityUnits)
					if units > 0 {
						c.index[name] += units
					}
				}
			}
			c.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// IndexWrites is the write capacity spent on each global secondary index
// since the last Reset (IndexClient only).
func (c *Counter) IndexWrites() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for k, v := range c.index {
		out[k] = v
	}
	return out
}
