package dynamo

import (
	"cmp"
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

// outboxPK is an outbox item's GSI3 partition: OUT#<shard>, sharded like
// GSI4 (agent.ReaperShard of its task), so that the outbox index is no
// single hot partition; each partition by creation time.
func outboxPK(taskID string) string { return fmt.Sprintf("OUT#%d", agent.ReaperShard(taskID)) }

// legacyOutboxPK is GSI3's one partition before it was sharded: items put
// by an older version still stand there (for their 7 days), and the sweep
// reads it too.
const legacyOutboxPK = "OUT"

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
	it[attrGSI3PK] = s(outboxPK(o.TaskID))
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

// outboxQueryLimit bounds the items one Query of GSI3 reads.
const outboxQueryLimit = 500

// ListOutbox implements agent.Store: Queries of GSI3's partitions
// (OUT#0…OUT#9, and the unsharded OUT of older versions), each from its
// oldest item, paged on past items that are not live (an expired ttl that
// DynamoDB has not deleted yet) until limit live items are read (limit 0:
// every one), merged oldest first. GSI3 is eventually consistent: an item
// the sweep reads may just have been delivered, which the dispatcher's
// GetOutbox tells.
func (st *Store) ListOutbox(ctx context.Context, before time.Time, limit int) (_ []agent.OutboxItem, err error) {
	defer wrap(&err, "ListOutbox", "")
	now := st.now().Unix()
	var out []agent.OutboxItem
	parts := []string{legacyOutboxPK}
	for shard := range agent.ReaperShards {
		parts = append(parts, fmt.Sprintf("OUT#%d", shard))
	}
	for _, pk := range parts {
		in := &dynamodb.QueryInput{
			TableName:                 &st.table,
			IndexName:                 aws.String(gsi3),
			KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :before"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrGSI3PK, "#sk": attrGSI3SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk), ":before": s(before.UTC().Format(timeKey))},
			Limit:                     aws.Int32(outboxQueryLimit),
		}
		n := 0
		for {
			res, err := st.client.Query(ctx, in)
			if err != nil {
				return nil, translate(err)
			}
			for _, it := range res.Items {
				if !live(it, now) || !strings.HasPrefix(str(it, attrSK), "OUT#") {
					continue
				}
				var o agent.OutboxItem
				if err := json.Unmarshal([]byte(str(it, attrData)), &o); err != nil {
					return nil, fmt.Errorf("corrupt outbox item %s: %w", str(it, attrSK), err)
				}
				out = append(out, o)
				n++
			}
			// A partition's items past the limit-th live one cannot be
			// among the oldest limit of all.
			if len(res.LastEvaluatedKey) == 0 || (limit > 0 && n >= limit) {
				break
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
	}
	slices.SortFunc(out, func(a, b agent.OutboxItem) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.SK(), b.SK()))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
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
