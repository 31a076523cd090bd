package dynamo

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// attrBytes is the count of a user's artifact bytes on QUOTA#<uid>.
const attrBytes = "bytes"

func quotaPK(userID string) string { return "QUOTA#" + userID }

const quotaSK = "ARTIFACTS"

// AddArtifactBytes implements agent.Store: one UpdateItem ADD on
// QUOTA#<uid>, conditioned on the count staying within limit (adding) or
// not going below zero (giving back; a count that would is set to zero).
func (st *Store) AddArtifactBytes(ctx context.Context, userID string, delta, limit int64) (_ int64, err error) {
	defer wrap(&err, "AddArtifactBytes", userID+","+strconv.FormatInt(delta, 10))
	if delta == 0 {
		return st.artifactBytes(ctx, userID)
	}
	names := map[string]string{"#b": attrBytes}
	vals := map[string]types.AttributeValue{":d": n(delta)}
	var cond string
	switch {
	case delta > 0 && limit > 0:
		if delta > limit {
			cur, err := st.artifactBytes(ctx, userID)
			if err != nil {
				return 0, err
			}
			return cur, agent.ErrQuotaExceeded
		}
		cond = "attribute_not_exists(#b) OR #b <= :max"
		vals[":max"] = n(limit - delta)
	case delta < 0:
		cond = "#b >= :back"
		vals[":back"] = n(-delta)
	}
	update := "ADD #b :d"
	in := &dynamodb.UpdateItemInput{TableName: &st.table, Key: key(quotaPK(userID), quotaSK),
		UpdateExpression: &update, ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		ReturnValues: types.ReturnValueUpdatedNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	if cond != "" {
		in.ConditionExpression = &cond
	}
	out, err := st.client.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf) && delta > 0:
		return num(ccf.Item, attrBytes), agent.ErrQuotaExceeded
	case errors.As(err, &ccf):
		// Giving back more than is counted (a count kept before the
		// quota existed): zero, never negative.
		set := "SET #b = :zero"
		if _, err := st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &st.table, Key: key(quotaPK(userID), quotaSK),
			UpdateExpression: &set, ExpressionAttributeNames: names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": n(0)}}); err != nil {
			return 0, translate(err)
		}
		return 0, nil
	case err != nil:
		return 0, translate(err)
	}
	return num(out.Attributes, attrBytes), nil
}

// artifactBytes reads the count, strongly consistent.
func (st *Store) artifactBytes(ctx context.Context, userID string) (int64, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(quotaPK(userID), quotaSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, translate(err)
	}
	return num(out.Item, attrBytes), nil
}
