package a2a_test

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
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

// frontArtifacts reads front's task's artifacts by name, each with its
// bytes from front's download route.
func frontArtifacts(t *testing.T, p *pair, taskID string) map[string]string {
	t.Helper()
	code, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+taskID, "alice", "")
	if code != 200 {
		t.Fatalf("GET front's task: %d %v", code, v)
	}
	out := map[string]string{}
	arts, _ := v["artifacts"].([]any)
	for _, a := range arts {
		m := a.(map[string]any)
		req, _ := http.NewRequest("GET", p.url+m["url"].(string), nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out[m["name"].(string)] = m["media_type"].(string) + " " + string(b)
	}
	return out
}

// A remote Hitch agent's artifacts are copied into the caller's task when
// its call ends: the small one from its raw bytes, the large one fetched
// from the remote's download route with the entry's headers; the call's
// result names them.
func TestRemoteAgentArtifactsCopied(t *testing.T) { onBothStores(t, testRemoteAgentArtifactsCopied) }

func testRemoteAgentArtifactsCopied(t *testing.T) {
	p := startPairOpts(t, pairOpts{def: artifactYAML, dispatch: true})
	big := strings.Repeat("0123456789abcdef", 5000) // 80,000 bytes: a URL, not raw
	line := "/call save_artifact {\"name\": \"small.txt\", \"content\": \"hello\"}\n/call save_artifact {\"name\": \"big.csv\", \"content\": \"" + big + "\"}"
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling(line))
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("front: %d %v", code, out)
	}
	if o := out["output"].(string); !strings.Contains(o, `Saved artifact \"small.txt\"`) && !strings.Contains(o, `Saved artifact "small.txt"`) {
		t.Errorf("the call's result does not name the copied artifact: %q", o)
	}
	got := frontArtifacts(t, p, out["task_id"].(string))
	if len(got) != 2 || got["small.txt"] != "text/plain; charset=utf-8 hello" || got["big.csv"] != "text/csv; charset=utf-8 "+big {
		short := map[string]int{}
		for k, v := range got {
			short[k] = len(v)
		}
		t.Errorf("front's artifacts (name → length of type and bytes) %v, want small.txt and big.csv copied", short)
	}
}

// fileVendor is another vendor's agent whose answer carries artifacts: a
// data part, raw bytes, a file URL on its own origin and one on another.
type fileVendor struct{ base *string }

func (v fileVendor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		raw := a2a.NewRawPart([]byte("\x89PNG fake"))
		raw.Filename, raw.MediaType = "chart.png", "image/png"
		own := a2a.NewFileURLPart(a2a.URL(*v.base+"/files/report.csv"), "text/csv")
		own.Filename = "report.csv"
		other := a2a.NewFileURLPart("http://127.0.0.1:1/elsewhere.csv", "text/csv")
		other.Filename = "elsewhere.csv"
		data := &a2a.Artifact{ID: "stats", Name: "stats", Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"rows": 3})}}
		for _, ev := range []a2a.Event{
			a2a.NewArtifactEvent(ec, a2a.NewTextPart("here are the files")),
			&a2a.TaskArtifactUpdateEvent{TaskID: ec.TaskID, ContextID: ec.ContextID, Artifact: data, LastChunk: true},
			a2a.NewArtifactEvent(ec, raw),
			a2a.NewArtifactEvent(ec, own),
			a2a.NewArtifactEvent(ec, other),
		} {
			if !yield(ev, nil) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (fileVendor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Another vendor's artifacts: its data part is kept as JSON, its raw bytes
// and its file on its own origin (fetched with the entry's headers) are
// copied; a file on another origin is not fetched, and the result says so.
func TestRemoteVendorArtifacts(t *testing.T) {
	var base string
	var auth atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/files/report.csv", func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, "a,b\n1,2\n")
	})
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(fileVendor{base: &base})))
	vendor := httptest.NewServer(mux)
	t.Cleanup(vendor.Close)
	base = vendor.URL
	p := startPairOpts(t, pairOpts{def: agentYAML, dispatch: true, via: func(string) string { return vendor.URL + "/vendor" }})
	code, out := httpCall(t, "POST", p.url+"/agents/front/invoke", "alice", callBilling("files please"))
	if code != 200 || out["status"] != "Completed" {
		t.Fatalf("front: %d %v", code, out)
	}
	if o := out["output"].(string); !strings.Contains(o, "here are the files") {
		t.Errorf("front's output %q: want the answer", o)
	}
	_, v := httpCall(t, "GET", p.url+"/agents/front/tasks/"+out["task_id"].(string), "alice", "")
	if b, _ := json.Marshal(v["items"]); !strings.Contains(string(b), `artifact \"elsewhere.csv\" was not copied`) || !strings.Contains(string(b), "not on the agent's origin") {
		t.Errorf("the call's result has no note that elsewhere.csv was not fetched: %s", b)
	}
	got := frontArtifacts(t, p, out["task_id"].(string))
	want := map[string]string{"stats": `application/json {"rows":3}`, "chart.png": "image/png \x89PNG fake", "report.csv": "text/csv a,b\n1,2\n"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("artifact %s = %q, want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("front's artifacts %v, want exactly %v", got, want)
	}
	if a, _ := auth.Load().(string); a != "Bearer bob" {
		t.Errorf("report.csv was fetched with Authorization %q, want the entry's header", a)
	}
}
