package perf_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/perf"
)

// orchEnv is the orchestration engine (desk → leaf) on a fresh DynamoDB
// Local table whose client counts.
func orchEnv(tb testing.TB) (*enginetest.Orch, *perf.Counter) {
	tb.Helper()
	store, c := countedStore(tb)
	o := enginetest.NewOrch(tb, store)
	o.E.Log = slog.New(slog.DiscardHandler)
	return o, c
}

// TestCallsDelegation counts the DynamoDB calls of a depth-1 delegation
// (docs/guide/budgets.md, "Budgets"): a call whose child completes, one whose child pauses (the
// cascading pause), the decision at the leaf and the caller's
// continuation, and the decision sent to the caller.
func TestCallsDelegation(t *testing.T) {
	o, c := orchEnv(t)
	count := func() (map[string]int, int) {
		calls, n := c.Calls()
		c.Reset()
		return calls, n
	}
	c.Reset()
	res, _ := o.Invoke(t, "desk", "", enginetest.CallAgent("leaf", "hello"))
	if res.Status != agent.StatusCompleted {
		t.Fatalf("%+v", res)
	}
	calls, n := count()
	t.Logf("delegation, child completes: %d calls %v", n, calls)
	// desk: create, the call recorded, commit (3); leaf: create, commit (2).
	want(t, "a delegation whose child completes", calls, map[string]int{"TransactWriteItems": 5})

	paused, _ := o.Invoke(t, "desk", "", enginetest.CallAgent("leaf", enginetest.Append("calls.txt", "x")))
	if paused.Status != agent.StatusPaused {
		t.Fatalf("%+v", paused)
	}
	calls, n = count()
	t.Logf("delegation, cascading pause: %d calls %v", n, calls)
	// desk: create, the call recorded, its pause (3); leaf: create, pause (2).
	want(t, "a cascading pause", calls, map[string]int{"TransactWriteItems": 5})

	p := paused.PendingApprovals[0]
	if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	calls, n = count()
	t.Logf("decision at the leaf: %d calls %v", n, calls)
	want(t, "the leaf's resume", calls, map[string]int{"Query": 1, "TransactWriteItems": 2})
	if err := o.E.ContinueCaller(context.Background(), paused.TaskID, paused.RequestID); err != nil {
		t.Fatal(err)
	}
	calls, n = count()
	t.Logf("the caller's continuation: %d calls %v", n, calls)
	// A resume turn (3): its task read with the child's join, the claim,
	// the commit.
	want(t, "the caller's continuation", calls, map[string]int{"Query": 1, "TransactWriteItems": 2, "GetItem": 0})

	again, _ := o.Invoke(t, "desk", "", enginetest.CallAgent("leaf", enginetest.Append("calls.txt", "y")))
	count()
	if out, _, err := o.Resume("desk", again.TaskID, again.RequestID, enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	calls, n = count()
	t.Logf("decision at the caller (leaf resume + caller continuation): %d calls %v", n, calls)
	// The leaf's resume (3) and the caller's turn (3), in one invocation,
	// the leaf's claim and the caller's one transaction: 5.
	want(t, "a decision sent to the caller", calls, map[string]int{"Query": 2, "TransactWriteItems": 3, "GetItem": 0})
}

// BenchmarkChainResume: a decision at the leaf of desk → leaf, through to
// desk's completion, on DynamoDB Local: the leaf's resume (what its client
// waits for) then desk's continuation (what the dispatcher runs next).
// Reports p50 and p99 in ms, both and the leaf's part.
func BenchmarkChainResume(b *testing.B) {
	o, _ := orchEnv(b)
	var whole, leaf []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		paused, _ := o.Invoke(b, "desk", "", enginetest.CallAgent("leaf", enginetest.Append("bench.txt", "x")))
		if paused.Status != agent.StatusPaused {
			b.Fatalf("%+v", paused)
		}
		p := paused.PendingApprovals[0]
		b.StartTimer()
		start := time.Now()
		if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
			b.Fatalf("%+v %v", out, err)
		}
		leaf = append(leaf, time.Since(start))
		if err := o.E.ContinueCaller(context.Background(), paused.TaskID, paused.RequestID); err != nil {
			b.Fatal(err)
		}
		whole = append(whole, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(whole, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(whole, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(leaf, 0.5)), "leaf-p50-ms")
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func want(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %d, want %d (all: %v)", what, k, got[k], v, got)
		}
	}
}
