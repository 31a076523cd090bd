package dynamo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

const (
	idemSK       = "IDEM"
	attrBodyHash = "body_hash"
)

func idemPK(key string) string { return "IDEM#" + key }

// idemPut puts the idempotency record in a Write's transaction, on condition
// that its key is free or expired. A record without Expires never expires.
func (st *Store) idemPut(r *agent.IdemRecord, now int64) (action, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return action{}, err
	}
	it := key(idemPK(r.Key), idemSK)
	it[attrData] = s(string(data))
	it[attrBodyHash] = s(r.BodyHash)
	it[attrTaskID] = s(r.TaskID)
	it[attrRequestID] = s(r.RequestID)
	it[attrSessionID] = s(r.SessionID)
	if ttl := ttlOf(r.Expires); ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	cond := "attribute_not_exists(#pk) OR #ttl <= :now"
	return action{item: types.TransactWriteItem{Put: &types.Put{
		TableName: &st.table, Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(now)},
	}}, size: sizeOf(it)}, nil
}

// idemCheck holds when the key is free or expired.
func (st *Store) idemCheck(k string, now int64) action {
	cond := "attribute_not_exists(#pk) OR #ttl <= :now"
	return action{item: types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &st.table, Key: key(idemPK(k), idemSK), ConditionExpression: &cond,
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(now)},
	}}, size: 200}
}

// GetIdem implements agent.Store: one consistent GetItem.
func (st *Store) GetIdem(ctx context.Context, k string) (_ *agent.IdemRecord, err error) {
	defer wrap(&err, "GetIdem", k)
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(idemPK(k), idemSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, translate(err)
	}
	if len(out.Item) == 0 || !live(out.Item, st.now().Unix()) {
		return nil, agent.ErrNotFound
	}
	var r agent.IdemRecord
	if err := json.Unmarshal([]byte(str(out.Item, attrData)), &r); err != nil {
		return nil, fmt.Errorf("corrupt idempotency record: %w", err)
	}
	return &r, nil
}

const lookupSK = "A2A"

func lookupPK(requestID string) string { return "A2A#" + requestID }

// lookupPut puts a request's lookup in the Write that creates the request.
func (st *Store) lookupPut(l *agent.RequestLookup, ttl int64) (action, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return action{}, err
	}
	it := key(lookupPK(l.RequestID), lookupSK)
	it[attrData] = s(string(data))
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return st.put(it), nil
}

// FindRequest implements agent.Store: one consistent GetItem.
func (st *Store) FindRequest(ctx context.Context, requestID string) (_ *agent.RequestLookup, err error) {
	defer wrap(&err, "FindRequest", requestID)
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(lookupPK(requestID), lookupSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, translate(err)
	}
	if len(out.Item) == 0 || !live(out.Item, st.now().Unix()) {
		return nil, agent.ErrNotFound
	}
	var l agent.RequestLookup
	if err := json.Unmarshal([]byte(str(out.Item, attrData)), &l); err != nil {
		return nil, fmt.Errorf("corrupt request lookup: %w", err)
	}
	return &l, nil
}
