package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// outboxPK is GSI3's one partition: every outbox item, by creation time.
const outboxPK = "OUT"

func tokenSK(rid, hash string) string { return "TOK#" + rid + "#" + hash }

// outboxPut puts an outbox item (OUT#…, ttl OutboxTTL or its KeepUntil, on GSI3 by its
// creation time, for the sweep).
func (st *Store) outboxPut(pk string, o agent.OutboxItem, now int64) (action, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return action{}, err
	}
	it := key(pk, o.SK())
	it[attrData] = s(string(data))
	it[attrRequestID] = s(o.RequestID)
	it[attrTTL] = n(now + int64(agent.OutboxTTL/time.Second))
	if !o.KeepUntil.IsZero() {
		// A poll: as long as its round (whole seconds, rounded up).
		secs := o.KeepUntil.Unix()
		if o.KeepUntil.Nanosecond() > 0 {
			secs++
		}
		it[attrTTL] = n(secs)
	}
	it[attrGSI3PK] = s(outboxPK)
	it[attrGSI3SK] = s(fmt.Sprintf("%s#%s#%s", o.CreatedAt.UTC().Format(timeKey), pk, o.SK()))
	return st.put(it), nil
}

// tokenPut puts a waiter's token (TOK#<rid>#<hash>).
func (st *Store) tokenPut(pk string, tok agent.TokenItem, ttl int64) (action, error) {
	data, err := json.Marshal(tok)
	if err != nil {
		return action{}, err
	}
	it := key(pk, tokenSK(tok.RequestID, tok.Hash))
	it[attrData] = s(string(data))
	it[attrRequestID] = s(tok.RequestID)
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return st.put(it), nil
}

// GetOutbox implements agent.Store: one consistent GetItem.
func (st *Store) GetOutbox(ctx context.Context, taskID, sk string) (_ *agent.OutboxItem, err error) {
	defer wrap(&err, "GetOutbox", taskID+","+sk)
	var o agent.OutboxItem
	if err := st.getData(ctx, taskPK(taskID), sk, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// DeleteOutbox implements agent.Store.
func (st *Store) DeleteOutbox(ctx context.Context, taskID, sk string) (err error) {
	defer wrap(&err, "DeleteOutbox", taskID+","+sk)
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &st.table, Key: key(taskPK(taskID), sk)})
	return translate(err)
}

// ListOutbox implements agent.Store: a Query of GSI3 (eventually
// consistent: an item the sweep reads may just have been delivered, which
// the dispatcher's GetOutbox tells).
func (st *Store) ListOutbox(ctx context.Context, before time.Time, limit int) (_ []agent.OutboxItem, err error) {
	defer wrap(&err, "ListOutbox", "")
	in := &dynamodb.QueryInput{
		TableName:                 &st.table,
		IndexName:                 aws.String(gsi3),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :before"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrGSI3PK, "#sk": attrGSI3SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(outboxPK), ":before": s(before.UTC().Format(timeKey))},
	}
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	raw, err := st.query(ctx, in, func(got []item) bool { return limit > 0 && len(got) >= limit })
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	var out []agent.OutboxItem
	for _, it := range raw {
		if !live(it, now) || !strings.HasPrefix(str(it, attrSK), "OUT#") {
			continue
		}
		var o agent.OutboxItem
		if err := json.Unmarshal([]byte(str(it, attrData)), &o); err != nil {
			return nil, fmt.Errorf("corrupt outbox item %s: %w", str(it, attrSK), err)
		}
		out = append(out, o)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// ListRequestOutbox implements agent.Store: one consistent Query of the
// task's OUT#<rid># items (a request's undelivered items are few: it
// follows LastEvaluatedKey past 1 MB all the same).
func (st *Store) ListRequestOutbox(ctx context.Context, taskID, requestID string) (_ []agent.OutboxItem, err error) {
	defer wrap(&err, "ListRequestOutbox", taskID+","+requestID)
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":prefix": s("OUT#" + requestID + "#")},
	}, nil)
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	var out []agent.OutboxItem
	for _, it := range raw {
		if !live(it, now) {
			continue
		}
		var o agent.OutboxItem
		if err := json.Unmarshal([]byte(str(it, attrData)), &o); err != nil {
			return nil, fmt.Errorf("corrupt outbox item %s: %w", str(it, attrSK), err)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, agent.CompareOutbox)
	return out, nil
}

// GetToken implements agent.Store.
func (st *Store) GetToken(ctx context.Context, taskID, requestID, hash string) (_ *agent.TokenItem, err error) {
	defer wrap(&err, "GetToken", taskID+","+requestID)
	var tok agent.TokenItem
	if err := st.getData(ctx, taskPK(taskID), tokenSK(requestID, hash), &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// DeleteToken implements agent.Store.
func (st *Store) DeleteToken(ctx context.Context, taskID, requestID, hash string) (err error) {
	defer wrap(&err, "DeleteToken", taskID+","+requestID)
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &st.table, Key: key(taskPK(taskID), tokenSK(requestID, hash))})
	return translate(err)
}

// getData reads one live item's data (consistent) into v.
func (st *Store) getData(ctx context.Context, pk, sk string, v any) error {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return translate(err)
	}
	if len(out.Item) == 0 || !live(out.Item, st.now().Unix()) {
		return agent.ErrNotFound
	}
	return json.Unmarshal([]byte(str(out.Item, attrData)), v)
}

// OutboxOf decodes an outbox item from a stream record's new image (the
// notifier's), or returns false when the image is not an outbox item.
func OutboxOf(image map[string]types.AttributeValue) (agent.OutboxItem, bool, error) {
	if !strings.HasPrefix(str(image, attrSK), "OUT#") {
		return agent.OutboxItem{}, false, nil
	}
	var o agent.OutboxItem
	if err := json.Unmarshal([]byte(str(image, attrData)), &o); err != nil {
		return o, true, fmt.Errorf("corrupt outbox item %s: %w", str(image, attrSK), err)
	}
	return o, true, nil
}
