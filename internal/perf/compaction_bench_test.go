package perf_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// seedHistory appends n entries of about size bytes to the task in writes of
// 99, straight through the store (turns would be too slow for 5,000); with
// compacted, it then puts a summary and starts the context 20 entries back,
// as a compaction would have left it.
func seedHistory(tb testing.TB, s agent.Store, taskID string, n, size int, compacted bool) {
	tb.Helper()
	ctx := context.Background()
	t, err := s.GetTask(ctx, taskID)
	if err != nil {
		tb.Fatal(err)
	}
	text := strings.Repeat("w ", size/2)
	put := func(items []agent.Item, shape func(*agent.Task)) {
		next := t.Clone()
		next.NextSeq += int64(len(items))
		next.Version++
		next.WriteID = uuid.NewString()
		shape(next)
		if err := s.Write(ctx, &agent.Write{Task: next, PrevVersion: t.Version, Items: items}); err != nil {
			tb.Fatal(err)
		}
		t = next
	}
	for n > 0 {
		batch := min(n, 99)
		items := make([]agent.Item, 0, batch)
		for i := range batch {
			seq := t.NextSeq + int64(i)
			role := agent.RoleUser
			if seq%2 == 0 {
				role = agent.RoleAssistant
			}
			items = append(items, agent.Item{Seq: seq, RequestID: uuid.NewString(), Role: role, CreatedAt: time.Now(),
				Content: []agent.Block{agent.TextBlock(text)}})
		}
		put(items, func(*agent.Task) {})
		n -= batch
	}
	if !compacted {
		return
	}
	start := t.NextSeq - 20
	if start%2 == 0 {
		start++
	}
	summary := agent.Item{Seq: t.NextSeq, RequestID: uuid.NewString(), Role: agent.RoleSummary, CreatedAt: time.Now(),
		Content: []agent.Block{agent.TextBlock("summary: " + text[:200])}, Compacts: &agent.Compaction{From: 1, To: start, Summary: t.NextSeq}}
	put([]agent.Item{summary}, func(next *agent.Task) {
		next.Context = agent.ContextStart{Seq: start, Summary: summary.Seq}
	})
}

// BenchmarkFollowOnRead reports the DynamoDB calls and the bytes read by a
// follow-on over 100 and 5,000 history entries (about 500 bytes each), with
// context compaction off and on (docs/guide/budgets.md, "Budgets": with compaction on, one page at
// any history length).
func BenchmarkFollowOnRead(b *testing.B) {
	for _, n := range []int{100, 5000} {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("history=%d/compaction=off", n)
			if on {
				name = fmt.Sprintf("history=%d/compaction=on", n)
			}
			b.Run(name, func(b *testing.B) {
				env, c := dynamoEnv(b)
				if on {
					ag, _ := env.E.Agents.Get("acc")
					ag.Context = agent.ContextPolicy{MaxInputTokens: 100_000, KeepTurns: 4}
				}
				env.Model.Add(enginetest.AutoTurn)
				first, _ := env.Invoke(b, "", "hi")
				seedHistory(b, env.Store, first.TaskID, n, 500, on)
				c.Reset()
				b.ResetTimer()
				for range b.N {
					env.Model.Add(enginetest.AutoTurn, enginetest.AutoTurn)
					if res, _ := env.Invoke(b, first.TaskID, "again"); res.Status != agent.StatusCompleted {
						b.Fatalf("%+v", res)
					}
				}
				b.StopTimer()
				calls, total := c.Calls()
				b.ReportMetric(float64(total)/float64(b.N), "ddb-calls/op")
				b.ReportMetric(float64(calls["Query"])/float64(b.N), "queries/op")
				b.ReportMetric(float64(c.ReadBytes())/float64(b.N), "read-bytes/op")
			})
		}
	}
}
