package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/hitch-agents/hitch/internal/agent"
)

// GetArtifact implements agent.Store.
func (s *Store) GetArtifact(ctx context.Context, taskID, artifactID string) (_ *agent.Artifact, err error) {
	defer wrap(&err, "GetArtifact", func() string { return taskID + "," + artifactID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil, agent.ErrNotFound
	}
	r, ok := tr.keyed[agent.ArtifactSK(artifactID)]
	if !ok || !live(r.ttl, s.now()) {
		return nil, agent.ErrNotFound
	}
	var a agent.Artifact
	if err := json.Unmarshal(r.data, &a); err != nil {
		return nil, fmt.Errorf("corrupt artifact %s: %w", artifactID, err)
	}
	a.TaskID = taskID
	return &a, nil
}

// ListArtifacts implements agent.Store.
func (s *Store) ListArtifacts(ctx context.Context, taskID string) (_ []agent.Artifact, err error) {
	defer wrap(&err, "ListArtifacts", func() string { return taskID })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tasks[taskID]
	if tr == nil {
		return nil, nil
	}
	now := s.now()
	var sks []string
	for sk, r := range tr.keyed {
		if strings.HasPrefix(sk, "ART#") && live(r.ttl, now) {
			sks = append(sks, sk)
		}
	}
	slices.Sort(sks)
	out := make([]agent.Artifact, 0, len(sks))
	for _, sk := range sks {
		var a agent.Artifact
		if err := json.Unmarshal(tr.keyed[sk].data, &a); err != nil {
			return nil, fmt.Errorf("corrupt artifact %s: %w", sk, err)
		}
		a.TaskID = taskID
		out = append(out, a)
	}
	return out, nil
}

// Bytes keeps artifacts' bytes in memory: the memory store's companion
// (agent.ArtifactBytes).
type Bytes struct {
	mu    sync.Mutex
	tasks map[string]map[string][]byte
}

var _ agent.ArtifactBytes = (*Bytes)(nil)

// NewBytes returns an empty in-memory byte store.
func NewBytes() *Bytes { return &Bytes{tasks: map[string]map[string][]byte{}} }

// Put implements agent.ArtifactBytes: the body is read whole first, so a
// body that fails keeps nothing.
func (b *Bytes) Put(ctx context.Context, taskID, artifactID string, body io.Reader) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("memstore.Bytes.Put(%s, %s): %w", taskID, artifactID, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tasks[taskID] == nil {
		b.tasks[taskID] = map[string][]byte{}
	}
	b.tasks[taskID][artifactID] = data
	return nil
}

// Len tells how many artifacts' bytes it holds for the task.
func (b *Bytes) Len(taskID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tasks[taskID])
}

// Open implements agent.ArtifactBytes.
func (b *Bytes) Open(ctx context.Context, taskID, artifactID string) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.tasks[taskID][artifactID]
	if !ok {
		return nil, fmt.Errorf("memstore.Bytes.Open(%s, %s): %w", taskID, artifactID, agent.ErrNotFound)
	}
	return io.NopCloser(strings.NewReader(string(data))), nil
}

// Delete implements agent.ArtifactBytes.
func (b *Bytes) Delete(ctx context.Context, taskID, artifactID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.tasks[taskID], artifactID)
	return nil
}

// DeleteTask implements agent.ArtifactBytes.
func (b *Bytes) DeleteTask(ctx context.Context, taskID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.tasks, taskID)
	return nil
}

// AddArtifactBytes implements agent.Store.
func (s *Store) AddArtifactBytes(ctx context.Context, userID string, delta, limit int64) (_ int64, err error) {
	defer wrap(&err, "AddArtifactBytes", func() string { return userID })
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.quota[userID]
	if delta > 0 && limit > 0 && cur+delta > limit {
		return cur, agent.ErrQuotaExceeded
	}
	s.quota[userID] = max(cur+delta, 0)
	return s.quota[userID], nil
}

// DropExpiredArtifacts removes the artifacts whose ttl (retention) has
// passed and deletes their bytes from b, as DynamoDB's TTL and the
// notifier do on AWS (docs/architecture.md, "Artifacts"): `hitch serve`
// calls it with its reaper's tick, so expired bytes do not stay until the
// process ends. It returns how many it removed; a failed delete of bytes is
// returned after the rest are removed.
func (s *Store) DropExpiredArtifacts(ctx context.Context, b agent.ArtifactBytes) (int, error) {
	type ref struct{ task, id string }
	var gone []ref
	s.mu.Lock()
	now := s.now()
	for tid, tr := range s.tasks {
		for sk, r := range tr.keyed {
			if aid, ok := strings.CutPrefix(sk, "ART#"); ok && !live(r.ttl, now) {
				delete(tr.keyed, sk)
				gone = append(gone, ref{tid, aid})
			}
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, g := range gone {
		if err := b.Delete(ctx, g.task, g.id); err != nil {
			errs = append(errs, fmt.Errorf("memstore: delete the bytes of expired artifact %s of %s: %w", g.id, g.task, err))
		}
	}
	return len(gone), errors.Join(errs...)
}
