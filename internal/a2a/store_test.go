package a2a_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/ddblocal/streamed"
	"github.com/hitch-agents/hitch/internal/memstore"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// onBothStores runs a test of two systems on the memory store, then on
// DynamoDB Local (each system a table of its own, its dispatcher fed by the
// table's stream, as hitch serve does).
func onBothStores(t *testing.T, test func(t *testing.T)) {
	t.Run("memory", test)
	t.Run("dynamodb", test)
}

// onDynamo is whether the test runs on DynamoDB Local (onBothStores).
func onDynamo(tb testing.TB) bool {
	return strings.HasSuffix(tb.Name(), "/dynamodb") || strings.Contains(tb.Name(), "/dynamodb/")
}

// newStore makes a system's store and the outbox feed its dispatcher reads:
// the memory store's queue, or a new table's stream on DynamoDB Local.
func newStore(tb testing.TB) (agent.Store, <-chan agent.OutboxItem) {
	tb.Helper()
	if !onDynamo(tb) {
		s := memstore.New()
		return s, s.Feed()
	}
	return streamed.Table(tb, 20*time.Millisecond)
}
