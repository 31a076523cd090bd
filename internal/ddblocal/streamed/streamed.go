// Package streamed gives tests a table on DynamoDB Local whose stream feeds
// an outbox channel, as hitch serve reads it (the real dynamodbstreams
// client).
package streamed

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
)

// Table makes a new table on the shared DynamoDB Local and reads its
// stream (polling every poll; 0: hitch serve's default) into the feed it
// returns, once the stream's iterators are taken: what the store writes
// from then on is sent.
func Table(tb testing.TB, poll time.Duration) (*dynamo.Store, <-chan agent.OutboxItem) {
	tb.Helper()
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
	stream := &dynamo.Stream{Streams: streams, DB: client, Table: table, Poll: poll, Log: slog.New(slog.DiscardHandler),
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
	case <-stream.Ready:
	case err := <-done:
		tb.Fatalf("the table's stream: %v", err)
	}
	return dynamo.New(client, table), feed
}
