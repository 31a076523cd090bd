package notify_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// TestStreamOnDynamoDBLocal: on DynamoDB Local, the table's stream (read
// with the real dynamodbstreams client) feeds the dispatcher: a pause and a
// completion are delivered, in order, and their items deleted.
func TestStreamOnDynamoDBLocal(t *testing.T) {
	store, feed := streamed(t, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)         // the stream's iterators are taken before the first write
	s := startOn(t, store, feed, 1, time.Hour) // no sweep after the first: the stream alone delivers
	env := s.env
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "two webhooks", func() bool { return len(s.hooks.Delivered()) == 2 })
	if diff := cmp.Diff([]string{agent.EventRequestPaused, agent.EventRequestCompleted}, notifytest.Types(s.hooks.Delivered())); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
	wait(t, "the outbox to empty", func() bool {
		left, err := store.ListOutbox(context.Background(), time.Now().Add(24*365*time.Hour), 0)
		return err == nil && len(left) == 0
	})
}

// streamed makes a table on DynamoDB Local and reads its stream (the real
// dynamodbstreams client, polling every poll; 0: the default) into the feed
// it returns, as hitch serve does.
func streamed(tb testing.TB, poll time.Duration) (*dynamo.Store, <-chan agent.OutboxItem) {
	tb.Helper()
	endpoint := ddblocal.Start(tb)
	client := ddblocal.NewClient(endpoint)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		tb.Fatal(err)
	}
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	feed := make(chan agent.OutboxItem, 64)
	ctx, cancel := context.WithCancel(context.Background())
	stream := &dynamo.Stream{Streams: streams, DB: client, Table: table, Poll: poll, Log: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx, feed) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("stream: %v", err)
		}
	})
	return dynamo.New(client, table), feed
}
