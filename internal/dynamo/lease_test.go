package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
)

// A renewal that crosses a transaction on META (TransactionConflict) is
// tried again, past the SDK's own attempts.
func TestRenewLeaseRetriesTransactionConflict(t *testing.T) {
	base := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), base, table); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conflicts := 0
	inject := func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("conflicts",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				mu.Lock()
				hit := middleware.GetOperationName(ctx) == "UpdateItem" && conflicts < 3
				if hit {
					conflicts++
				}
				mu.Unlock()
				if hit {
					return middleware.DeserializeOutput{}, middleware.Metadata{}, &types.TransactionConflictException{Message: aws.String("injected")}
				}
				return next.HandleDeserialize(ctx, in)
			}), middleware.Before)
	}
	opts := base.Options()
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), inject)
	s := dynamo.New(dynamodb.New(opts), table)
	now := time.Now().UTC()
	task := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u1", Status: agent.StatusRunning,
		CreatedAt: now, UpdatedAt: now, Version: 1, NextSeq: 1, WriteID: uuid.Must(uuid.NewV7()).String(),
		Active: &agent.ActiveRequest{ID: uuid.NewString(), Kind: agent.KindInvoke, Status: agent.StatusRunning, ClaimToken: "tok",
			LeaseUntil: now.Add(15 * time.Second), CreatedAt: now, FirstSeq: 1}}
	if err := s.Write(context.Background(), &agent.Write{Task: task}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RenewLease(context.Background(), task.ID, "tok", now.Add(30*time.Second), now)
	if err != nil {
		t.Fatalf("RenewLease after 3 transaction conflicts: %v", err)
	}
	if !got.Active.LeaseUntil.Equal(now.Add(30*time.Second).Truncate(time.Millisecond)) || got.Version != 2 {
		t.Errorf("renewed META: lease %s, version %d", got.Active.LeaseUntil, got.Version)
	}
	if conflicts != 3 {
		t.Errorf("%d conflicts injected, want 3", conflicts)
	}
}
