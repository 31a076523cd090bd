package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/storetest"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// newStore returns a store on a fresh table of the shared DynamoDB Local.
func newStore(tb testing.TB) *dynamo.Store {
	tb.Helper()
	client := ddblocal.Client(tb)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
	return dynamo.New(client, table)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) agent.Store { return newStore(tb) })
}

func TestCreateTableIdempotent(t *testing.T) {
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	for i := range 2 {
		if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
			t.Fatalf("CreateTable #%d: %v", i+1, err)
		}
	}
}

// The same write sent again a second later (its first try landed, its answer
// was lost) answers success: the retry's parameters are the first try's, so
// DynamoDB's idempotency token recognises it instead of answering
// IdempotentParameterMismatch.
func TestRetryASecondLater(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	task := &agent.Task{ID: uuid.Must(uuid.NewV7()).String(), SessionID: uuid.Must(uuid.NewV7()).String(), Agent: "acc", UserID: "u1",
		Status: agent.StatusCompleted, CreatedAt: now, UpdatedAt: now, Version: 1, NextSeq: 1, WriteID: uuid.Must(uuid.NewV7()).String()}
	w := &agent.Write{Task: task, Session: &agent.SessionLink{SessionID: task.SessionID, UserID: "u1", TaskID: task.ID, Agent: "acc", CreatedAt: now}}
	if err := s.Write(ctx, w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	if err := s.Write(ctx, w); err != nil {
		t.Errorf("the same create sent again a second later: %v, want nil", err)
	}
}
