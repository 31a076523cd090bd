package enginetest_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

func TestMemory(t *testing.T) {
	enginetest.Run(t, func(testing.TB) agent.Store { return memstore.New() })
}

func TestDynamoDB(t *testing.T) {
	enginetest.Run(t, dynamoStore)
}

func dynamoStore(tb testing.TB) agent.Store {
	client := ddblocal.Client(tb)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		tb.Fatal(err)
	}
	return dynamo.New(client, table)
}

// Orchestration (docs/architecture.md), in memory and on DynamoDB Local.
func TestOrchestrationMemory(t *testing.T) {
	enginetest.RunOrchestration(t, func(testing.TB) agent.Store { return memstore.New() })
}

func TestOrchestrationDynamoDB(t *testing.T) {
	enginetest.RunOrchestration(t, dynamoStore)
}

// A decision at a caller too wide for one transaction, in memory (see
// enginetest.RunTooWide).
func TestTooWideForOneTransaction(t *testing.T) {
	enginetest.RunTooWide(t, func(testing.TB) agent.Store { return memstore.New() })
}
