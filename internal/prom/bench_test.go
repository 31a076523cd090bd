package prom_test

import (
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/prom"
)

// BenchmarkTurn is the metrics of a turn with a tool call.
func BenchmarkTurn(b *testing.B) {
	m := prom.New()
	b.ReportAllocs()
	for b.Loop() {
		m.FirstEvent("assistant", time.Millisecond)
		m.ModelCalled("assistant", agent.Usage{InputTokens: 100, OutputTokens: 20}, false, time.Millisecond)
		m.ToolCalled("assistant", "get_time", false, time.Millisecond)
		m.ModelCalled("assistant", agent.Usage{InputTokens: 130, OutputTokens: 10}, false, time.Millisecond)
		m.RequestEnded("assistant", agent.StatusCompleted, 3*time.Millisecond)
	}
}
