package a2a_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// artifactYAML is the assistant with the artifacts group.
const artifactYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: assistant
version: 0.1
description: Makes reports.
spec:
  agent:
    model: local
    max_iterations: 10
    tools:
      - builtin: artifacts
`

// Each artifact of a request is an A2A artifact of its task, beside the
// answer's "output": raw bytes under 64 KiB, else a file part with the
// download URL (which answers the bytes to the owner's token); in
// SendMessage's answer, GetTask, ListTasks with includeArtifacts, and as an
// artifact update in the stream.
func TestArtifacts(t *testing.T) {
	s := startStackYAML(t, artifactYAML, true)
	c := s.client(t, "alice")
	big := strings.Repeat("0123456789abcdef", 5000) // 80,000 bytes
	msg := "/call save_artifact {\"name\": \"small.txt\", \"content\": \"hello\"}\n/call save_artifact {\"name\": \"big.csv\", \"content\": \"" + big + "\"}"
	task := send(t, c, text(msg))
	check := func(where string, arts []*a2a.Artifact) {
		t.Helper()
		byName := map[string]*a2a.Artifact{}
		for _, a := range arts {
			byName[a.Name] = a
		}
		if len(arts) != 3 || byName["output"] == nil || byName["small.txt"] == nil || byName["big.csv"] == nil {
			t.Fatalf("%s: artifacts %v, want output, small.txt, big.csv", where, arts)
		}
		small := byName["small.txt"].Parts[0]
		if raw, ok := small.Content.(a2a.Raw); !ok || string(raw) != "hello" || small.MediaType != "text/plain; charset=utf-8" || small.Filename != "small.txt" {
			t.Errorf("%s: small.txt's part = %#v, want raw hello", where, small)
		}
		bigPart := byName["big.csv"].Parts[0]
		u, ok := bigPart.Content.(a2a.URL)
		if !ok || !strings.HasPrefix(string(u), s.url+"/agents/assistant/tasks/"+task.ContextID+"/artifacts/") || bigPart.Filename != "big.csv" {
			t.Fatalf("%s: big.csv's part = %#v, want the download URL", where, bigPart)
		}
		for user, want := range map[string]int{"alice": 200, "bob": 401} {
			req, _ := http.NewRequest("GET", string(u), nil)
			req.Header.Set("Authorization", "Bearer "+user)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || (want == 200 && string(b) != big) {
				t.Errorf("%s: GET big.csv as %s = %d (%d bytes), want %d", where, user, resp.StatusCode, len(b), want)
			}
		}
	}
	check("SendMessage", task.Artifacts)
	got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	check("GetTask", got.Artifacts)
	list, err := c.ListTasks(context.Background(), &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("ListTasks: %v, %v", list, err)
	}
	check("ListTasks", list.Tasks[0].Artifacts)
	if list, err = c.ListTasks(context.Background(), &a2a.ListTasksRequest{}); err != nil || len(list.Tasks[0].Artifacts) != 0 {
		t.Errorf("ListTasks without includeArtifacts: %v, %v", list, err)
	}

	// The stream: an artifact update per artifact, before the answer's.
	var updates []string
	for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: text("/call save_artifact {\"name\": \"s.md\", \"content\": \"# s\"}")}) {
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			updates = append(updates, u.Artifact.Name)
			if u.Artifact.Name == "s.md" {
				p := u.Artifact.Parts[0]
				if _, ok := p.Content.(a2a.URL); !ok || p.MediaType != "text/markdown; charset=utf-8" || string(u.Artifact.ID) == "" {
					t.Errorf("the stream's artifact update: %#v", p)
				}
			}
		}
	}
	if len(updates) < 2 || updates[0] != "s.md" || updates[len(updates)-1] != "output" {
		t.Errorf("artifact updates = %v, want s.md, then output", updates)
	}
}

// The official A2A JavaScript SDK's client reads the artifacts the same way
// (tools/a2a-js/artifacts.mjs): raw, URL, GetTask, ListTasks
// includeArtifacts, artifactUpdate in a stream. HITCH_A2A_JS overrides
// where the SDK is installed (a directory holding node_modules).
func TestJSClientArtifacts(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "tools", "a2a-js", "artifacts.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("HITCH_A2A_JS"); dir != "" {
		// The script beside that node_modules (ES modules resolve from
		// the script's directory).
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		script = filepath.Join(dir, "artifacts-test.mjs")
		if err := os.WriteFile(script, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(script) })
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@a2a-js", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the A2A JS client is not installed (make tools): %v", err)
		}
		t.Skipf("the A2A JS client is not installed (make tools): %v", err)
	}
	s := startStackYAML(t, artifactYAML, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, s.url, "assistant", "alice").CombinedOutput()
	t.Logf("node artifacts.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "ALL OK artifacts") {
		t.Fatalf("the JS client's artifacts failed: %v", err)
	}
}
