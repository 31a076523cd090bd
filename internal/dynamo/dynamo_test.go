package dynamo_test

import (
	"context"
	"testing"

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
