package memstore_test

import (
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(testing.TB) agent.Store { return memstore.New() })
}

func TestBytesContract(t *testing.T) {
	storetest.RunBytes(t, func(tb testing.TB) agent.ArtifactBytes { return memstore.NewBytes() })
}
