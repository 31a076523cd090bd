package artifactdir_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/artifactdir"
	"github.com/hitch-agents/hitch/internal/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunBytes(t, func(tb testing.TB) agent.ArtifactBytes {
		d, err := artifactdir.New(tb.TempDir())
		if err != nil {
			tb.Fatal(err)
		}
		return d
	})
}

// Ids that are not UUIDs never become paths.
func TestRefusesPaths(t *testing.T) {
	root := t.TempDir()
	d, err := artifactdir.New(filepath.Join(root, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	task := agent.NewID()
	for _, bad := range []struct{ task, id string }{
		{task, "../../escape"}, {"..", agent.NewID()}, {task, "report.md"}, {"../" + task, agent.NewID()},
	} {
		if err := d.Put(context.Background(), bad.task, bad.id, strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q, %q): no error", bad.task, bad.id)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("the parent directory holds %d entries, want only artifacts/", len(entries))
	}
	// A failed body leaves no temporary file.
	if err := d.Put(context.Background(), task, agent.NewID(), iotest{}); err == nil {
		t.Fatal("a failing body: no error")
	}
	left, _ := os.ReadDir(filepath.Join(root, "artifacts", task))
	if len(left) != 0 {
		t.Errorf("after a failed Put the task's folder holds %d files, want 0", len(left))
	}
}

type iotest struct{}

func (iotest) Read([]byte) (int, error) { return 0, os.ErrClosed }
