package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
)

type oneAgent struct{}

func (oneAgent) Get(name string) (*agent.Agent, bool) {
	return &agent.Agent{Name: name}, name == "acc"
}

// BenchmarkReaperSweep: one sweep of the reaper's index on DynamoDB Local
// with 10,000 legs running (their leases renewed, claimed an hour ago) and
// one dead leg claimed after them: the sweep pages through every entry,
// reads the METAs in batches and finds the dead one. It reports the
// DynamoDB calls of a sweep by operation and its time.
// sweepTable is the benchmark's table, made once (a benchmark function
// runs more than once).
var sweepTable struct {
	once sync.Once
	st   *dynamo.Store
	c    *counter
}

const sweepLegs = 10_000

func BenchmarkReaperSweep(b *testing.B) {
	sweepTable.once.Do(func() { sweepTable.st, sweepTable.c = sweepSetup(b) })
	st, c, legs := sweepTable.st, sweepTable.c, sweepLegs
	if st == nil {
		b.Fatal("no table")
	}
	ctx := context.Background()
	e := &agent.Engine{Store: st, Agents: oneAgent{}}
	c.take()
	var spent time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var due []agent.Takeover
		next, err := e.SweepDue(ctx, "", time.Time{}, func(tk agent.Takeover) bool { due = append(due, tk); return true })
		spent += time.Since(start)
		if err != nil || next != "" || len(due) != 1 {
			b.Fatalf("the sweep: %+v %q %v, want the dead leg", due, next, err)
		}
	}
	b.StopTimer()
	ops := c.take()
	b.ReportMetric(float64(legs+1), "entries")
	b.ReportMetric(float64(ops["Query"])/float64(b.N), "Query/sweep")
	b.ReportMetric(float64(ops["BatchGetItem"])/float64(b.N), "BatchGetItem/sweep")
	b.ReportMetric(float64(ops["GetItem"])/float64(b.N), "GetItem/sweep")
	b.ReportMetric(float64(spent.Milliseconds())/float64(b.N), "ms/sweep")
}

func sweepSetup(b *testing.B) (*dynamo.Store, *counter) {
	const legs = sweepLegs
	c := &counter{ops: map[string]int{}}
	client := ddblocal.NewClient(ddblocal.Start(b), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.ops[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	table := "hitch-" + uuid.NewString()
	ctx := context.Background()
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		b.Fatal(err)
	}
	st := dynamo.New(client, table)
	now := time.Now()
	put := func(claimed, lease time.Time) {
		a := &agent.ActiveRequest{ID: uuid.NewString(), Kind: agent.KindInvoke, Status: agent.StatusRunning, ClaimToken: uuid.NewString(),
			ClaimedAt: claimed, LeaseUntil: lease, Round: 1, CreatedAt: claimed, FirstSeq: 1}
		tk := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u", Status: agent.StatusRunning,
			CreatedAt: claimed, UpdatedAt: claimed, Version: 1, NextSeq: 1, WriteID: uuid.NewString(), Active: a}
		if err := st.Write(ctx, &agent.Write{Task: tk, Session: &agent.SessionLink{SessionID: tk.SessionID, UserID: "u", TaskID: tk.ID,
			Agent: "acc", CreatedAt: claimed}}); err != nil {
			b.Error(err)
		}
	}
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				put(now.Add(-time.Hour).Add(time.Duration(i)*time.Millisecond), now.Add(24*time.Hour))
			}
		}()
	}
	for i := range legs {
		work <- i
	}
	close(work)
	wg.Wait()
	put(now.Add(-time.Minute), now.Add(-time.Minute+agent.LeaseDuration)) // the dead one
	return st, c
}
