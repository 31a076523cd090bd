package dynamo_test

import (
	"context"
	"log/slog"
	"sync"
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

// Retention under hitch serve: when an artifact's metadata is removed (its
// ttl passed, or its task was deleted) the stream tells Removed which
// artifact's bytes to delete; other removals tell nothing. DynamoDB Local
// does not remove expired items promptly, so the removal here is the
// task's delete: the stream carries both the same way (keys, REMOVE).
func TestStreamRemovedArtifact(t *testing.T) {
	endpoint := ddblocal.Start(t)
	client := ddblocal.NewClient(endpoint)
	table := "hitch-" + uuid.NewString()
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	var mu sync.Mutex
	var removed []string
	sctx, cancel := context.WithCancel(ctx)
	stream := &dynamo.Stream{Streams: streams, DB: client, Table: table, Poll: 50 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
		Ready: make(chan struct{}), Removed: func(_ context.Context, taskID, artifactID string) {
			mu.Lock()
			removed = append(removed, taskID+"/"+artifactID)
			mu.Unlock()
		}}
	done := make(chan error, 1)
	go func() { done <- stream.Run(sctx, make(chan agent.OutboxItem, 16)) }()
	t.Cleanup(func() { cancel(); <-done })
	<-stream.Ready

	st := dynamo.New(client, table)
	task := &agent.Task{ID: agent.NewID(), SessionID: agent.NewID(), Agent: "acc", UserID: "u1", Status: agent.StatusCompleted,
		CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC(), Version: 1, NextSeq: 1, WriteID: agent.NewID(), ArtifactCount: 1}
	a := agent.Artifact{ID: agent.NewID(), Name: "r.md", MediaType: "text/markdown", RequestID: agent.NewID(), ToolCallID: "c1", CreatedAt: time.Now().UTC()}
	if err := st.Write(ctx, &agent.Write{Task: task, Items: []agent.Item{{Seq: 0, RequestID: a.RequestID, Role: agent.RoleUser,
		Content: []agent.Block{agent.TextBlock("hi")}}}, Artifacts: []agent.Artifact{a}}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	want := task.ID + "/" + a.ID
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := append([]string(nil), removed...)
		mu.Unlock()
		if len(got) > 0 {
			time.Sleep(time.Second) // the other removals of the batch, if any
			mu.Lock()
			got = append([]string(nil), removed...)
			mu.Unlock()
			if len(got) != 1 || got[0] != want {
				t.Fatalf("Removed got %v, want only %s (the META's removal tells nothing)", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no removal of the expired artifact reached the stream in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
