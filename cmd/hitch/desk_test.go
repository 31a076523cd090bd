package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// The README's orchestration walk-through (docs/architecture.md) against `hitch
// serve` as `make run` starts it: desk delegates to assistant, whose pause
// pauses desk; an approval at the leaf completes the leaf at once and desk
// through the in-process dispatcher; in another task, an approval at desk
// completes both in one answer.
func testDeskWalkThrough(t *testing.T, base, sandbox string) {
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	deleteCall := func(file string) string {
		inner, _ := json.Marshal(map[string]string{"path": file})
		msg, _ := json.Marshal(map[string]string{"message": "/call delete_file " + string(inner)})
		body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call assistant " + string(msg)}}})
		return string(body)
	}
	for _, f := range []string{"a.log", "b.log"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// At the leaf.
	code, body := call(t, "POST", base+"/agents/desk/invoke", "alice", deleteCall("a.log"))
	paused := decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("desk: %d %s", code, body)
	}
	p := paused["pending_approvals"].([]any)[0].(map[string]any)
	if p["agent"] != "assistant" || p["name"] != "delete_file" {
		t.Fatalf("desk's pending call: %v", p)
	}
	code, body = call(t, "POST", base+p["resume_url"].(string), "alice", `{"action":"approve"}`)
	if code != 200 || decode(t, body)["status"] != "Completed" {
		t.Fatalf("approve at the leaf: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body = call(t, "GET", base+"/agents/desk/tasks/"+paused["task_id"].(string), "alice", "")
		if decode(t, body)["status"] == "Completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("desk was not continued: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "a.log")); !os.IsNotExist(err) {
		t.Errorf("a.log is still there: %v", err)
	}

	// At the root.
	code, body = call(t, "POST", base+"/agents/desk/invoke", "alice", deleteCall("b.log"))
	paused = decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("desk: %d %s", code, body)
	}
	code, body = call(t, "POST", base+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	done := decode(t, body)
	if code != 200 || done["status"] != "Completed" || done["request_id"] != paused["request_id"] {
		t.Fatalf("approve at desk: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(sandbox, "b.log")); !os.IsNotExist(err) {
		t.Errorf("b.log is still there: %v", err)
	}
}

func TestServeDesk(t *testing.T) {
	base, sandbox, _ := startServe(t)
	testDeskWalkThrough(t, base, sandbox)
}

func TestServeDeskDynamoDB(t *testing.T) {
	endpoint := ddblocal.Start(t)
	base, sandbox, _ := startServe(t, "--store", "dynamodb", "--dynamodb-endpoint", endpoint, "--table", "desk-"+uuid.NewString(), "--create-table")
	testDeskWalkThrough(t, base, sandbox)
}
