package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// faults breaks one DynamoDB call at the wire, inside the SDK's retry loop:
// the failAt-th call (event-log writes not counted) fails before it is sent,
// or, when lost, lands and then loses its answer (a retryable 500, which the
// SDK retries with the same request).
type faults struct {
	mu     sync.Mutex
	calls  int
	failAt int
	lost   bool
	// final makes a lost answer an error the SDK does not retry.
	final bool
	ops   []string
}

func (f *faults) arm(failAt int, lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.failAt, f.lost, f.final, f.ops = 0, failAt, lost, false, nil
}

func (f *faults) install(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("hitch-faults",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			op := middleware.GetOperationName(ctx)
			if op == "BatchWriteItem" {
				return next.HandleDeserialize(ctx, in)
			}
			f.mu.Lock()
			f.calls++
			hit := f.calls == f.failAt
			lost, final := f.lost, f.final
			f.ops = append(f.ops, op)
			f.mu.Unlock()
			if !hit {
				return next.HandleDeserialize(ctx, in)
			}
			if !lost {
				return middleware.DeserializeOutput{}, middleware.Metadata{}, fmt.Errorf("injected failure of %s", op)
			}
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil {
				return out, md, err
			}
			if final {
				return out, md, errors.New("injected: the answer was lost after the call landed, not retried")
			}
			return out, md, &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500, Header: http.Header{}}},
				Err:      errors.New("injected: the answer was lost after the call landed"),
			}
		}), middleware.Before)
}

func faultyEnv(t *testing.T) (*enginetest.Env, *faults) {
	t.Helper()
	base := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), base, table); err != nil {
		t.Fatal(err)
	}
	f := &faults{}
	opts := base.Options()
	opts.APIOptions = append(append([]func(*middleware.Stack) error(nil), opts.APIOptions...), f.install)
	return enginetest.New(t, dynamo.New(dynamodb.New(opts), table)), f
}

// The claim of a resume lands but its answer is lost: the SDK retries it, the
// store recognises its own write, and the tool runs once.
func TestResumeClaimAnswerLost(t *testing.T) {
	env, f := faultyEnv(t)
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.Say("done"))
	f.arm(2, true) // read, then the claim
	out, _, err := env.Resume(res, "alice", enginetest.Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	if diff := cmp.Diff([]string{"delete"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("guarded runs (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	t.Logf("calls: %v", f.ops)
	f.mu.Unlock()
}

// Each DynamoDB call of a resume fails in turn: the resume answers a 5xx
// (internal), nothing is half-written, and a retry completes the request
// with the approved call run once.
func TestResumeEachCallFailing(t *testing.T) {
	for failAt, op := range map[int]string{1: "read", 2: "claim", 3: "commit"} {
		t.Run(op, func(t *testing.T) {
			env, f := faultyEnv(t)
			res, _ := env.Pause(t)
			before, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
			f.arm(failAt, false)
			env.Model.Add(agenttest.Say("done"))
			out, _, err := env.Resume(res, "alice", enginetest.Approve())
			if failAt < 3 {
				if !strings.HasPrefix(enginetest.Code(err), "internal") {
					t.Fatalf("the %s failing: %+v %v, want an internal error", op, out, err)
				}
				after, items2, _ := env.Store.LoadTask(context.Background(), res.TaskID)
				if diff := cmp.Diff(before, after); diff != "" || len(items2) != len(items) {
					t.Fatalf("a failed %s changed the task (-before +after):\n%s", op, diff)
				}
			} else if err != nil || out.Status != agent.StatusFailed || out.Error.Code != agent.CodeInternal {
				t.Fatalf("the commit failing: %+v %v, want Failed internal", out, err)
			}
			if failAt == 3 {
				// Every call that ran has its result saved.
				_, items, _ := env.Store.LoadTask(context.Background(), res.TaskID)
				if err := agenttest.CheckMessages(agent.BuildMessages(nil, items)); err != nil {
					t.Errorf("the history after the failure: %v", err)
				}
			}
			f.arm(0, false)
			if failAt < 3 {
				env.Model.Add(agenttest.Say("done"))
			}
			out, _, err = env.Resume(res, "alice", enginetest.Approve())
			if err != nil || out.Status != agent.StatusCompleted || out.Output != "done" {
				t.Fatalf("the retry: %+v %v", out, err)
			}
			if diff := cmp.Diff([]string{"delete"}, env.Guarded.Runs()); diff != "" {
				t.Errorf("guarded runs (-want +got):\n%s", diff)
			}
		})
	}
}

// The claim lands but its answer is lost for good (no SDK retry): the engine
// reads the task, sees its own write, and runs the request once.
func TestResumeClaimLandedAnswerError(t *testing.T) {
	env, f := faultyEnv(t)
	res, _ := env.Pause(t)
	env.Model.Add(agenttest.Say("done"))
	f.arm(2, true)
	f.mu.Lock()
	f.final = true
	f.mu.Unlock()
	out, _, err := env.Resume(res, "alice", enginetest.Approve())
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	if diff := cmp.Diff([]string{"delete"}, env.Guarded.Runs()); diff != "" {
		t.Errorf("guarded runs (-want +got):\n%s", diff)
	}
}
