package dynamo_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
)

// counter counts the SDK operations a client makes.
type counter struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

// countingStore returns a store on a fresh table, its raw client, and the
// counter of its calls.
func countingStore(t *testing.T) (*dynamo.Store, *dynamodb.Client, string, *counter) {
	t.Helper()
	c := &counter{ops: map[string]int{}}
	client := ddblocal.NewClient(ddblocal.Start(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.ops[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	c.take()
	return dynamo.New(client, table), client, table, c
}

func rawItems(t *testing.T, client *dynamodb.Client, table, pk string) map[string]map[string]types.AttributeValue {
	t.Helper()
	p := dynamodb.NewQueryPaginator(client, &dynamodb.QueryInput{
		TableName: &table, KeyConditionExpression: ptr("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	})
	m := map[string]map[string]types.AttributeValue{}
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			m[it["SK"].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return m
}

func ptr(s string) *string { return &s }

func attr(it map[string]types.AttributeValue, name string) string {
	switch v := it[name].(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case nil:
		return ""
	}
	return "?"
}

func TestLayoutAndCalls(t *testing.T) {
	ctx := context.Background()
	s, client, table, calls := countingStore(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	task := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u1", Status: agent.StatusRunning,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 3, WriteID: uuid.NewString()}
	img := agent.Block{Type: agent.BlockImage, MediaType: "image/png", Data: make([]byte, 1<<20)}
	items := []agent.Item{{Seq: 1, RequestID: "r1", Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("hi"), img}},
		{Seq: 2, RequestID: "r1", Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("hello")}}}
	link := &agent.SessionLink{SessionID: task.SessionID, UserID: "u1", TaskID: task.ID, Agent: "acc", CreatedAt: at}
	if err := s.Write(ctx, &agent.Write{Task: task, Items: items, Session: link}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"TransactWriteItems": 1}, calls.take()); diff != "" {
		t.Errorf("calls of a new task's write (-want +got):\n%s", diff)
	}
	if _, _, err := s.LoadTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Query": 2}, calls.take()); diff != "" {
		t.Errorf("calls of LoadTask of a 1.4 MB history (-want +got):\n%s", diff)
	}

	raw := rawItems(t, client, table, "TASK#"+task.ID)
	meta := raw["META"]
	want := map[string]string{"version": "N:1", "write_id": "S:" + task.WriteID, "owner": "S:u1", "agent": "S:acc", "status": "S:Running",
		"GSI1PK": "S:USER#u1#acc", "GSI1SK": "S:Running#2026-03-01T12:00:00.000000000Z#" + task.ID, "ttl": ""}
	for name, w := range want {
		if got := attr(meta, name); got != w {
			t.Errorf("META %s = %q, want %q", name, got, w)
		}
	}
	head := raw["ITEM#0000000001"]
	if got := attr(head, "parts"); got != "N:5" { // 1 MB as base64 JSON is ~1.4 MB: five parts of ≤ 300 KB
		t.Errorf("split entry's parts = %q, want N:5", got)
	}
	for _, sk := range []string{"ITEM#0000000001#1", "ITEM#0000000001#4", "ITEM#0000000002"} {
		if _, ok := raw[sk]; !ok {
			t.Errorf("no item %s; have %v", sk, keys(raw))
		}
	}
	if got := attr(raw["ITEM#0000000002"], "request_id"); got != "S:r1" {
		t.Errorf("entry request_id = %q, want S:r1", got)
	}
	sess := rawItems(t, client, table, "SESSION#"+task.SessionID)
	if got := attr(sess["META"], "owner"); got != "S:u1" {
		t.Errorf("session owner = %q, want S:u1", got)
	}
	if _, ok := sess["TASK#2026-03-01T12:00:00.000000000Z#"+task.ID]; !ok {
		t.Errorf("no session index entry; have %v", keys(sess))
	}

	// Retention: every item of the write carries ttl.
	n := task.Clone()
	n.Version, n.WriteID, n.NextSeq = 2, uuid.NewString(), 4
	exp := time.Now().Add(time.Hour)
	if err := s.Write(ctx, &agent.Write{Task: n, PrevVersion: 1, Expires: exp,
		Items:    []agent.Item{{Seq: 3, RequestID: "r2", Role: agent.RoleUser}},
		Requests: []agent.RequestRecord{{RequestView: agent.RequestView{RequestID: "r1", Status: agent.StatusCompleted}}}}); err != nil {
		t.Fatal(err)
	}
	raw = rawItems(t, client, table, "TASK#"+task.ID)
	for _, sk := range []string{"META", "ITEM#0000000003", "REQ#r1"} {
		if got := attr(raw[sk], "ttl"); !strings.HasPrefix(got, "N:") {
			t.Errorf("%s ttl = %q, want a Number", sk, got)
		}
	}
	calls.take()
	small := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u1", Status: agent.StatusRunning,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 2, WriteID: uuid.NewString()}
	if err := s.Write(ctx, &agent.Write{Task: small, Items: items[1:]}); err != nil {
		t.Fatal(err)
	}
	calls.take()
	if _, _, err := s.LoadTask(ctx, small.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Query": 1}, calls.take()); diff != "" {
		t.Errorf("calls of LoadTask under 1 MB (-want +got):\n%s", diff)
	}

	// A write past 100 actions is split into transactions.
	n2 := n.Clone()
	n2.Version, n2.WriteID, n2.NextSeq = 3, uuid.NewString(), 154
	var many []agent.Item
	for i := int64(4); i < 154; i++ {
		many = append(many, agent.Item{Seq: i, RequestID: "r3", Role: agent.RoleTool})
	}
	if err := s.Write(ctx, &agent.Write{Task: n2, PrevVersion: 2, Items: many}); err != nil {
		t.Fatal(err)
	}
	if got := calls.take()["TransactWriteItems"]; got != 2 {
		t.Errorf("a 151-action write took %d transactions, want 2", got)
	}
	_, loaded, err := s.LoadTask(ctx, task.ID)
	if err != nil || len(loaded) != 153 {
		t.Errorf("LoadTask = %d items, %v; want 153", len(loaded), err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
