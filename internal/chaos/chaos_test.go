package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// batch is how many flows a round runs at once (one kill per round).
const batch = 10

const agentYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: chaos
version: 0.1
description: Appends lines to files, with approval.
spec:
  agent:
    model: local
    max_iterations: 4
    tools:
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [append_file]
`

type harness struct {
	t       *testing.T
	bin     string
	dir     string
	relay   *Relay
	relayTo string
	table   string
	srv     *Process
	client  *http.Client
	logs    *os.File
	args    []string // more hitch serve flags
}

// newHarness builds hitch, starts DynamoDB Local, the relay and a server
// of the chaos agent and the extra agent files (name → YAML).
func newHarness(t *testing.T, extra ...map[string]string) *harness {
	t.Helper()
	return newHarnessArgs(t, nil, extra...)
}

// newHarnessArgs is newHarness with more hitch serve flags.
func newHarnessArgs(t *testing.T, args []string, extra ...map[string]string) *harness {
	t.Helper()
	endpoint := ddblocal.Start(t)
	dir := t.TempDir()
	files := map[string]string{"chaos.yaml": agentYAML}
	for _, m := range extra {
		maps.Copy(files, m)
	}
	for name, def := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sandbox := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := BuildHitch(t, filepath.Join("..", ".."))
	logs, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	rl := NewRelay(endpoint)
	rs := httptest.NewServer(rl)
	t.Cleanup(rs.Close)
	h := &harness{t: t, bin: bin, dir: dir, relay: rl, relayTo: rs.URL, table: fmt.Sprintf("chaos%d", time.Now().UnixNano()),
		client: &http.Client{Timeout: 90 * time.Second}, logs: logs, args: args}
	h.start()
	t.Cleanup(func() { h.srv.Kill() })
	return h

}

// start runs a new hitch serve process, at a new address, on the table.
// A free port may be taken by another process between FreeAddr and the
// server's listen (a busy machine): a start that fails is tried again at
// another address, three times in all.
func (h *harness) start() {
	h.t.Helper()
	for attempt := 1; ; attempt++ {
		addr, err := FreeAddr()
		if err != nil {
			h.t.Fatal(err)
		}
		p := &Process{Bin: h.bin, Addr: addr, Log: h.logs,
			Args: append([]string{"--agents", h.dir, "--store", "dynamodb", "--dynamodb-endpoint", h.relayTo,
				"--table", h.table, "--create-table", "--request-timeout", "2m"}, h.args...)}
		err = p.Start(30 * time.Second)
		if err == nil {
			h.srv = p
			return
		}
		if attempt == 3 {
			h.t.Fatalf("%v; see %s", err, h.logs.Name())
		}
		h.t.Logf("hitch serve did not start at %s (%v); again at another address", addr, err)
	}
}

func (h *harness) kill() { h.srv.Signal(syscall.SIGKILL) }

func (h *harness) post(path, body string) (int, map[string]any, error) {
	resp, err := h.client.Post(h.srv.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(bytes.TrimSpace(b), &m)
	return resp.StatusCode, m, err
}

// eventCount is how many events GET events replays.
func (h *harness) eventCount(path string) int {
	resp, err := h.client.Get(h.srv.URL() + path)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Count("\n"+string(b), "\nid: ")
}

func (h *harness) get(path string) map[string]any {
	resp, err := h.client.Get(h.srv.URL() + path)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

type flow struct {
	file, taskID, resumeURL string
	recovery                time.Duration
	outcome                 string
}

type report struct {
	flows, lost, stuck, dups int
	killed                   int
	runs                     map[int]int    // tool executions per approved call → flows
	kills                    map[string]int // moment → kills
	recovery                 []time.Duration
}

func TestChaos(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHAOS_FLOWS"))
	if n <= 0 {
		t.Skip("set CHAOS_FLOWS (make chaos; make test runs 50)")
	}
	h := newHarness(t)
	rep := &report{runs: map[int]int{}, kills: map[string]int{}}
	for round := 0; rep.flows < n; round++ {
		h.round(round, min(batch, n-rep.flows), filepath.Join(h.dir, "sandbox"), rep)
	}
	sort.Slice(rep.recovery, func(i, j int) bool { return rep.recovery[i] < rep.recovery[j] })
	pct := func(p float64) time.Duration {
		if len(rep.recovery) == 0 {
			return 0
		}
		return rep.recovery[min(len(rep.recovery)-1, int(p*float64(len(rep.recovery))))]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %d flows, %d kills of hitch serve (SIGKILL) on DynamoDB Local\n", rep.flows, rep.killed)
	var moments []string
	for m := range rep.kills {
		moments = append(moments, m)
	}
	sort.Strings(moments)
	for _, m := range moments {
		fmt.Fprintf(&b, "  kills at %-36s %d\n", m, rep.kills[m])
	}
	fmt.Fprintf(&b, "  runs of each approved append_file: 0×: %d, 1×: %d, more: %d (duplicates)\n", rep.runs[0], rep.runs[1], rep.dups)
	fmt.Fprintf(&b, "  requests lost: %d; tasks left stuck: %d\n", rep.lost, rep.stuck)
	fmt.Fprintf(&b, "  restart → retried approval's outcome: p50 %s, p99 %s, max %s\n",
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	t.Log("\n" + b.String())
	fmt.Print(b.String())
	if rep.dups > 0 || rep.lost > 0 || rep.stuck > 0 {
		t.Errorf("duplicates %d, lost %d, stuck %d: want 0 (server log: %s)", rep.dups, rep.lost, rep.stuck, h.logs.Name())
	}
	if p99 := pct(0.99); p99 > 20*time.Second {
		t.Errorf("recovery p99 %s, want ≤ 20 s", p99)
	}
}

// round pauses size requests, approves them all while the relay kills the
// server at a random DynamoDB call, restarts it and sends the approvals again.
func (h *harness) round(round, size int, sandbox string, rep *report) {
	t := h.t
	flows := make([]*flow, size)
	for i := range flows {
		f := &flow{file: fmt.Sprintf("r%d-%d.log", round, i)}
		msg := fmt.Sprintf(`/call append_file {"path": %q, "content": "ran\n"}`, f.file)
		body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": msg}}})
		code, res, err := h.post("/agents/chaos/invoke", string(body))
		if err != nil || code != 200 || res["status"] != "Paused" {
			t.Fatalf("round %d: the pause: %d %v %v", round, code, res, err)
		}
		f.taskID, f.resumeURL = res["task_id"].(string), res["resume_url"].(string)
		flows[i] = f
	}
	k, after := 1+rand.IntN(4*size), rand.IntN(2) == 1
	h.relay.Arm(k, after, h.kill)
	var wg sync.WaitGroup
	for _, f := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = h.post(f.resumeURL, `{"action":"approve"}`)
		}()
	}
	wg.Wait()
	op := h.relay.Disarm()
	moment := "none (the batch ended first)"
	if op != "" {
		when := "before it landed"
		if after {
			when = "after it landed"
		}
		moment = op + ", " + when
		rep.killed++
		<-h.srv.Done()
		h.start()
	}
	rep.kills[moment]++
	ready := time.Now()
	for _, f := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, res, err := h.post(f.resumeURL, `{"action":"approve"}`)
			f.recovery = time.Since(ready)
			if err != nil || code != 200 {
				f.outcome = fmt.Sprintf("%d %v %v", code, res, err)
				return
			}
			f.outcome, _ = res["status"].(string)
		}()
	}
	wg.Wait()
	for _, f := range flows {
		rep.flows++
		if op != "" {
			rep.recovery = append(rep.recovery, f.recovery)
		}
		if f.outcome != "Completed" {
			rep.lost++
			t.Logf("round %d (%s): the retried approval of %s answered %s", round, moment, f.taskID, f.outcome)
		}
		data, _ := os.ReadFile(filepath.Join(sandbox, f.file))
		runs := strings.Count(string(data), "ran\n")
		if runs > 1 {
			rep.dups++
			t.Logf("round %d (%s): append_file of %s ran %d times", round, moment, f.taskID, runs)
		} else {
			rep.runs[runs]++
		}
		task := h.get("/agents/chaos/tasks/" + f.taskID)
		if task["status"] != "Completed" {
			rep.stuck++
			t.Logf("round %d (%s): task %s is left %v", round, moment, f.taskID, task["status"])
		}
	}
}

// TestStalledServer: a hitch serve process is stopped (SIGSTOP) right after
// its resume's claim landed, past its lease; a second process takes the
// request over (the approved call, not idempotent, is reported
// outcome_unknown, not run) and completes it. When the first is continued
// (SIGCONT), it finds its lease gone: it runs no tool, writes nothing and
// logs no event.
func TestStalledServer(t *testing.T) {
	if os.Getenv("CHAOS_FLOWS") == "" {
		t.Skip("set CHAOS_FLOWS (make chaos; make test runs it)")
	}
	h := newHarness(t)
	first := h.srv
	code, res, err := h.post("/agents/chaos/invoke", `{"items":[{"content":"/call append_file {\"path\": \"stall.log\", \"content\": \"ran\\n\"}"}]}`)
	if err != nil || code != 200 || res["status"] != "Paused" {
		t.Fatalf("the pause: %d %v %v", code, res, err)
	}
	taskID, resumeURL := res["task_id"].(string), res["resume_url"].(string)
	stopped := make(chan struct{})
	h.relay.ArmStall("TransactWriteItems", func() {
		// Stopped before its answer goes back.
		if err := first.Stop(); err != nil {
			t.Error(err)
		}
		close(stopped)
	})
	firstAnswer := make(chan string, 1)
	go func() {
		code, res, err := h.post(resumeURL, `{"action":"approve"}`)
		firstAnswer <- fmt.Sprintf("%d %v %v", code, res["error"], err)
	}()
	<-stopped
	h.start() // a second process, on the same table
	second := h.srv
	code, res, err = h.post(resumeURL, `{"action":"approve"}`)
	if err != nil || code != 200 || res["status"] != "Completed" {
		t.Fatalf("the second process's resume: %d %v %v", code, res, err)
	}
	task := h.get("/agents/chaos/tasks/" + taskID)
	eventsPath := "/agents/chaos/tasks/" + taskID + "/requests/" + res["request_id"].(string) + "/events"
	events := h.eventCount(eventsPath)
	version := fmt.Sprint(task["updated_at"])
	first.Cont()
	select {
	case a := <-firstAnswer:
		if !strings.Contains(a, "request_lost") {
			t.Errorf("the continued process answered %s, want request_lost", a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the continued process did not answer")
	}
	h.srv = second
	if data, _ := os.ReadFile(filepath.Join(h.dir, "sandbox", "stall.log")); len(data) != 0 {
		t.Errorf("the approved call ran after the takeover reported it outcome_unknown: %q", data)
	}
	if n := h.eventCount(eventsPath); n != events {
		t.Errorf("the continued process logged events: %d → %d", events, n)
	}
	after := h.get("/agents/chaos/tasks/" + taskID)
	if after["status"] != "Completed" || fmt.Sprint(after["updated_at"]) != version {
		t.Errorf("the continued process changed the task: %v → %v, %v", version, after["updated_at"], after["status"])
	}
	first.Kill()
	if t.Failed() {
		out, _ := os.ReadFile(h.logs.Name())
		t.Logf("the servers' log:\n%s", out)
	}
}
