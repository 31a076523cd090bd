package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
)

// TestQuestionSchemaFromOutside: a model's ask_user whose schema refers to
// a file (one holding a secret, or a FIFO that blocks whoever opens it) is
// the call's error result: nothing pauses, nothing is read, the request
// ends, and the secret is in no answer — the stream, GET task, or an
// answer's 400 (docs/api.md, "Pauses for input").
func TestQuestionSchemaFromOutside(t *testing.T) {
	const secret = "TOPSECRET-VALUE-42"
	dir := t.TempDir()
	file := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(file, []byte(`{"const":"`+secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{{"a file", file}, {"a FIFO", pipe}} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := hitlEnv(t)
			t.Cleanup(func() { // frees a reader the code before the fix left blocked, before the server closes
				if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					_, _ = f.Write([]byte(`{"const":"` + secret + `"}`))
					_ = f.Close()
				}
			})
			e.model.Add(agenttest.CallTools(agent.StopToolUse,
				agenttest.Use("q1", "ask_user", `{"question":"Code?","schema":{"$ref":"file://`+tc.path+`"}}`)))
			e.model.Add(agenttest.Say("no question then"))
			var seen strings.Builder
			status, body := e.doWithin(t, "POST", "/agents/acc/invoke", `{"items":[{"content":"go"}]}`, "Accept", "text/event-stream")
			seen.WriteString(body)
			evs, _ := readSSE(t, strings.NewReader(body))
			last := evs[len(evs)-1].data
			var result map[string]any
			for _, ev := range evs {
				if ev.name == "tool_result" {
					result = ev.data
				}
			}
			if last["status"] == "Paused" {
				// The code before the fix: the schema compiled from the file.
				r := e.do(t, "POST", last["resume_url"].(string), "alice", `{"decisions":[{"tool_call_id":"q1","action":"answer","result":"guess"}]}`)
				seen.Write(r.body)
			}
			task := e.do(t, "GET", "/agents/acc/tasks/"+last["task_id"].(string), "alice", "")
			seen.Write(task.body)
			if strings.Contains(seen.String(), secret) {
				t.Errorf("an answer shows what the file holds:\n%s", seen.String())
			}
			if status != 200 || last["status"] != "Completed" || result == nil || result["status"] != "error" ||
				!strings.Contains(result["output"].(string), "refers outside the schema") {
				t.Errorf("the request: %d %v; the call's result %v; want Completed with the call's error result", status, last, result)
			}
		})
	}
}

// doWithin is do with a deadline as a safety net: a request still open
// after a minute fails the test instead of hanging it (it takes
// milliseconds).
func (e *env) doWithin(tb testing.TB, method, path, body string, hdr ...string) (int, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s did not end: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s did not end: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}
