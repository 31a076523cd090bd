package dynamo

import (
	"context"
	"errors"
	"fmt"
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
func gsi4SK(at time.Time, tid string) string { return agent.DueKey(at, tid) }

// dueQueryLimit bounds one Query of a GSI4 partition: ~100 bytes an entry
// (keys only), so a page is ~100 KB.
const dueQueryLimit = 1000

// ListDue implements agent.Store: Queries of GSI4's partitions in the
// reaper's order (RUN#0…RUN#9, then EXP#0…EXP#9), keys only, each up to its
// time, from the position given (ExclusiveStartKey) and on through the
// partitions after it until the page is full. The index is eventually
// consistent: the reaper reads each META before it acts.
func (st *Store) ListDue(ctx context.Context, claimedBefore, now time.Time, from string, limit int) (_ []agent.DueTask, err error) {
	defer wrap(&err, "ListDue", from)
	part, after, err := agent.ParseDuePos(from)
	if err != nil {
		return nil, err
	}
	var out []agent.DueTask
	for ; part < agent.DuePartitions; part, after = part+1, "" {
		running, shard := part < agent.ReaperShards, part%agent.ReaperShards
		upTo := now
		if running {
			upTo = claimedBefore
		}
		pk := gsi4PK(running, shard)
		in := &dynamodb.QueryInput{
			TableName:                 &st.table,
			IndexName:                 aws.String(gsi4),
			KeyConditionExpression:    aws.String("#pk = :pk AND #sk <= :upto"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrGSI4PK, "#sk": attrGSI4SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk), ":upto": s(upTo.UTC().Format(timeKey) + "#~")},
		}
		if after != "" {
			// The entry's table key is its task's META.
			i := strings.LastIndexByte(after, '#')
			if i < 0 {
				return nil, fmt.Errorf("a bad position in the reaper's index: %q", from)
			}
			in.ExclusiveStartKey = map[string]types.AttributeValue{attrGSI4PK: s(pk), attrGSI4SK: s(after),
				attrPK: s(taskPK(after[i+1:])), attrSK: s(metaSK)}
		}
		for {
			if limit > 0 {
				in.Limit = aws.Int32(int32(min(limit-len(out), dueQueryLimit)))
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
				out = append(out, agent.DueTask{TaskID: sk[i+1:], Running: running, At: at, Pos: agent.DuePos(part, sk)})
			}
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
			if len(res.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
	}
	return out, nil
}

// reapAttrs are the attributes of META the reaper decides on.
var reapAttrs = []string{attrPK, attrAgent, attrStatus, attrActive, attrLease, attrGSI4PK, attrGSI4SK, attrCaller, attrTTL}

// ReapStates implements agent.Store: BatchGetItem of 100 METAs a call,
// eventually consistent, projecting reapAttrs only (a few hundred bytes,
// never the task's data). A META written before attrActive existed is
// read whole (GetItem).
func (st *Store) ReapStates(ctx context.Context, taskIDs []string) (_ map[string]agent.ReapState, err error) {
	defer wrap(&err, "ReapStates", "")
	names := map[string]string{}
	var proj []string
	for i, a := range reapAttrs {
		k := fmt.Sprintf("#a%d", i)
		names[k] = a
		proj = append(proj, k)
	}
	out := map[string]agent.ReapState{}
	now := st.now().Unix()
	// The reaper may name a task twice (two dead children of one caller):
	// batchGetMETAs reads it once.
	shape := types.KeysAndAttributes{ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names}
	err = st.batchGetMETAs(ctx, taskIDs, shape, func(it item) error {
		if !live(it, now) {
			return nil
		}
		rs, ok := reapStateOf(it)
		if !ok {
			t, err := st.GetTask(ctx, rs.TaskID)
			if errors.Is(err, agent.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			rs = agent.ReapStateOf(t)
		}
		out[rs.TaskID] = rs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// reapStateOf reads a ReapState from META's attributes; ok false when the
// META predates attrActive and holds an active request (read it whole).
func reapStateOf(it item) (agent.ReapState, bool) {
	rs := agent.ReapState{TaskID: strings.TrimPrefix(str(it, attrPK), "TASK#"), Agent: str(it, attrAgent)}
	status := agent.Status(str(it, attrStatus))
	if status != agent.StatusRunning && status != agent.StatusPaused {
		return rs, true
	}
	rs.RequestID = str(it, attrActive)
	if rs.RequestID == "" {
		return rs, false
	}
	rs.Status = status
	if ms := num(it, attrLease); ms != 0 {
		rs.LeaseUntil = time.UnixMilli(ms).UTC()
	}
	if strings.HasPrefix(str(it, attrGSI4PK), "EXP#") {
		sk := str(it, attrGSI4SK)
		if i := strings.LastIndexByte(sk, '#'); i >= 0 {
			if at, err := time.Parse(timeKey, sk[:i]); err == nil {
				rs.Expires = at
			}
		}
	}
	if c := str(it, attrCaller); c != "" {
		tid, rid, _ := strings.Cut(c, " ")
		rs.Caller = &agent.TaskRequest{TaskID: tid, RequestID: rid}
	}
	return rs, true
}
