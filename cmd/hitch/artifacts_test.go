package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// serveIn runs `hitch serve` on the agents of dir until the returned stop.
func serveIn(t *testing.T, dir string, extra ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	args := append([]string{"--addr", "127.0.0.1:0", "--agents", dir}, extra...)
	go func() { done <- serve(ctx, args, io.Discard, logs, ready) }()
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	t.Cleanup(stop)
	return base, stop
}

// The artifacts guide's walk-through (docs/guide/artifacts.md): the assistant saves a report (text)
// and a file of its sandbox; both download with their safety headers, keep
// their bytes in ./artifacts beside the agents' folder, survive a restart
// (DynamoDB store) and go with their task.
func TestServeArtifacts(t *testing.T) {
	endpoint := ddblocal.Start(t)
	root := t.TempDir()
	dir := filepath.Join(root, "agents")
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	def, err := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "assistant.yaml"), def, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sandbox", "data.csv"), []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--store", "dynamodb", "--dynamodb-endpoint", endpoint, "--table", "art-" + uuid.NewString(), "--create-table"}
	base, stop := serveIn(t, dir, flags...)

	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice",
		`{"items":[{"content":"/call save_artifact {\"name\": \"report.md\", \"content\": \"# Q3\\nAll good.\"}\n/call save_artifact {\"name\": \"data.csv\", \"from_path\": \"data.csv\"}"}]}`)
	res := decode(t, body)
	if code != 200 || !strings.Contains(res["output"].(string), `save_artifact success: Saved artifact "report.md"`) ||
		!strings.Contains(res["output"].(string), `Saved artifact "data.csv"`) {
		t.Fatalf("invoke: %d %s", code, body)
	}
	tid := res["task_id"].(string)
	code, body = call(t, "GET", base+"/agents/assistant/tasks/"+tid, "alice", "")
	arts := decode(t, body)["artifacts"].([]any)
	if code != 200 || len(arts) != 2 {
		t.Fatalf("GET task: %d %s", code, body)
	}
	want := map[string]string{"report.md": "# Q3\nAll good.", "data.csv": "a,b\n1,2\n"}
	types := map[string]string{"report.md": "text/markdown; charset=utf-8", "data.csv": "text/csv; charset=utf-8"}
	check := func(base string) {
		t.Helper()
		for _, a := range arts {
			a := a.(map[string]any)
			name := a["name"].(string)
			code, got := call(t, "GET", base+a["url"].(string), "alice", "")
			if code != 200 || string(got) != want[name] {
				t.Errorf("download %s: %d %q, want %q", name, code, got, want[name])
			}
			if a["media_type"] != types[name] {
				t.Errorf("%s: media type %v, want %s", name, a["media_type"], types[name])
			}
			if code, _ := call(t, "GET", base+a["url"].(string), "bob", ""); code != 401 {
				t.Errorf("bob downloads alice's %s: %d, want 401", name, code)
			}
		}
	}
	check(base)
	files, _ := filepath.Glob(filepath.Join(root, "artifacts", tid, "*"))
	if len(files) != 2 {
		t.Errorf("the artifacts folder beside the agents' holds %v, want 2 files", files)
	}

	stop()
	base, _ = serveIn(t, dir, flags...)
	check(base) // survives a restart

	if code, body := call(t, "DELETE", base+"/agents/assistant/tasks/"+tid, "alice", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(root, "artifacts", tid)); !os.IsNotExist(err) {
		t.Errorf("the task's artifacts folder outlived its delete: %v", err)
	}
}
