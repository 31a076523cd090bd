package dynamo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const (
	// batchSize is the most requests one BatchWriteItem takes.
	batchSize = 25
	// unprocessedRetries bounds the retries of a batch's unprocessed items.
	unprocessedRetries = 8
)

// batchWrite runs the requests in BatchWriteItem calls of at most 25,
// retrying the unprocessed ones with a short exponential backoff. It is not
// atomic: an error may leave some requests applied.
func (st *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for chunk := range slices.Chunk(reqs, batchSize) {
		pending := map[string][]types.WriteRequest{st.table: chunk}
		for attempt := 0; len(pending[st.table]) > 0; attempt++ {
			if attempt > unprocessedRetries {
				return fmt.Errorf("BatchWriteItem: %d requests still unprocessed", len(pending[st.table]))
			}
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(10<<min(attempt, 6)) * time.Millisecond):
				}
			}
			out, err := st.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return translate(err)
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}

// taskKeys reads the keys (and ttl) of every item under TASK#<tid>.
func (st *Store) taskKeys(ctx context.Context, taskID string) ([]item, error) {
	return st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String("#pk, #sk, #ttl"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID))},
	}, nil)
}
