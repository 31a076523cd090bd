package enginetest_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
)

func TestMemory(t *testing.T) {
	enginetest.Run(t, func(testing.TB) agent.Store { return memstore.New() })
}
