package dynamo

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// expireWorkers bounds the UpdateItem calls ExpireTask runs at once.
const expireWorkers = 8

// ExpireTask implements agent.Store. It reads the keys of the task's items,
// then sets the ttl on the META with an UpdateItem guarded by the task's
// version (a *ConflictError if a Write got there first; ErrNotFound if the
// task is gone), then on each item read (UpdateItem, several at once) and on
// the session index entry. The version does not change, so a retry after a
// failure in the middle finishes the work.
//
// Only live items get the ttl: an expired item is never brought back, nor is
// an item deleted meanwhile recreated. Event-log items keep their own ttl
// when it comes sooner (docs/architecture.md: 24 h after the request's last event).
func (st *Store) ExpireTask(ctx context.Context, t *agent.Task, until time.Time) (err error) {
	defer wrap(&err, "ExpireTask", t.ID)
	ttl := int64(0) // zero: remove the ttl (a finished task takes a new request)
	if !until.IsZero() {
		ttl = ttlOf(until)
	}
	keys, err := st.taskKeys(ctx, t.ID)
	if err != nil {
		return err
	}
	now := st.now().Unix()
	cond, names, values := versionCondition(t.Version, now)
	update := "SET #ttl = :t"
	if ttl == 0 {
		update = "REMOVE #ttl"
	} else {
		values[":t"] = n(ttl)
	}
	_, err = st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &st.table, Key: key(taskPK(t.ID), metaSK), UpdateExpression: &update,
		ConditionExpression: &cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if gone, err := st.metaRefused(err); err != nil || gone {
		if gone {
			return agent.ErrNotFound
		}
		return err
	}
	targets := make([]item, 0, len(keys)+1)
	for _, it := range keys {
		if str(it, attrSK) != metaSK {
			targets = append(targets, key(str(it, attrPK), str(it, attrSK)))
		}
	}
	if t.SessionID != "" {
		targets = append(targets, key(sessionPK(t.SessionID), indexSK(t.CreatedAt, t.ID)))
	}
	return parallel(ctx, targets, func(ctx context.Context, k item) error {
		return st.setTTL(ctx, k, ttl, now)
	})
}

// setTTL sets the ttl on a live item; an absent or expired one is left as it
// is, an event-log item whose ttl comes sooner too.
func (st *Store) setTTL(ctx context.Context, k item, ttl, now int64) error {
	cond := "attribute_exists(#pk) AND (attribute_not_exists(#ttl) OR #ttl > :now)"
	values := map[string]types.AttributeValue{":t": n(ttl), ":now": n(now)}
	update := "SET #ttl = :t"
	switch {
	case isEvent(str(k, attrSK)) && ttl == 0:
		return nil // the event log keeps its own 24 h
	case isEvent(str(k, attrSK)):
		cond = "attribute_exists(#pk) AND (attribute_not_exists(#ttl) OR (#ttl > :now AND #ttl > :t))"
	case ttl == 0:
		update = "REMOVE #ttl"
		delete(values, ":t")
	}
	_, err := st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &st.table, Key: k, UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#ttl": attrTTL}, ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return translate(err)
}

// parallel runs fn on every item, expireWorkers at once; the first error
// cancels the rest and is returned.
func parallel(ctx context.Context, items []item, fn func(context.Context, item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, expireWorkers)
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
