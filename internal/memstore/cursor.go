package memstore

import (
	"github.com/hitch-agents/hitch/internal/agent"
)

const defaultLimit = 20

// position is a list's sort position (agent.ListPosition).
type position = agent.ListPosition
