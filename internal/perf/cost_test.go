package perf_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/perf"
)

// List prices, us-east-1, in dollars (docs/guide/budgets.md, "What a turn costs"):
// DynamoDB on demand (standard table class) per million request units,
// Lambda on arm64 per GB-second and per million requests, API Gateway's
// REST API per million requests (the first 333 million a month).
const (
	priceWriteUnit      = 0.625 / 1e6
	priceReadUnit       = 0.125 / 1e6
	priceLambdaGBSecond = 0.0000133334
	priceLambdaRequest  = 0.20 / 1e6
	priceAPIRequest     = 3.50 / 1e6
	// lambdaGB is the invoke and resume functions' memory (template.yaml).
	lambdaGB = 0.5
	// modelSecondsPerCall is what a deployed turn waits for Bedrock per
	// model call, an assumption (Claude Sonnet 4 streaming a tool call or a
	// short answer): the local model answers at once.
	modelSecondsPerCall = 3.0
)

// TestTurnCost runs the prompt-caching benchmark's task (20 turns, three
// model calls each, an approval in every fourth) on DynamoDB Local with
// caching on, and reports what 1,000 such turns cost deployed: the DynamoDB
// calls, request units and bytes of its store, measured; Lambda
// GB-seconds, from the measured time of Hitch's own work plus the assumed
// model wait; model tokens, from the local model's accounting. It fails if
// the model's usage differs from the same task's on the memory store (the
// store changes nothing the model sees).
func TestTurnCost(t *testing.T) {
	base := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), base, table); err != nil {
		t.Fatal(err)
	}
	c := perf.NewCounter()
	r := newCacheRunOn(t, 5*time.Minute, dynamo.New(c.UnitsClient(base), table))
	c.Reset()
	cpu0 := cpuTime(t)
	wall0 := time.Now()
	for range cacheTurns {
		r.next()
	}
	wall, cpu := time.Since(wall0), cpuTime(t)-cpu0
	u := c.Usage()
	mem, _ := cacheTask(t, 5*time.Minute)
	if r.model.usage != mem {
		t.Errorf("model usage on DynamoDB %+v, on the memory store %+v", r.model.usage, mem)
	}
	// per 1,000 turns
	k := 1000.0 / cacheTurns
	invocations := float64(cacheTurns + cacheTurns/approvalEvery) // an invoke per turn, a resume per approval
	calls := 0
	for _, n := range u.Calls {
		calls += n
	}
	modelSeconds := float64(r.model.calls) * modelSecondsPerCall
	gbSeconds := lambdaGB * (wall.Seconds() + modelSeconds)
	ddb := u.WriteUnits*priceWriteUnit + u.ReadUnits*priceReadUnit
	lambda := gbSeconds*priceLambdaGBSecond + invocations*priceLambdaRequest
	api := invocations * priceAPIRequest
	model := dollars(r.model.usage)
	t.Logf("per 1,000 turns: DynamoDB %.0f calls %v, %.0f write units, %.0f read units, %.1f MB sent, %.1f MB received: $%.4f",
		float64(calls)*k, u.Calls, u.WriteUnits*k, u.ReadUnits*k, float64(u.BytesSent)*k/1e6, float64(u.BytesReceived)*k/1e6, ddb*k)
	t.Logf("per 1,000 turns: Lambda %.0f invocations, Hitch's own work %.1f ms wall, %.1f ms CPU a turn (this process, the local model in it) + %.0f s model wait a turn = %.0f GB-s: $%.4f; API Gateway $%.4f",
		invocations*k, wall.Seconds()*1000/cacheTurns, cpu.Seconds()*1000/cacheTurns, modelSeconds/cacheTurns, gbSeconds*k, lambda*k, api*k)
	off, _ := cacheTask(t, 0)
	t.Logf("per 1,000 turns: model %+v ×%.0f: $%.2f (caching off: $%.2f)", r.model.usage, k, model*k, dollars(off)*k)
}
