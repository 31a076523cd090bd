package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/tools"
)

// artifactEnv is newEnv with the artifacts group on acc and bytes in memory.
func artifactEnv(tb testing.TB) *env {
	tb.Helper()
	e := newEnv(tb)
	e.api.Engine.Artifacts = memstore.NewBytes()
	ag, _ := e.api.Engine.Agents.Get("acc")
	for _, b := range tools.Artifacts() {
		ag.Tools = append(ag.Tools, agent.BoundTool{Tool: b.Tool, Policy: agent.ToolPolicy{Idempotent: b.Idempotent}})
	}
	return e
}

// saveTurn asks for save_artifact calls, then answers "done".
func (e *env) saveTurn(inputs ...string) {
	var uses []agent.Block
	for i, in := range inputs {
		uses = append(uses, agenttest.Use(fmt.Sprintf("c%d", i+1), "save_artifact", in))
	}
	e.model.Add(agenttest.CallTools(agent.StopToolUse, uses...), agenttest.Say("done"))
}

// toolResults are the texts of the tool results the model got last.
func (e *env) toolResults(tb testing.TB) []string {
	tb.Helper()
	msgs := e.model.Call(e.model.NCalls() - 1).Messages
	var out []string
	for _, b := range msgs[len(msgs)-1].Content {
		if b.Type != agent.BlockToolResult {
			continue
		}
		var s []string
		for _, c := range b.Content {
			if c.Type == agent.BlockJSON {
				s = append(s, string(c.JSON))
			} else {
				s = append(s, c.Text)
			}
		}
		out = append(out, string(b.Status)+": "+strings.Join(s, " | "))
	}
	return out
}

func TestArtifactSavedListedDownloaded(t *testing.T) {
	e := artifactEnv(t)
	e.saveTurn(`{"name":"report ü.md","content":"# Report\n<script>alert(1)</script>"}`)
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"report please"}]}`, "Accept", "text/event-stream")
	if r.status != 200 {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	evs, _ := readSSE(t, strings.NewReader(string(r.body)))
	var names []string
	var artEv map[string]any
	for _, ev := range evs {
		names = append(names, ev.name)
		if ev.name == "artifact" {
			artEv = ev.data
		}
	}
	want := []string{"request_started", "tool_call", "artifact", "tool_result", "answer", "request_complete"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	tid := evs[0].data["task_id"].(string)
	content := "# Report\n<script>alert(1)</script>"
	sum := sha256.Sum256([]byte(content))

	task := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)
	arts := task["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("artifacts = %v, want 1", arts)
	}
	a := arts[0].(map[string]any)
	id := a["artifact_id"].(string)
	if a["name"] != "report ü.md" || a["media_type"] != "text/markdown; charset=utf-8" || a["size"] != float64(len(content)) ||
		a["sha256"] != hex.EncodeToString(sum[:]) || a["tool_call_id"] != "c1" || a["url"] != "/agents/acc/tasks/"+tid+"/artifacts/"+id {
		t.Errorf("artifact = %v", a)
	}
	if diff := cmp.Diff(map[string]any{"artifact_id": id, "name": "report ü.md", "media_type": "text/markdown; charset=utf-8",
		"size": float64(len(content)), "tool_call_id": "c1"}, artEv); diff != "" {
		t.Errorf("artifact event (-want +got):\n%s", diff)
	}
	// The model learnt of it from the tool result.
	res := e.toolResults(t)
	if len(res) != 1 || !strings.Contains(res[0], id) || !strings.Contains(res[0], `"report ü.md"`) || !strings.HasPrefix(res[0], "success: Saved artifact") {
		t.Errorf("tool results = %q; want one naming the artifact", res)
	}

	dl := e.do(t, "GET", a["url"].(string), "alice", "")
	if dl.status != 200 || string(dl.body) != content {
		t.Fatalf("download = %d %q", dl.status, dl.body)
	}
	for k, v := range map[string]string{
		"Content-Type":            "text/markdown; charset=utf-8",
		"Content-Disposition":     `attachment; filename="report _.md"; filename*=UTF-8''report%20%C3%BC.md`,
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "sandbox",
		"Cache-Control":           "no-store",
		"Content-Length":          fmt.Sprint(len(content)),
	} {
		if got := dl.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if h := e.do(t, "HEAD", a["url"].(string), "alice", ""); h.status != 200 || len(h.body) != 0 {
		t.Errorf("HEAD = %d, %d bytes", h.status, len(h.body))
	}

	// The refusals, in the order of every read.
	other := e.invoke(t, "alice", `{"items":[{"content":"hi"}]}`)["task_id"].(string)
	for _, tc := range []struct {
		path, user string
		status     int
		code       string
	}{
		{"/agents/acc/tasks/" + tid + "/artifacts/not-an-id", "alice", 400, "invalid_id"},
		{"/agents/acc/tasks/nope/artifacts/" + id, "alice", 400, "invalid_id"},
		{"/agents/acc/tasks/" + tid + "/artifacts/" + id + "?redirect=maybe", "alice", 400, "invalid_query"},
		{"/agents/nope/tasks/" + tid + "/artifacts/" + id, "alice", 404, "agent_not_found"},
		{"/agents/acc/tasks/" + agent.NewID() + "/artifacts/" + id, "alice", 404, "task_not_found"},
		{"/agents/other/tasks/" + tid + "/artifacts/" + id, "alice", 404, "task_not_found"},
		{"/agents/acc/tasks/" + tid + "/artifacts/" + id, "mallory", 401, "not_owner"},
		{"/agents/acc/tasks/" + tid + "/artifacts/" + agent.NewID(), "alice", 404, "artifact_not_found"},
		// Another task of the same owner does not reach it either.
		{"/agents/acc/tasks/" + other + "/artifacts/" + id, "alice", 404, "artifact_not_found"},
		{"/agents/acc/tasks/" + tid + "/artifacts/" + id, "mallory", 401, "not_owner"},
	} {
		got := e.do(t, "GET", tc.path, tc.user, "")
		if got.status != tc.status || got.code() != tc.code {
			t.Errorf("GET %s as %s = %d %s, want %d %s", tc.path, tc.user, got.status, got.code(), tc.status, tc.code)
		}
	}
	if got := e.do(t, "POST", a["url"].(string), "alice", ""); got.status != 405 {
		t.Errorf("POST on the artifact = %d, want 405", got.status)
	}

	// Deleting the task deletes the bytes.
	if got := e.do(t, "DELETE", "/agents/acc/tasks/"+tid, "alice", ""); got.status != 204 {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}
	if _, err := e.api.Engine.Artifacts.Open(context.Background(), tid, id); err == nil {
		t.Error("the bytes outlived their task's delete")
	}
}

// Every refusal of save_artifact is an error result naming what is wrong,
// and keeps nothing.
func TestSaveArtifactRefusals(t *testing.T) {
	defer func(n int64) { agent.MaxArtifactBytes = n }(agent.MaxArtifactBytes)
	agent.MaxArtifactBytes = 16
	long := strings.Repeat("é", 256)
	e := artifactEnv(t)
	e.saveTurn(
		`{"name":"../etc/passwd","content":"x"}`,
		`{"name":"a\\b.txt","content":"x"}`,
		`{"name":"bell\u0007.txt","content":"x"}`,
		`{"name":"a\u202eexe.txt","content":"x"}`,
		`{"name":"zero\u200bwidth.txt","content":"x"}`,
		`{"name":"`+long+`","content":"x"}`,
		`{"name":"","content":"x"}`,
		`{"name":"big.txt","content":"12345678901234567"}`,
		`{"name":"both.txt","content":"x","from_path":"a.txt"}`,
		`{"name":"neither.txt"}`,
		`{"name":"from.txt","from_path":"a.txt"}`,
		`{"name":"x.bin","content":"x","media_type":"not a type"}`,
		`{"name":"ok.txt","content":"1234567890123456"}`,
	)
	tid := e.send(t, "alice", `{"items":[{"content":"go"}]}`)
	res := e.toolResults(t)
	wants := []string{
		`contains '/'`,
		`contains '\\'`,
		`control character U+0007`,
		`format character U+202E`,
		`format character U+200B`,
		`invalid input`,
		`invalid input`,
		`at most 16 bytes`,
		`give content or from_path, not both`,
		`give content (the artifact's text) or from_path`,
		`from_path needs the files tools`,
		`"not a type" is not a media type`,
		`success: Saved artifact "ok.txt"`,
	}
	if len(res) != len(wants) {
		t.Fatalf("results = %q", res)
	}
	for i, w := range wants {
		if !strings.Contains(res[i], w) {
			t.Errorf("result %d = %q, want it to contain %q", i+1, res[i], w)
		}
		if i < len(wants)-1 && !strings.HasPrefix(res[i], "error: ") {
			t.Errorf("result %d = %q, want an error", i+1, res[i])
		}
	}
	arts := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)["artifacts"].([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["name"] != "ok.txt" {
		t.Errorf("artifacts = %v, want only ok.txt", arts)
	}
}

// A task holds at most MaxArtifacts: the call past it gets an error
// result, in the same turn and in a later one.
func TestArtifactsPerTask(t *testing.T) {
	defer func(n int) { agent.MaxArtifacts = n }(agent.MaxArtifacts)
	agent.MaxArtifacts = 3
	e := artifactEnv(t)
	e.saveTurn(`{"name":"1.txt","content":"1"}`, `{"name":"2.txt","content":"2"}`)
	tid := e.send(t, "alice", `{"items":[{"content":"go"}]}`)
	e.saveTurn(`{"name":"3.txt","content":"3"}`, `{"name":"4.txt","content":"4"}`)
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+tid+`","items":[{"content":"more"}]}`)
	if r.status != 200 {
		t.Fatalf("follow-on: %d %s", r.status, r.body)
	}
	res := e.toolResults(t)
	ok, refused := 0, 0
	for _, s := range res {
		switch {
		case strings.HasPrefix(s, "success: Saved artifact"):
			ok++
		case strings.Contains(s, "already holds 3 artifacts"):
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Errorf("results = %q; want one saved, one refused", res)
	}
	if n := len(e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)["artifacts"].([]any)); n != 3 {
		t.Errorf("%d artifacts, want 3", n)
	}
}

// fakePresigner stands in for S3's presigning (internal/s3artifacts tests
// the real one against gofakes3).
type fakePresigner struct{}

func (fakePresigner) Presign(_ context.Context, a *agent.Artifact, disposition string, ttl time.Duration) (string, error) {
	return "https://bucket.example/" + a.TaskID + "/" + a.ID + "?ttl=" + ttl.String(), nil
}

var _ httpapi.Presigner = fakePresigner{}

func TestArtifactPresigned(t *testing.T) {
	e := artifactEnv(t)
	e.api.Presigner = fakePresigner{}
	e.saveTurn(`{"name":"chart.csv","content":"a,b"}`)
	tid := e.send(t, "alice", `{"items":[{"content":"go"}]}`)
	a := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)["artifacts"].([]any)[0].(map[string]any)
	url := a["url"].(string)
	want := "https://bucket.example/" + tid + "/" + a["artifact_id"].(string) + "?ttl=5m0s"
	got := noFollow(t, e, url, "alice")
	if got.status != 303 || got.header.Get("Location") != want {
		t.Errorf("GET = %d Location %q, want 303 %q", got.status, got.header.Get("Location"), want)
	}
	j := e.do(t, "GET", url+"?redirect=false", "alice", "")
	if j.status != 200 || j.json(t)["url"] != want {
		t.Fatalf("redirect=false = %d %s", j.status, j.body)
	}
	exp, err := time.Parse(time.RFC3339, j.json(t)["expires_at"].(string))
	if err != nil || exp.Before(time.Now().Add(4*time.Minute)) || exp.After(time.Now().Add(6*time.Minute)) {
		t.Errorf("expires_at = %v, %v; want in 5 minutes", exp, err)
	}
	if got := noFollow(t, e, url, "mallory"); got.status != 401 {
		t.Errorf("another user: %d, want 401", got.status)
	}
}

// noFollow GETs path without following a redirect.
func noFollow(tb testing.TB, e *env, path, user string) reply {
	tb.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+user)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// send invokes acc with the turns already scripted; it returns the task id.
func (e *env) send(tb testing.TB, user, body string) string {
	tb.Helper()
	r := e.do(tb, "POST", "/agents/acc/invoke", user, body)
	if r.status != 200 {
		tb.Fatalf("invoke: %d %s", r.status, r.body)
	}
	return r.json(tb)["task_id"].(string)
}

// read_artifact reads a text artifact of the task in a later turn and a
// later request; binary, unknown and malformed ids are error results.
func TestReadArtifact(t *testing.T) {
	e := artifactEnv(t)
	e.saveTurn(`{"name":"notes.md","content":"remember the milk"}`, `{"name":"pic.png","content":"PNG","media_type":"image/png"}`)
	tid := e.send(t, "alice", `{"items":[{"content":"save"}]}`)
	arts := e.do(t, "GET", "/agents/acc/tasks/"+tid, "alice", "").json(t)["artifacts"].([]any)
	ids := map[string]string{}
	for _, a := range arts {
		a := a.(map[string]any)
		ids[a["name"].(string)] = a["artifact_id"].(string)
	}
	e.model.Add(agenttest.CallTools(agent.StopToolUse,
		agenttest.Use("r1", "read_artifact", `{"artifact_id":"`+ids["notes.md"]+`"}`),
		agenttest.Use("r2", "read_artifact", `{"artifact_id":"`+ids["pic.png"]+`"}`),
		agenttest.Use("r3", "read_artifact", `{"artifact_id":"`+agent.NewID()+`"}`),
		agenttest.Use("r4", "read_artifact", `{"artifact_id":"../x"}`),
	), agenttest.Say("ok"))
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"task_id":"`+tid+`","items":[{"content":"read"}]}`)
	if r.status != 200 {
		t.Fatalf("follow-on: %d %s", r.status, r.body)
	}
	res := e.toolResults(t)
	want := []string{"success: remember the milk", `error: the artifact "pic.png" is image/png, not text`, "error: this task has no artifact", `error: "../x" is not an artifact id`}
	if len(res) != len(want) {
		t.Fatalf("results = %q", res)
	}
	for i, w := range want {
		if !strings.HasPrefix(res[i], w) {
			t.Errorf("result %d = %q, want %q…", i+1, res[i], w)
		}
	}
}

// An edit hides the artifacts of the requests it supersedes, as it hides
// their items; include_superseded shows them, marked.
func TestEditHidesArtifacts(t *testing.T) {
	e := artifactEnv(t)
	e.saveTurn(`{"name":"first.md","content":"v1"}`)
	r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"draft"}]}`)
	res := r.json(t)
	tid, rid := res["task_id"].(string), res["request_id"].(string)
	e.saveTurn(`{"name":"second.md","content":"v2"}`)
	r = e.do(t, "POST", "/agents/acc/tasks/"+tid+"/requests/"+rid+"/edit", "alice", `{"items":[{"content":"draft again"}]}`)
	if r.status != 200 {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	edit := r.json(t)["request_id"].(string)
	names := func(q string) []string {
		var out []string
		for _, a := range e.do(t, "GET", "/agents/acc/tasks/"+tid+q, "alice", "").json(t)["artifacts"].([]any) {
			a := a.(map[string]any)
			out = append(out, fmt.Sprint(a["name"], " ", a["superseded_by"]))
		}
		return out
	}
	if diff := cmp.Diff([]string{"second.md <nil>"}, names("")); diff != "" {
		t.Errorf("artifacts after the edit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first.md " + edit, "second.md <nil>"}, names("?include_superseded=true")); diff != "" {
		t.Errorf("artifacts with include_superseded (-want +got):\n%s", diff)
	}
}

// An artifact downloads under its name in every client (RFC 6266): an
// ASCII filename="…" for those that read only it (curl -OJ), then
// filename*=UTF-8”… for the rest.
func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"report.md", `attachment; filename="report.md"; filename*=UTF-8''report.md`},
		{"report ü.md", `attachment; filename="report _.md"; filename*=UTF-8''report%20%C3%BC.md`},
		{`a"b\c.txt`, `attachment; filename="a_b_c.txt"; filename*=UTF-8''a%22b%5Cc.txt`},
		{"50%.csv", `attachment; filename="50_.csv"; filename*=UTF-8''50%25.csv`},
		{"图表.png", `attachment; filename="__.png"; filename*=UTF-8''%E5%9B%BE%E8%A1%A8.png`},
		{"tab\there;x.txt", `attachment; filename="tab_here;x.txt"; filename*=UTF-8''tab%09here%3Bx.txt`},
	} {
		if got := httpapi.ContentDisposition(tc.name); got != tc.want {
			t.Errorf("ContentDisposition(%q)\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
