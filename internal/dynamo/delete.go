package dynamo

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// DeleteTask implements agent.Store. The META goes first, in one DeleteItem
// guarded by the task's version: from then on the task is not found, and it
// leaves GSI1 (which lives on the META) with it. The rest follows in
// BatchWriteItem calls: the entries and their parts, the requests, the event
// log; then the session's index entry. A crash in between leaves those items
// behind, invisible (no reader shows a task without its META), and a later
// DeleteTask of the task sweeps them.
//
// When the META is already gone (an earlier or concurrent delete, or a retry
// by the SDK of ours that had landed) DeleteTask sweeps what is left and
// returns ErrNotFound: the caller may take the task as deleted.
func (st *Store) DeleteTask(ctx context.Context, t *agent.Task) (err error) {
	defer wrap(&err, "DeleteTask", t.ID)
	cond, names, values := versionCondition(t.Version, st.now().Unix())
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &st.table, Key: key(taskPK(t.ID), metaSK),
		ConditionExpression: &cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	gone, err := st.metaRefused(err)
	if err != nil {
		return err
	}
	if err := st.sweep(ctx, t); err != nil {
		return err
	}
	if gone {
		return agent.ErrNotFound
	}
	return nil
}

// versionCondition holds when the META is at version v and not expired.
func versionCondition(v, now int64) (string, map[string]string, map[string]types.AttributeValue) {
	return "#v = :v AND (attribute_not_exists(#ttl) OR #ttl > :now)",
		map[string]string{"#v": attrVersion, "#ttl": attrTTL},
		map[string]types.AttributeValue{":v": n(v), ":now": n(now)}
}

// metaRefused interprets the error of a version-guarded call on a META
// (with ALL_OLD): gone when the META is absent or expired, a *ConflictError
// when it is at another version.
func (st *Store) metaRefused(err error) (gone bool, _ error) {
	if err == nil {
		return false, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return false, translate(err)
	}
	cur, err := decodeTask(ccf.Item, st.now().Unix())
	if err != nil {
		return false, err
	}
	if cur == nil {
		return true, nil
	}
	return false, &agent.ConflictError{Current: cur}
}

// sweep deletes every item of the task but its META, its outbox items and
// its waiters' tokens, then its session index entry. Those stay: what a
// committed pause or end owes still goes out (docs/api.md, Delete a task),
// and the notifier deletes each once delivered.
func (st *Store) sweep(ctx context.Context, t *agent.Task) error {
	keys, err := st.taskKeys(ctx, t.ID)
	if err != nil {
		return err
	}
	owedFor := map[string]bool{}
	for _, it := range keys {
		if sk := str(it, attrSK); strings.HasPrefix(sk, "OUT#") {
			rid, _, _ := strings.Cut(sk[len("OUT#"):], "#")
			owedFor[reqSK(rid)] = true
		}
	}
	var reqs []types.WriteRequest
	var kept []map[string]types.AttributeValue
	for _, it := range keys {
		sk := str(it, attrSK)
		if sk == metaSK || strings.HasPrefix(sk, "OUT#") || strings.HasPrefix(sk, "TOK#") {
			continue // a META written since is not ours to delete; the outbox is owed
		}
		if owedFor[sk] {
			kept = append(kept, key(str(it, attrPK), sk)) // the owed items' payload
			continue
		}
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(str(it, attrPK), str(it, attrSK))}})
	}
	if err := st.batchWrite(ctx, reqs); err != nil {
		return err
	}
	// A kept record lasts as long as an outbox item is kept.
	ttl := st.now().Add(agent.OutboxTTL).Unix()
	for _, k := range kept {
		_, err := st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &st.table, Key: k,
			UpdateExpression:          aws.String("SET #ttl = :ttl"),
			ConditionExpression:       aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL, "#pk": attrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":ttl": n(ttl)}})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return translate(err)
		}
	}
	if t.SessionID == "" {
		return nil
	}
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &st.table, Key: key(sessionPK(t.SessionID), indexSK(t.CreatedAt, t.ID))})
	return translate(err)
}

// isEvent tells an event-log item by its sort key.
func isEvent(sk string) bool { return strings.HasPrefix(sk, "EVT#") }
