package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// artifactPut puts an artifact's metadata (ART#<id>): outside the history
// read (SK BETWEEN "ITEM#" AND "META"), so no turn reads it.
func (st *Store) artifactPut(pk string, a agent.Artifact, ttl int64) (action, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return action{}, err
	}
	it := key(pk, agent.ArtifactSK(a.ID))
	it[attrData] = s(string(data))
	it[attrRequestID] = s(a.RequestID)
	if ttl != 0 {
		it[attrTTL] = n(ttl)
	}
	return st.put(it), nil
}

// GetArtifact implements agent.Store: one consistent GetItem.
func (st *Store) GetArtifact(ctx context.Context, taskID, artifactID string) (_ *agent.Artifact, err error) {
	defer wrap(&err, "GetArtifact", taskID+","+artifactID)
	var a agent.Artifact
	if err := st.getData(ctx, taskPK(taskID), agent.ArtifactSK(artifactID), &a); err != nil {
		return nil, err
	}
	a.TaskID = taskID
	return &a, nil
}

// ListArtifacts implements agent.Store: a Query of begins_with(SK, "ART#").
func (st *Store) ListArtifacts(ctx context.Context, taskID string) (_ []agent.Artifact, err error) {
	defer wrap(&err, "ListArtifacts", taskID)
	raw, err := st.query(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :art)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(taskPK(taskID)), ":art": s("ART#")},
	}, nil)
	if err != nil {
		return nil, err
	}
	now := st.now().Unix()
	out := make([]agent.Artifact, 0, len(raw))
	for _, it := range raw {
		if !live(it, now) {
			continue
		}
		var a agent.Artifact
		if err := json.Unmarshal([]byte(str(it, attrData)), &a); err != nil {
			return nil, fmt.Errorf("corrupt artifact %s: %w", str(it, attrSK), err)
		}
		a.TaskID = taskID
		out = append(out, a)
	}
	return out, nil
}

// RemovedArtifact tells, from a stream record's keys, the artifact whose
// metadata was removed (its ttl passed, or its task was deleted): its bytes
// are then to be deleted (the notifier; the dispatcher of hitch serve).
func RemovedArtifact(keys map[string]types.AttributeValue) (taskID, artifactID string, ok bool) {
	tid, okPK := strings.CutPrefix(str(keys, attrPK), "TASK#")
	aid, okSK := strings.CutPrefix(str(keys, attrSK), "ART#")
	if !okPK || !okSK || tid == "" || aid == "" {
		return "", "", false
	}
	return tid, aid, true
}
