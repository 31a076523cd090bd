// Package artifactdir keeps artifacts' bytes in a local directory, the
// default of `hitch serve` (--artifacts DIR): DIR/<task id>/<artifact id>,
// never a name the agent chose, so no artifact can reach outside its task's
// folder. A Put writes a temporary file beside its target and renames it
// once the body is whole: a reader never sees half an artifact, and a body
// that fails (past the size limit) leaves nothing.
package artifactdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Dir is an agent.ArtifactBytes in a directory.
type Dir struct {
	root string
}

var _ agent.ArtifactBytes = (*Dir)(nil)

// New returns the byte store in root, creating it.
func New(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("artifactdir.New(%q): %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("artifactdir.New(%q): %w", root, err)
	}
	return &Dir{root: abs}, nil
}

// Root is the directory.
func (d *Dir) Root() string { return d.root }

// path is the file of an artifact; both ids must be UUIDs, so neither can
// name another directory.
func (d *Dir) path(taskID, artifactID string) (string, error) {
	if _, err := agent.ParseID("task_id", taskID); err != nil {
		return "", fmt.Errorf("task id %q: %w", taskID, err)
	}
	if artifactID != "" {
		if _, err := agent.ParseID("artifact_id", artifactID); err != nil {
			return "", fmt.Errorf("artifact id %q: %w", artifactID, err)
		}
	}
	return filepath.Join(d.root, taskID, artifactID), nil
}

// Put implements agent.ArtifactBytes.
func (d *Dir) Put(ctx context.Context, taskID, artifactID string, body io.Reader) (err error) {
	defer wrap(&err, "Put", taskID, artifactID)
	p, err := d.path(taskID, artifactID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, body}); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Open implements agent.ArtifactBytes.
func (d *Dir) Open(ctx context.Context, taskID, artifactID string) (_ io.ReadCloser, err error) {
	defer wrap(&err, "Open", taskID, artifactID)
	p, err := d.path(taskID, artifactID)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, agent.ErrNotFound
	}
	return f, err
}

// Delete implements agent.ArtifactBytes.
func (d *Dir) Delete(ctx context.Context, taskID, artifactID string) (err error) {
	defer wrap(&err, "Delete", taskID, artifactID)
	p, err := d.path(taskID, artifactID)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The task's folder goes with its last artifact (fails while others stay).
	_ = os.Remove(filepath.Dir(p))
	return nil
}

// DeleteTask implements agent.ArtifactBytes.
func (d *Dir) DeleteTask(ctx context.Context, taskID string) (err error) {
	defer wrap(&err, "DeleteTask", taskID, "")
	p, err := d.path(taskID, "")
	if err != nil {
		return err
	}
	return os.RemoveAll(p)
}

func wrap(err *error, op, taskID, artifactID string) {
	if *err != nil {
		*err = fmt.Errorf("artifactdir.%s(%s, %s): %w", op, taskID, artifactID, *err)
	}
}
