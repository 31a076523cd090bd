package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/a2a/a2atest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// hitchProcess is a `hitch serve` in a process of its own.
type hitchProcess struct {
	url  string
	logs string
	cmd  *exec.Cmd
	done chan struct{}
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (p *hitchProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// startProcess builds hitch (once per test) and runs `hitch serve` with
// the definitions of dir in a process of its own, until the test ends.
func startProcess(t *testing.T, bin, dir string, env []string, extra ...string) *hitchProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logs := filepath.Join(t.TempDir(), "serve.log")
	f, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--agents", dir}, extra...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
			return // killed
		default:
		}
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	p := &hitchProcess{url: "http://" + addr, logs: logs, cmd: cmd, done: done}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			return p
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logs)
			t.Fatalf("hitch serve exited at start:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("hitch serve did not start")
		}
	}
}

func buildHitch(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hitch")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hitch: %v\n%s", err, out)
	}
	return bin
}

const frontAgent = `apiVersion: tealagents/v1alpha1
kind: Agent
name: front
version: 0.1
description: Takes requests and hands them to the desk of another Hitch.
spec:
  agent:
    model: local
    max_iterations: 6
    tools:
      - agent: desk
        a2a: %s/a2a/desk
        headers: {Authorization: env:HITCH_REMOTE_TOKEN}
`

// Two `hitch serve` processes: front (on DynamoDB Local) calls the other's
// desk over A2A, desk calls its assistant, whose delete_file asks for an
// approval: the pause cascades three levels across the two processes.
// Approved at the top, in front: the file goes, and all three complete.
// Approved at the leaf, on the other system: its desk goes on there, and
// front's poll of the remote task notices and completes.
func TestRemoteAgentAcrossProcesses(t *testing.T) {
	bin := buildHitch(t)
	remoteDir := t.TempDir()
	for _, name := range []string{"assistant.yaml", "desk.yaml"} {
		def, err := os.ReadFile(filepath.Join("..", "..", "agents", name))
		if err != nil {
			t.Fatal(err)
		}
		def = []byte(strings.Replace(string(def), "model: us.anthropic.claude-sonnet-4-20250514-v1:0", "model: local", 1))
		if err := os.WriteFile(filepath.Join(remoteDir, name), def, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sandbox := filepath.Join(remoteDir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	remote := startProcess(t, bin, remoteDir, nil)
	frontDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(frontDir, "front.yaml"), []byte(fmt.Sprintf(frontAgent, remote.url)), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := ddblocal.Start(t)
	front := startProcess(t, bin, frontDir, []string{"HITCH_REMOTE_TOKEN=Bearer bob"},
		"--store", "dynamodb", "--dynamodb-endpoint", endpoint, "--table", "front-"+uuid.NewString(), "--create-table", "--a2a-poll", "100ms")

	deleteVia := func(file string) string {
		inner, _ := json.Marshal(map[string]string{"path": file})
		toAssistant, _ := json.Marshal(map[string]string{"message": "/call delete_file " + string(inner)})
		toDesk, _ := json.Marshal(map[string]string{"message": "/call assistant " + string(toAssistant)})
		body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call desk " + string(toDesk)}}})
		return string(body)
	}
	for _, f := range []string{"top.txt", "leaf.txt"} {
		if err := os.WriteFile(filepath.Join(sandbox, f), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(f string) bool {
		_, err := os.Stat(filepath.Join(sandbox, f))
		return os.IsNotExist(err)
	}
	waitFront := func(taskID, status string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, body := call(t, "GET", front.url+"/agents/front/tasks/"+taskID, "alice", "")
			v := decode(t, body)
			if v["status"] == status {
				return v
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(front.logs)
				t.Fatalf("front's task is %v, want %s: %s\n%s", v["status"], status, body, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Approved at the top.
	code, body := call(t, "POST", front.url+"/agents/front/invoke", "alice", deleteVia("top.txt"))
	paused := decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %s", code, body)
	}
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	if pc["agent"] != "assistant" || pc["name"] != "delete_file" || !strings.HasPrefix(pc["resume_url"].(string), remote.url+"/agents/assistant/tasks/") {
		t.Fatalf("front shows the leaf's call: %v", pc)
	}
	// The other system: desk waits on its assistant, both bob's.
	_, body = call(t, "GET", remote.url+"/agents/assistant/tasks/"+pc["task_id"].(string), "bob", "")
	leaf := decode(t, body)
	if leaf["status"] != "Paused" || leaf["parent_task_id"] == nil {
		t.Fatalf("the remote leaf: %s", body)
	}
	code, body = call(t, "POST", front.url+paused["resume_url"].(string), "alice", `{"action":"approve"}`)
	done := decode(t, body)
	if code != 200 || done["status"] != "Completed" {
		t.Fatalf("approve at the top: %d %s", code, body)
	}
	if !gone("top.txt") {
		t.Error("top.txt is still there")
	}
	_, body = call(t, "GET", remote.url+"/agents/desk/tasks/"+leaf["parent_task_id"].(string), "bob", "")
	if v := decode(t, body); v["status"] != "Completed" {
		t.Errorf("the remote desk after the approval at the top: %s", body)
	}
	_, body = call(t, "GET", remote.url+"/agents/assistant/tasks/"+pc["task_id"].(string), "bob", "")
	if v := decode(t, body); v["status"] != "Completed" {
		t.Errorf("the remote leaf after the approval at the top: %s", body)
	}

	// Approved at the leaf, on the other system.
	code, body = call(t, "POST", front.url+"/agents/front/invoke", "alice", deleteVia("leaf.txt"))
	paused = decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("front: %d %s", code, body)
	}
	pc = paused["pending_approvals"].([]any)[0].(map[string]any)
	code, body = call(t, "POST", pc["resume_url"].(string), "bob", `{"action":"approve"}`)
	if code != 200 || decode(t, body)["status"] != "Completed" {
		t.Fatalf("approve at the remote leaf: %d %s", code, body)
	}
	done = waitFront(paused["task_id"].(string), "Completed")
	if !gone("leaf.txt") {
		t.Error("leaf.txt is still there")
	}
	items, _ := json.Marshal(done["items"])
	if !strings.Contains(string(items), "delete_file") {
		t.Errorf("front's history lacks the remote's answer: %s", items)
	}
}

// The caller is killed (SIGKILL) after its message reached the remote
// agent and before it heard the answer. Restarted on its table, the poll
// its call was recorded with takes the dead leg over once its lease ends
// and sends the message again with its id: the remote answers the task
// the first one made (one request there, not two), the pause cascades,
// and an approval at the top runs the call once.
func TestRemoteAgentCallerKilled(t *testing.T) {
	bin := buildHitch(t)
	remoteDir := t.TempDir()
	def, err := os.ReadFile(filepath.Join("..", "..", "agents", "assistant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	def = []byte(strings.Replace(string(def), "model: us.anthropic.claude-sonnet-4-20250514-v1:0", "model: local", 1))
	if err := os.WriteFile(filepath.Join(remoteDir, "assistant.yaml"), def, 0o644); err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Join(remoteDir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	remote := startProcess(t, bin, remoteDir, nil)
	// The first message reaches the remote; its answer (the remote's whole
	// stream) is held until the caller is gone.
	held := make(chan struct{})
	relay := &a2atest.Relay{To: remote.url, Hold: func(ctx context.Context, n int) bool {
		if n > 1 {
			return true
		}
		close(held)
		<-ctx.Done()
		return false
	}}
	rs := httptest.NewServer(relay)
	t.Cleanup(rs.Close)

	// The README's example (make run-remote), pointed at the relay.
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "remote-agent", "front.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	front := strings.Replace(string(example), "http://${HITCH_A2A_ADDR:-127.0.0.1:8080}", rs.URL, 1)
	if front == string(example) {
		t.Fatal("the example does not name http://${HITCH_A2A_ADDR:-127.0.0.1:8080}")
	}
	frontDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(frontDir, "front.yaml"), []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := ddblocal.Start(t)
	args := []string{"--store", "dynamodb", "--dynamodb-endpoint", endpoint, "--table", "front-" + uuid.NewString(), "--create-table", "--a2a-poll", "100ms"}
	env := []string{"HITCH_REMOTE_TOKEN=Bearer bob"}
	first := startProcess(t, bin, frontDir, env, args...)

	inner, _ := json.Marshal(map[string]string{"path": "once.txt", "content": "x\n"})
	msg, _ := json.Marshal(map[string]string{"message": "/call append_file " + string(inner)})
	body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call assistant " + string(msg)}}})
	go func() {
		req, _ := http.NewRequest("POST", first.url+"/agents/front/invoke", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer alice")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the message never reached the remote agent")
	}
	first.kill()

	second := startProcess(t, bin, frontDir, env, args...)
	var taskID string
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b := call(t, "GET", second.url+"/agents/front/tasks", "alice", "")
		if tasks, _ := decode(t, b)["tasks"].([]any); len(tasks) == 1 {
			task := tasks[0].(map[string]any)
			taskID = task["task_id"].(string)
			if task["status"] == "Paused" {
				break
			}
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(second.logs)
			t.Fatalf("the caller was not taken over: %s\n%s", b, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := relay.Sent(); n != 2 {
		t.Errorf("SendMessage reached the remote %d times, want 2 (the first, and the takeover's with the same id)", n)
	}
	_, b := call(t, "GET", second.url+"/agents/front/tasks/"+taskID, "alice", "")
	paused := decode(t, b)
	pc := paused["pending_approvals"].([]any)[0].(map[string]any)
	_, b = call(t, "GET", remote.url+"/agents/assistant/tasks/"+pc["task_id"].(string), "bob", "")
	if reqs := decode(t, b)["requests"].([]any); len(reqs) != 1 {
		t.Errorf("the remote task holds %d requests, want 1: %s", len(reqs), b)
	}
	_, b = call(t, "GET", remote.url+"/agents/assistant/tasks", "bob", "")
	if tasks := decode(t, b)["tasks"].([]any); len(tasks) != 1 {
		t.Errorf("the remote has %d tasks of bob's, want 1: %s", len(tasks), b)
	}
	code, b := call(t, "POST", second.url+"/agents/front/tasks/"+taskID+"/requests/"+paused["requests"].([]any)[0].(map[string]any)["request_id"].(string)+"/resume", "alice", `{"action":"approve"}`)
	if code != 200 || decode(t, b)["status"] != "Completed" {
		t.Fatalf("approve at the top: %d %s", code, b)
	}
	got, _ := os.ReadFile(filepath.Join(sandbox, "once.txt"))
	if string(got) != "x\n" {
		t.Errorf("once.txt = %q: the call ran %d times", got, strings.Count(string(got), "x"))
	}
}
