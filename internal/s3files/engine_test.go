package s3files_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/localmodel"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/s3files"
	"github.com/hitch-agents/hitch/internal/tools"
)

// countingStore counts the deletes that reach S3.
type countingStore struct {
	tools.FileStore
	deletes atomic.Int64
}

func (c *countingStore) Delete(ctx context.Context, name string) error {
	c.deletes.Add(1)
	return c.FileStore.Delete(ctx, name)
}

// The example agent's flow on S3, as on Lambda: a deletion pauses for
// approval, deletes nothing before it, and deletes the object once after it,
// however often the approval is sent.
func TestApprovedDeleteOnS3(t *testing.T) {
	c := newS3(t)
	put(t, c, "agents/assistant/old.log", "old")
	put(t, c, "agents/keep.log", "outside the prefix")
	t.Setenv("HITCH_FILES_S3", "s3://"+bucket+"/agents/assistant")
	var store *countingStore
	fsys := fstest.MapFS{"assistant.yaml": {Data: []byte(`apiVersion: tealagents/v1alpha1
kind: Agent
name: assistant
version: 0.1
description: Files on S3
spec:
  agent:
    model: local
    tools:
      - builtin: files
        config: {root: ./sandbox, s3: env:HITCH_FILES_S3}
        requires_approval: [write_file, append_file, delete_file]
`)}}
	cat, err := catalog.Load(fsys, ".", catalog.Env{Files: false, S3Files: func(b, p string) tools.FileStore {
		store = &countingStore{FileStore: s3files.New(c, b, p)}
		return store
	}})
	if err != nil {
		t.Fatal(err)
	}
	model, stop, err := localmodel.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	e := &agent.Engine{Store: memstore.New(), Model: model, Agents: cat, Log: slog.New(slog.DiscardHandler), LegTimeout: time.Minute}
	ctx := context.Background()
	run, err := e.StartInvoke(ctx, agent.InvokeInput{Agent: "assistant", UserID: "alice",
		Items: []agent.InputItem{{ContentType: "text", Content: `/call delete_file {"path": "old.log"}`}}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Execute(ctx, nil)
	if res.Status != agent.StatusPaused {
		t.Fatalf("the deletion: %+v", res)
	}
	if _, ok := get(t, c, "agents/assistant/old.log"); !ok {
		t.Fatal("the object is gone before the approval")
	}
	for i := range 3 {
		run, err := e.StartResume(ctx, agent.ResumeInput{Agent: "assistant", UserID: "alice", TaskID: res.TaskID, RequestID: res.RequestID,
			Body: agent.ResumeRequest{Action: agent.ActionApprove}})
		if err != nil {
			t.Fatalf("approval %d: %v", i+1, err)
		}
		out := run.Execute(ctx, nil)
		if out.Status != agent.StatusCompleted || out.Output != "results: delete_file success: deleted old.log" {
			t.Fatalf("approval %d: %+v", i+1, out)
		}
	}
	if _, ok := get(t, c, "agents/assistant/old.log"); ok {
		t.Error("the object is still there after the approval")
	}
	if n := store.deletes.Load(); n != 1 {
		t.Errorf("%d deletes reached S3, want 1", n)
	}
	if _, ok := get(t, c, "agents/keep.log"); !ok {
		t.Error("an object outside the prefix was touched")
	}
}
