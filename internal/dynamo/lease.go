package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// RenewLease implements agent.Store: one UpdateItem of META's lease and
// version, on the condition that the claim is ours and its lease live.
func (st *Store) RenewLease(ctx context.Context, taskID, claimToken string, until, now time.Time) (_ *agent.Task, err error) {
	defer wrap(&err, "RenewLease", taskID)
	cond := "#claim = :claim AND #lease > :now AND (attribute_not_exists(#ttl) OR #ttl > :nowsec)"
	update := "SET #v = #v + :one, #lease = :until"
	in := &dynamodb.UpdateItemInput{
		TableName: &st.table, Key: key(taskPK(taskID), metaSK),
		ConditionExpression: &cond, UpdateExpression: &update,
		ExpressionAttributeNames: map[string]string{"#claim": attrClaim, "#lease": attrLease, "#v": attrVersion, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":claim": s(claimToken), ":now": n(now.UnixMilli()), ":nowsec": n(st.now().Unix()),
			":one": n(1), ":until": n(until.UnixMilli()),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	// A renewal that crosses a transaction on META (another process's
	// cancel, say) meets TransactionConflict: it is tried again for up to
	// about 200 ms (docs/architecture.md).
	out, err := st.client.UpdateItem(ctx, in)
	for wait := 10 * time.Millisecond; isTransactionConflict(err) && wait <= 80*time.Millisecond; wait *= 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		out, err = st.client.UpdateItem(ctx, in)
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		cur, derr := decodeTask(ccf.Item, st.now().Unix())
		if derr != nil {
			return nil, derr
		}
		if cur == nil {
			return nil, agent.ErrNotFound
		}
		return nil, &agent.ConflictError{Current: cur}
	}
	if err != nil {
		return nil, translate(err)
	}
	return decodeTask(out.Attributes, st.now().Unix())
}

func isTransactionConflict(err error) bool {
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}
