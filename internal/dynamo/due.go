package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// gsi4PK is the reaper's index partition of a META (agent.ReaperKey):
// RUN#<shard> while its request runs, EXP#<shard> while it is paused.
func gsi4PK(running bool, shard int) string {
	if running {
		return fmt.Sprintf("RUN#%d", shard)
	}
	return fmt.Sprintf("EXP#%d", shard)
}

// gsi4SK orders a partition by time: the claim, or the earliest expiry.
func gsi4SK(at time.Time, tid string) string { return at.UTC().Format(timeKey) + "#" + tid }

// ListDue implements agent.Store: a Query of each of GSI4's partitions
// (ReaperShards running, as many paused), keys only, up to the given time.
// The index is eventually consistent: the reaper reads each META before it
// acts.
func (st *Store) ListDue(ctx context.Context, claimedBefore, now time.Time, limit int) (_ []agent.DueTask, err error) {
	defer wrap(&err, "ListDue", "")
	var out []agent.DueTask
	for _, running := range []bool{true, false} {
		upTo := now
		if running {
			upTo = claimedBefore
		}
		var got []agent.DueTask
		for shard := 0; shard < agent.ReaperShards; shard++ {
			in := &dynamodb.QueryInput{
				TableName:                 &st.table,
				IndexName:                 aws.String(gsi4),
				KeyConditionExpression:    aws.String("#pk = :pk AND #sk <= :upto"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrGSI4PK, "#sk": attrGSI4SK},
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(gsi4PK(running, shard)), ":upto": s(upTo.UTC().Format(timeKey) + "#~")},
			}
			if limit > 0 {
				in.Limit = aws.Int32(int32(limit))
			}
			res, err := st.client.Query(ctx, in)
			if err != nil {
				return nil, translate(err)
			}
			for _, it := range res.Items {
				sk := str(it, attrGSI4SK)
				i := strings.LastIndexByte(sk, '#')
				if i < 0 {
					continue
				}
				at, err := time.Parse(timeKey, sk[:i])
				if err != nil {
					continue
				}
				got = append(got, agent.DueTask{TaskID: sk[i+1:], Running: running, At: at})
			}
		}
		slices.SortFunc(got, func(a, b agent.DueTask) int { return a.At.Compare(b.At) })
		if limit > 0 && len(got) > limit {
			got = got[:limit]
		}
		out = append(out, got...)
	}
	return out, nil
}
