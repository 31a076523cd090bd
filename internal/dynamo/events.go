package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/eventlog"
)

const (
	// eventItemBytes bounds an event-log item (docs/architecture.md: 350 KB); its data
	// gets what the keys and other attributes leave.
	eventItemBytes = 350_000
	eventDataBytes = eventItemBytes - 1_000
	attrFirst      = "first"
	attrLast       = "last"
)

func eventPrefix(rid string) string { return "EVT#" + rid + "#" }
func eventSK(rid string, epoch int, first int64) string {
	return fmt.Sprintf("%s%06d#%010d", eventPrefix(rid), epoch, first)
}

// eventEpoch reads the claim epoch out of an event item's key.
func eventEpoch(sk, rid string) (int, error) {
	pos, err := eventPos(sk, rid)
	return pos.Epoch, err
}

// eventPos reads an event item's place in the log out of its key.
func eventPos(sk, rid string) (eventlog.Pos, error) {
	rest := strings.TrimPrefix(sk, eventPrefix(rid))
	ep, first, ok := strings.Cut(rest, "#")
	if !ok {
		return eventlog.Pos{}, fmt.Errorf("event key %s has no epoch", sk)
	}
	e, err := strconv.Atoi(ep)
	if err != nil {
		return eventlog.Pos{}, fmt.Errorf("event key %s: %w", sk, err)
	}
	f, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return eventlog.Pos{}, fmt.Errorf("event key %s: %w", sk, err)
	}
	return eventlog.Pos{Epoch: e, First: f}, nil
}

// AppendEvents implements agent.Store. The batch is cut into items of at
// most 350 KB, each keyed by its first event's id, so that appending the same
// batch again (a retry) overwrites what the first try wrote. An event whose
// JSON alone passes the bound goes in an item of its own (DynamoDB refuses it
// past 400 KB).
func (st *Store) AppendEvents(ctx context.Context, taskID, requestID string, events []eventlog.Event, expires time.Time) (err error) {
	defer wrap(&err, "AppendEvents", taskID+","+requestID)
	chunks, err := chunkEvents(events, eventDataBytes)
	if err != nil {
		return err
	}
	ttl := ttlOf(expires)
	reqs := make([]types.WriteRequest, 0, len(chunks))
	for _, c := range chunks {
		it := key(taskPK(taskID), eventSK(requestID, events[0].Epoch, c.first))
		it[attrData] = s(string(c.data))
		it[attrRequestID] = s(requestID)
		it[attrFirst] = n(c.first)
		it[attrLast] = n(c.last)
		if ttl != 0 {
			it[attrTTL] = n(ttl)
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	return st.batchWrite(ctx, reqs)
}

// eventChunk is the JSON array of consecutive events of one item.
type eventChunk struct {
	first, last int64
	data        []byte
}

// chunkEvents cuts events, in their order, into JSON arrays of at most limit
// bytes (an event over limit alone in its own).
func chunkEvents(events []eventlog.Event, limit int) ([]eventChunk, error) {
	var out []eventChunk
	var cur *eventChunk
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", e.ID, err)
		}
		if cur == nil || len(cur.data)+1+len(b)+1 > limit {
			out = append(out, eventChunk{first: e.ID, last: e.ID, data: []byte{'['}})
			cur = &out[len(out)-1]
		} else {
			cur.data = append(cur.data, ',')
		}
		cur.data = append(cur.data, b...)
		cur.last = max(cur.last, e.ID)
	}
	for i := range out {
		out[i].data = append(out[i].data, ']')
	}
	return out, nil
}

// ListEvents implements agent.Store: one consistent Query of the request's
// event items, those ending at or before after filtered out by DynamoDB.
func (st *Store) ListEvents(ctx context.Context, taskID, requestID string, after int64) (_ []eventlog.Event, err error) {
	defer wrap(&err, "ListEvents", taskID+","+requestID)
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		FilterExpression:         aws.String("#last > :after"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#last": attrLast},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(taskPK(taskID)), ":lo": s(eventPrefix(requestID)), ":hi": s(eventPrefix(requestID) + "~"),
			":after": n(after),
		},
	}, nil)
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	out := []eventlog.Event{}
	for _, it := range raw {
		if !live(it, now) {
			continue
		}
		epoch, err := eventEpoch(str(it, attrSK), requestID)
		if err != nil {
			return nil, err
		}
		var batch []eventlog.Event
		if err := json.Unmarshal([]byte(str(it, attrData)), &batch); err != nil {
			return nil, fmt.Errorf("corrupt events %s: %w", str(it, attrSK), err)
		}
		for _, e := range batch {
			if e.ID > after {
				e.Epoch = epoch
				out = append(out, e)
			}
		}
	}
	return orderEvents(out), nil
}

// ReadEvents implements agent.Store: one consistent Query call (DynamoDB
// answers at most 1 MB) of the request's event items from from on, those
// ending at or before after filtered out by DynamoDB.
func (st *Store) ReadEvents(ctx context.Context, taskID, requestID string, from eventlog.Pos, after int64) (_ eventlog.Page, err error) {
	defer wrap(&err, "ReadEvents", taskID+","+requestID)
	page := eventlog.Page{Events: []eventlog.Event{}, Next: from}
	out, err := st.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                &st.table,
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		FilterExpression:         aws.String("#last > :after"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#last": attrLast},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(taskPK(taskID)), ":lo": s(eventSK(requestID, from.Epoch, from.First)), ":hi": s(eventPrefix(requestID) + "~"),
			":after": n(after),
		},
	})
	if err != nil {
		return page, translate(err)
	}
	now := st.now().Unix()
	for _, it := range out.Items {
		pos, err := eventPos(str(it, attrSK), requestID)
		if err != nil {
			return page, err
		}
		page.Next = pos
		if !live(it, now) {
			continue
		}
		var batch []eventlog.Event
		if err := json.Unmarshal([]byte(str(it, attrData)), &batch); err != nil {
			return page, fmt.Errorf("corrupt events %s: %w", str(it, attrSK), err)
		}
		for _, e := range batch {
			if e.ID > after {
				e.Epoch = pos.Epoch
				page.Events = append(page.Events, e)
			}
		}
	}
	if len(out.LastEvaluatedKey) > 0 {
		pos, err := eventPos(str(out.LastEvaluatedKey, attrSK), requestID)
		if err != nil {
			return page, err
		}
		page.More = true
		page.Next = eventlog.Pos{Epoch: pos.Epoch, First: pos.First + 1}
	}
	return page, nil
}

// orderEvents sorts events by id then epoch and keeps the first of each
// (items are read in key order, so the item with the lowest first id wins).
func orderEvents(events []eventlog.Event) []eventlog.Event {
	slices.SortStableFunc(events, func(a, b eventlog.Event) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Epoch, b.Epoch))
	})
	return slices.CompactFunc(events, func(a, b eventlog.Event) bool { return a.ID == b.ID && a.Epoch == b.Epoch })
}

// ExtendEvents implements agent.Store: one Query for the request's batches'
// keys, then an UpdateItem for each live one whose ttl comes sooner.
func (st *Store) ExtendEvents(ctx context.Context, taskID, requestID string, expires time.Time) (err error) {
	defer wrap(&err, "ExtendEvents", taskID+","+requestID)
	ttl := ttlOf(expires)
	now := st.now().Unix()
	keys, err := st.query(ctx, &dynamodb.QueryInput{
		TableName:                &st.table,
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(taskPK(taskID)), ":prefix": s(eventPrefix(requestID)),
		},
		ProjectionExpression: aws.String("#pk, #sk, #ttl"),
		ConsistentRead:       aws.Bool(true),
	}, nil)
	if err != nil {
		return err
	}
	var stale []item
	for _, it := range keys {
		if t := num(it, attrTTL); t > now && t < ttl {
			stale = append(stale, key(str(it, attrPK), str(it, attrSK)))
		}
	}
	return parallel(ctx, stale, func(ctx context.Context, k item) error {
		cond := "attribute_exists(#pk) AND #ttl > :now AND #ttl < :t"
		_, err := st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &st.table, Key: k, UpdateExpression: aws.String("SET #ttl = :t"), ConditionExpression: &cond,
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#ttl": attrTTL},
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": n(ttl), ":now": n(now)},
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return nil
		}
		return translate(err)
	})
}
