package emf_test

import (
	"io"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/emf"
)

// BenchmarkTurnLines is the EMF lines of a turn with a tool call: the
// request, two model calls, the tool call, the first event.
func BenchmarkTurnLines(b *testing.B) {
	w := emf.New(io.Discard, "", "invoke")
	b.ReportAllocs()
	for b.Loop() {
		w.FirstEvent("assistant", time.Millisecond)
		w.ModelCalled("assistant", agent.Usage{InputTokens: 100, OutputTokens: 20}, false, time.Millisecond)
		w.ToolCalled("assistant", "get_time", false, time.Millisecond)
		w.ModelCalled("assistant", agent.Usage{InputTokens: 130, OutputTokens: 10}, false, time.Millisecond)
		w.RequestEnded("assistant", agent.StatusCompleted, 3*time.Millisecond)
	}
}
