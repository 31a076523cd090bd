package dynamo

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

const defaultLimit = 20

var allStatuses = []agent.Status{agent.StatusRunning, agent.StatusPaused, agent.StatusCompleted, agent.StatusFailed, agent.StatusCanceled}

// ListUserTasks implements agent.Store: GSI1, newest updated first; without a
// status, the five statuses' queries merged.
func (st *Store) ListUserTasks(ctx context.Context, q agent.ListQuery) (_ []agent.TaskSummary, _ string, err error) {
	defer wrap(&err, "ListUserTasks", q.UserID+","+q.Agent)
	after, err := agent.ParseCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	statuses := allStatuses
	if q.Status != "" {
		statuses = []agent.Status{q.Status}
	}
	var all []positioned
	for _, status := range statuses {
		got, err := st.userTasks(ctx, q, status, after, limit+1)
		if err != nil {
			return nil, "", err
		}
		all = append(all, got...)
	}
	out, next := page(all, limit)
	return out, next, nil
}

// userTasks reads up to want live tasks of one status after the position.
func (st *Store) userTasks(ctx context.Context, q agent.ListQuery, status agent.Status, after *position, want int) ([]positioned, error) {
	pk := gsi1PK(q.UserID, q.Agent)
	in := &dynamodb.QueryInput{
		TableName:                 &st.table,
		IndexName:                 aws.String(gsi1),
		KeyConditionExpression:    aws.String("#gpk = :gpk AND begins_with(#gsk, :st)"),
		ExpressionAttributeNames:  map[string]string{"#gpk": attrGSI1PK, "#gsk": attrGSI1SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":gpk": s(pk), ":st": s(string(status) + "#")},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(want)),
	}
	if after != nil {
		in.ExclusiveStartKey = item{attrGSI1PK: s(pk), attrGSI1SK: s(gsi1SK(status, after.At, after.ID)),
			attrPK: s(taskPK(after.ID)), attrSK: s(metaSK)}
	}
	now := st.now().Unix()
	var out []positioned
	for {
		res, err := st.client.Query(ctx, in)
		if err != nil {
			return nil, translate(err)
		}
		for _, it := range res.Items {
			t, err := decodeTask(it, now)
			if err != nil {
				return nil, err
			}
			if t != nil && t.Status == status && t.UserID == q.UserID && t.Agent == q.Agent {
				out = append(out, positioned{position{At: t.UpdatedAt, ID: t.ID}, t.Summary()})
			}
		}
		if len(out) >= want || len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// ListSessionTasks implements agent.Store: the session's index, newest
// created first, this agent's tasks only, each read from its META.
func (st *Store) ListSessionTasks(ctx context.Context, q agent.ListQuery) (_ []agent.TaskSummary, _ string, err error) {
	defer wrap(&err, "ListSessionTasks", q.SessionID+","+q.Agent)
	after, err := agent.ParseCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	want := limit + 1
	in := &dynamodb.QueryInput{
		TableName:                 &st.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :task)"),
		FilterExpression:          aws.String("#agent = :agent"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK, "#agent": attrAgent},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(sessionPK(q.SessionID)), ":task": s("TASK#"), ":agent": s(q.Agent)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(want)),
	}
	if after != nil {
		in.ExclusiveStartKey = key(sessionPK(q.SessionID), indexSK(after.At, after.ID))
	}
	now := st.now().Unix()
	var all []positioned
	for len(all) < want {
		res, err := st.client.Query(ctx, in)
		if err != nil {
			return nil, "", translate(err)
		}
		var ids []string
		created := map[string]time.Time{}
		for _, it := range res.Items {
			if !live(it, now) {
				continue
			}
			at, err := time.Parse(timeKey, str(it, attrCreatedAt))
			if err != nil {
				continue
			}
			id := str(it, attrTaskID)
			ids = append(ids, id)
			created[id] = at
		}
		tasks, err := st.getTasks(ctx, ids, now)
		if err != nil {
			return nil, "", err
		}
		for _, id := range ids {
			if t := tasks[id]; t != nil && t.Agent == q.Agent && (q.UserID == "" || t.UserID == q.UserID) {
				all = append(all, positioned{position{At: created[id], ID: id}, t.Summary()})
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	out, next := page(all, limit)
	return out, next, nil
}

// getTasks reads the live METAs of the tasks, consistently, by id.
func (st *Store) getTasks(ctx context.Context, ids []string, now int64) (map[string]*agent.Task, error) {
	out := map[string]*agent.Task{}
	err := st.batchGetMETAs(ctx, ids, types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}, func(it item) error {
		t, err := decodeTask(it, now)
		if t != nil {
			out[t.ID] = t
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// batchGetMETAs reads the METAs of the tasks with BatchGetItem, 100 keys a
// call, each task once (BatchGetItem refuses a list that names a key
// twice), sending again what DynamoDB left unprocessed; shape gives the
// read's projection and consistency, each is called for every item read.
func (st *Store) batchGetMETAs(ctx context.Context, ids []string, shape types.KeysAndAttributes, each func(item) error) error {
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	for chunk := range slices.Chunk(uniq, 100) {
		ka := shape
		ka.Keys = make([]item, len(chunk))
		for i, id := range chunk {
			ka.Keys[i] = key(taskPK(id), metaSK)
		}
		req := map[string]types.KeysAndAttributes{st.table: ka}
		for len(req) > 0 && len(req[st.table].Keys) > 0 {
			res, err := st.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return translate(err)
			}
			for _, it := range res.Responses[st.table] {
				if err := each(it); err != nil {
					return err
				}
			}
			req = res.UnprocessedKeys
			if len(req) > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}
	return nil
}

// position is a list's sort position: newest (time, then id) first.
type position = agent.ListPosition

type positioned struct {
	pos position
	sum agent.TaskSummary
}

// page sorts newest first and cuts at limit; the cursor is the last position
// returned when more follow.
func page(all []positioned, limit int) ([]agent.TaskSummary, string) {
	slices.SortFunc(all, func(a, b positioned) int { return b.pos.Compare(a.pos) })
	out := []agent.TaskSummary{}
	for i, p := range all {
		if i == limit {
			return out, all[i-1].pos.Cursor()
		}
		out = append(out, p.sum)
	}
	return out, ""
}
