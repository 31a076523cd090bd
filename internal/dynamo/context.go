package dynamo

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// contextPage is the first page of a context read: the META and up to
// agent.MaxContextEntries entries with room for the new turn's and for
// split entries' parts.
const contextPage = 1 + agent.MaxContextEntries + 31

// LoadContext implements agent.Store: one consistent Query that reads
// backwards from the META (SK BETWEEN "ITEM#" AND "META", ScanIndexForward
// false, Limit contextPage), so that the META, read first, tells where the
// context starts; a further page is read only when the context holds more
// entries than the first page did.
func (st *Store) LoadContext(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	defer wrap(&err, "LoadContext", taskID)
	in := &dynamodb.QueryInput{
		TableName:                 &st.table,
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(contextPage),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":lo": s("ITEM#"), ":hi": s(metaSK)},
	}
	now := st.now().Unix()
	var raw []item
	var t *agent.Task
	for {
		out, err := st.client.Query(ctx, in)
		if err != nil {
			return nil, nil, translate(err)
		}
		raw = append(raw, out.Items...)
		if t == nil {
			if len(raw) == 0 || str(raw[0], attrSK) != metaSK {
				return nil, nil, agent.ErrNotFound
			}
			if t, err = decodeTask(raw[0], now); err != nil {
				return nil, nil, err
			}
			if t == nil {
				return nil, nil, agent.ErrNotFound
			}
		}
		last, reached := reachedSeq(raw, max(t.Context.Seq, 1))
		if reached || len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		in.Limit = aws.Int32(int32(min(max(last-t.Context.Seq+32, 32), 1000)))
	}
	entries := raw[1:]
	slices.Reverse(entries)
	items, err := assemble(entries, max(t.Context.Seq-1, 0), t.NextSeq, 0, now)
	if err != nil {
		return nil, nil, err
	}
	if t.Joins, err = joinsIn(entries); err != nil {
		return nil, nil, err
	}
	if err := restoreInputs(t, entries, now); err != nil {
		return nil, nil, err
	}
	return t, items, nil
}

// reachedSeq tells whether the backward read has passed the head of entry
// seq (its parts, which sort after it, come before it), and the last
// entry's seq it read.
func reachedSeq(raw []item, seq int64) (int64, bool) {
	for i := len(raw) - 1; i >= 0; i-- {
		rest, ok := strings.CutPrefix(str(raw[i], attrSK), "ITEM#")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.SplitN(rest, "#", 2)[0], 10, 64)
		if err != nil {
			continue
		}
		return n, n < seq || n == seq && !strings.Contains(rest, "#")
	}
	return 0, false
}
