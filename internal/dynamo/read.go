package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// LoadTask implements agent.Store: one consistent Query returns the history
// in seq order and the META last (more pages only past 1 MB).
func (st *Store) LoadTask(ctx context.Context, taskID string) (_ *agent.Task, _ []agent.Item, err error) {
	defer wrap(&err, "LoadTask", taskID)
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":lo": s("ITEM#"), ":hi": s(metaSK)},
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	now := st.now().Unix()
	if len(raw) == 0 || str(raw[len(raw)-1], attrSK) != metaSK {
		return nil, nil, agent.ErrNotFound
	}
	t, err := decodeTask(raw[len(raw)-1], now)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, agent.ErrNotFound
	}
	items, err := assemble(raw[:len(raw)-1], 0, t.NextSeq, 0, now)
	if err != nil {
		return nil, nil, err
	}
	if t.Joins, err = joinsIn(raw); err != nil {
		return nil, nil, err
	}
	if err := restoreInputs(t, raw, now); err != nil {
		return nil, nil, err
	}
	return t, items, nil
}

// restoreInputs fills in what META keeps of its pending calls in JINP#
// items, from a read of the task that holds them (agent.RestoreInputs).
func restoreInputs(t *agent.Task, raw []item, now int64) error {
	if len(t.InputRefs) == 0 {
		return nil
	}
	var ins []agent.PendingInput
	for _, it := range raw {
		if !strings.HasPrefix(str(it, attrSK), agent.InputPrefix) || !live(it, now) {
			continue
		}
		var in agent.PendingInput
		if err := json.Unmarshal([]byte(str(it, attrData)), &in); err != nil {
			return fmt.Errorf("corrupt %s: %w", str(it, attrSK), err)
		}
		ins = append(ins, in)
	}
	agent.RestoreInputs(t, ins)
	return nil
}

// joinsIn decodes the JOIN# items of a task's read (they sort between its
// entries and its META).
func joinsIn(raw []item) ([]agent.Join, error) {
	var out []agent.Join
	for _, it := range raw {
		if !strings.HasPrefix(str(it, attrSK), "JOIN#") {
			continue
		}
		var j agent.Join
		if err := json.Unmarshal([]byte(str(it, attrData)), &j); err != nil {
			return nil, fmt.Errorf("corrupt %s: %w", str(it, attrSK), err)
		}
		out = append(out, j)
	}
	return out, nil
}

// GetTask implements agent.Store.
func (st *Store) GetTask(ctx context.Context, taskID string) (_ *agent.Task, err error) {
	defer wrap(&err, "GetTask", taskID)
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(taskPK(taskID), metaSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, translate(err)
	}
	t, err := decodeTask(out.Item, st.now().Unix())
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, agent.ErrNotFound
	}
	if len(t.InputRefs) > 0 {
		// A paused round whose inputs passed META's bound: one read more,
		// only then (docs/architecture.md, "Pauses for input").
		raw, err := st.query(ctx, &dynamodb.QueryInput{
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :p)"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":p": s(agent.InputPrefix)},
		}, nil)
		if err != nil {
			return nil, err
		}
		if err := restoreInputs(t, raw, st.now().Unix()); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ListItems implements agent.Store.
func (st *Store) ListItems(ctx context.Context, task *agent.Task, afterSeq int64, limit int) (_ []agent.Item, err error) {
	defer wrap(&err, "ListItems", task.ID)
	first := max(afterSeq+1, 0)
	if first >= task.NextSeq {
		return []agent.Item{}, nil
	}
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(task.ID)), ":lo": s(itemSK(first)), ":hi": s(itemSK(task.NextSeq-1) + "#~")},
	}
	var enough func([]item) bool
	if limit > 0 {
		in.Limit = aws.Int32(int32(min(limit+1, 1000)))
		// Stop once a head follows the limit-th one: its parts are all read.
		enough = func(raw []item) bool {
			heads := 0
			for _, it := range raw {
				if !strings.Contains(strings.TrimPrefix(str(it, attrSK), "ITEM#"), "#") {
					heads++
				}
			}
			return heads > limit
		}
	}
	raw, err := st.query(ctx, in, enough)
	if err != nil {
		return nil, err
	}
	return assemble(raw, afterSeq, task.NextSeq, limit, st.now().Unix())
}

// query runs a consistent Query on the table, following pages until the end
// or until enough says so.
func (st *Store) query(ctx context.Context, in *dynamodb.QueryInput, enough func([]item) bool) ([]item, error) {
	in.TableName = &st.table
	if in.IndexName == nil {
		in.ConsistentRead = aws.Bool(true)
	}
	var all []item
	for {
		out, err := st.client.Query(ctx, in)
		if err != nil {
			return nil, translate(err)
		}
		all = append(all, out.Items...)
		if len(out.LastEvaluatedKey) == 0 || (enough != nil && enough(all)) {
			return all, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// entry is a history entry being reassembled from its head and parts.
type entry struct {
	seq     int64
	writeID string
	live    bool
	parts   [][]byte
}

// assemble decodes ITEM# items (in key order) into the live entries in
// (afterSeq, nextSeq), at most limit of them (0: all).
func assemble(raw []item, afterSeq, nextSeq int64, limit int, now int64) ([]agent.Item, error) {
	out := []agent.Item{}
	var cur *entry
	flush := func() error {
		if cur == nil || !cur.live || cur.seq <= afterSeq || cur.seq >= nextSeq || (limit > 0 && len(out) >= limit) {
			return nil
		}
		var b []byte
		for i, p := range cur.parts {
			if p == nil {
				return fmt.Errorf("entry %d: part %d of %d missing", cur.seq, i, len(cur.parts))
			}
			b = append(b, p...)
		}
		var it agent.Item
		if err := json.Unmarshal(b, &it); err != nil {
			return fmt.Errorf("corrupt entry %d: %w", cur.seq, err)
		}
		out = append(out, it)
		return nil
	}
	for _, it := range raw {
		rest, ok := strings.CutPrefix(str(it, attrSK), "ITEM#")
		if !ok {
			continue
		}
		seqStr, partStr, isPart := strings.Cut(rest, "#")
		seq, err := strconv.ParseInt(seqStr, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad entry key %q", str(it, attrSK))
		}
		if !isPart {
			if err := flush(); err != nil {
				return nil, err
			}
			cur = &entry{seq: seq, writeID: str(it, attrWriteID), live: live(it, now), parts: make([][]byte, max(num(it, attrParts), 1))}
			cur.parts[0] = []byte(str(it, attrData))
			continue
		}
		// A part counts only under its own head, written by the same write.
		p, err := strconv.Atoi(partStr)
		if err != nil || cur == nil || cur.seq != seq || p <= 0 || p >= len(cur.parts) || str(it, attrWriteID) != cur.writeID {
			continue
		}
		cur.parts[p] = []byte(str(it, attrData))
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// ListRequests implements agent.Store.
func (st *Store) ListRequests(ctx context.Context, taskID string) (_ []agent.RequestRecord, err error) {
	defer wrap(&err, "ListRequests", taskID)
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :req)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":req": s("REQ#")},
	}, nil)
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	out := []agent.RequestRecord{}
	for _, it := range raw {
		if !live(it, now) {
			continue
		}
		var r agent.RequestRecord
		if err := json.Unmarshal([]byte(str(it, attrData)), &r); err != nil {
			return nil, fmt.Errorf("corrupt request %s: %w", str(it, attrSK), err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b agent.RequestRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.RequestID, b.RequestID))
	})
	return out, nil
}

// ListDecisions implements agent.Store: one Query of DEC#[<rid>#].
func (st *Store) ListDecisions(ctx context.Context, taskID, requestID string) (_ []agent.RequestDecision, err error) {
	defer wrap(&err, "ListDecisions", taskID)
	prefix := "DEC#"
	if requestID != "" {
		prefix += requestID + "#"
	}
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :dec)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":dec": s(prefix)},
	}, nil)
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	out := make([]agent.RequestDecision, 0, len(raw))
	for _, it := range raw {
		if !live(it, now) {
			continue
		}
		var d agent.RequestDecision
		if err := json.Unmarshal([]byte(str(it, attrData)), &d); err != nil {
			return nil, fmt.Errorf("corrupt decision %s: %w", str(it, attrSK), err)
		}
		out = append(out, d)
	}
	return out, nil
}

// GetSession implements agent.Store.
func (st *Store) GetSession(ctx context.Context, sessionID string) (_ *agent.Session, err error) {
	defer wrap(&err, "GetSession", sessionID)
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.table, Key: key(sessionPK(sessionID), metaSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, translate(err)
	}
	if len(out.Item) == 0 || !live(out.Item, st.now().Unix()) {
		return nil, agent.ErrNotFound
	}
	created, err := time.Parse(time.RFC3339Nano, str(out.Item, attrCreatedAt))
	if err != nil {
		return nil, fmt.Errorf("corrupt session: %w", err)
	}
	return &agent.Session{ID: sessionID, UserID: str(out.Item, attrOwner), CreatedAt: created}, nil
}
