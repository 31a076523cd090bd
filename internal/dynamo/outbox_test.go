package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hitch-agents/hitch/internal/agent"
)

// TestListOutboxPastExpired: 600 outbox items whose ttl has passed (DynamoDB
// deletes them days late) stand ahead of two live ones in GSI3 — one put
// by this version (a sharded OUT#<shard> partition), one by a version
// before GSI3 was sharded (the one partition OUT). ListOutbox with a limit
// of 500 reads on past the expired items and finds both.
func TestListOutboxPastExpired(t *testing.T) {
	st, client, table, _ := countingStore(t)
	ctx := context.Background()
	old := time.Now().Add(-10 * 24 * time.Hour)
	put := func(gsiPK string, o agent.OutboxItem, ttl int64) {
		t.Helper()
		data, _ := json.Marshal(o)
		pk := "TASK#" + o.TaskID
		sv := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"PK": sv(pk), "SK": sv(o.SK()), "data": sv(string(data)), "request_id": sv(o.RequestID),
			"ttl":    &types.AttributeValueMemberN{Value: strconv.FormatInt(ttl, 10)},
			"GSI3PK": sv(gsiPK), "GSI3SK": sv(o.CreatedAt.UTC().Format(agent.ListTimeKey) + "#" + pk + "#" + o.SK()),
		}}); err != nil {
			t.Fatal(err)
		}
	}
	item := func(task string, i int, at time.Time) agent.OutboxItem {
		return agent.OutboxItem{TaskID: task, RequestID: "r", Epoch: 1, EventID: int64(i), Recipient: "wh0", Kind: agent.OutboxWebhook,
			Event: agent.EventRequestCompleted, Agent: "acc", UserID: "u", CreatedAt: at}
	}
	for i := range 600 {
		task := fmt.Sprintf("t%03d", i%10)
		put(fmt.Sprintf("OUT#%d", agent.ReaperShard(task)), item(task, i+1, old.Add(time.Duration(i)*time.Millisecond)), time.Now().Add(-time.Hour).Unix())
	}
	live := item("live", 1, old.Add(time.Hour))
	put(fmt.Sprintf("OUT#%d", agent.ReaperShard("live")), live, time.Now().Add(time.Hour).Unix())
	legacy := item("legacy", 1, old.Add(2*time.Hour))
	put("OUT", legacy, time.Now().Add(time.Hour).Unix())
	got, err := st.ListOutbox(ctx, time.Now(), 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TaskID != "live" || got[1].TaskID != "legacy" {
		t.Errorf("ListOutbox = %+v, want the live item, then the legacy one", got)
	}
}
