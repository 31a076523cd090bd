package notify

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

// TestRetryLevel: a continuation refused because the caller's leg still
// runs is the usual case, logged at debug (a newcomer's server printed it
// at info for every sub-agent call); a failure stays at info.
func TestRetryLevel(t *testing.T) {
	busy := fmt.Errorf("%w: continue r1: %w", ErrRetry, agent.ErrBusy)
	for _, tc := range []struct {
		name  string
		o     agent.OutboxItem
		err   error
		level slog.Level
	}{
		{"busy continuation", agent.OutboxItem{Event: agent.EventContinue}, busy, slog.LevelDebug},
		{"poll", agent.OutboxItem{Event: agent.EventPoll}, fmt.Errorf("%w: poll r1: x", ErrRetry), slog.LevelDebug},
		{"failed continuation", agent.OutboxItem{Event: agent.EventContinue}, fmt.Errorf("%w: continue r1: %w", ErrRetry, errors.New("store down")), slog.LevelInfo},
		{"webhook", agent.OutboxItem{Event: "request.completed"}, fmt.Errorf("%w: webhook: 500", ErrRetry), slog.LevelInfo},
	} {
		if got := retryLevel(tc.o, tc.err); got != tc.level {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.level)
		}
	}
}
