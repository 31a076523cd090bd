package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// errPending marks what is being built right now (replaced in this session).
var errPending = errors.New("dynamo: not built yet")

// GetIdem implements agent.Store.
func (st *Store) GetIdem(ctx context.Context, key string) (*agent.IdemRecord, error) {
	return nil, errPending
}

// AppendEvents implements agent.Store.
func (st *Store) AppendEvents(ctx context.Context, taskID, requestID string, events []agent.StoredEvent, expires time.Time) error {
	return errPending
}

// ListEvents implements agent.Store.
func (st *Store) ListEvents(ctx context.Context, taskID, requestID string, after int64) ([]agent.StoredEvent, error) {
	return nil, errPending
}

// DeleteTask implements agent.Store.
func (st *Store) DeleteTask(ctx context.Context, t *agent.Task) error { return errPending }

// ExpireTask implements agent.Store.
func (st *Store) ExpireTask(ctx context.Context, t *agent.Task, until time.Time) error {
	return errPending
}
