package a2a_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
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
	endpoint := ddblocal.Start(tb)
	client := ddblocal.NewClient(endpoint)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		tb.Fatal(err)
	}
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	feed := make(chan agent.OutboxItem, 256)
	ctx, cancel := context.WithCancel(context.Background())
	stream := &dynamo.Stream{Streams: streams, DB: client, Table: table, Poll: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
		Ready: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx, feed) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("the table's stream: %v", err)
		}
	})
	select {
	case <-stream.Ready: // what the system writes from now on is streamed
	case err := <-done:
		tb.Fatalf("the table's stream: %v", err)
	}
	return dynamo.New(client, table), feed
}
