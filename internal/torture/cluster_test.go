package torture

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/chaos"
	"github.com/hitch-agents/hitch/internal/ddblocal"
)

// proc is one of the two hitch serve processes, behind its relay.
type proc struct {
	name   string
	p      *chaos.Process
	relay  *chaos.Relay
	agents []string
	// dir holds its agents' definitions.
	dir string
}

// cluster is what the torture test runs: DynamoDB Local, the test tools'
// MCP server and ledger, the webhook receiver, and processes A and B.
type cluster struct {
	t      *testing.T
	dir    string
	ledger *Ledger
	recv   *Receiver
	rec    *Recorder
	client *http.Client
	// stream reads event streams, which may last longer than an answer.
	stream *http.Client
	procs  map[string]*proc
	// gone is the relay between A's gmid and B that goes away (gone_test.go).
	gone *goneRelay
	// waiters are each process's Step Functions and Lambda fakes
	// (waiters_test.go).
	waiters map[string]*waiterFakes
}

func startCluster(t *testing.T, seed uint64, dir string) *cluster {
	t.Helper()
	endpoint := ddblocal.Start(t)
	c := &cluster{t: t, dir: dir, rec: &Recorder{}, procs: map[string]*proc{},
		ledger: &Ledger{Delay: RandomDelay(seed, 300*time.Millisecond)},
		client: &http.Client{Timeout: 45 * time.Second}, stream: &http.Client{Timeout: 5 * time.Minute}}
	recv, err := NewReceiver(WebhookSecret, seed, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	c.recv = recv
	mcp := httptest.NewServer(c.ledger.MCPHandler(ProcA, ProcB))
	t.Cleanup(mcp.Close)
	hooks := httptest.NewServer(recv)
	t.Cleanup(hooks.Close)
	bin := chaos.BuildHitch(t, filepath.Join("..", ".."))
	addrs := map[string]string{}
	for _, name := range []string{ProcA, ProcB} {
		a, err := chaos.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		addrs[name] = a
	}
	c.gone = newGoneRelay("http://" + addrs[ProcB])
	goneSrv := httptest.NewServer(c.gone)
	t.Cleanup(goneSrv.Close)
	table := fmt.Sprintf("torture-%d", time.Now().UnixNano())
	for _, name := range []string{ProcB, ProcA} { // B first: A's remote agents call it
		remote := ""
		if name == ProcA {
			remote = "http://" + addrs[ProcB]
		}
		agentDir := filepath.Join(dir, "agents-"+name)
		if err := os.MkdirAll(agentDir, 0o755); err != nil {
			t.Fatal(err)
		}
		defs := Definitions(mcp.URL+"/mcp/"+name, hooks.URL+"/hooks/"+name, remote)
		if remote != "" {
			defs[GoneAgent+".yaml"] = goneDefinition(goneSrv.URL, hooks.URL+"/hooks/"+name)
		}
		var agents []string
		for file, def := range defs {
			if err := os.WriteFile(filepath.Join(agentDir, file), []byte(def), 0o644); err != nil {
				t.Fatal(err)
			}
			agents = append(agents, strings.TrimSuffix(file, ".yaml"))
		}
		logf, err := os.Create(filepath.Join(dir, "serve-"+name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logf.Close() })
		wenv, wargs := c.startWaiters(t, name)
		if name == ProcB {
			// Retention on one process: every item of a finished task
			// carries a ttl, cleared when the task runs again.
			wargs = append(wargs, "--retention-days", "1")
		}
		relay := chaos.NewRelay(endpoint)
		rs := httptest.NewServer(relay)
		t.Cleanup(rs.Close)
		p := &chaos.Process{Bin: bin, Addr: addrs[name], Log: logf,
			Env: append([]string{"TORTURE_WEBHOOK_SECRET=" + WebhookSecret, "HITCH_REMOTE_TOKEN=Bearer " + User}, wenv...),
			Args: []string{"--agents", agentDir, "--store", "dynamodb", "--dynamodb-endpoint", rs.URL,
				"--table", table + "-" + name, "--create-table", "--a2a-poll", "1s",
				"--request-timeout", "2m", "--shutdown-timeout", "5s"}}
		p.Args = append(p.Args, wargs...)
		if err := p.Start(60 * time.Second); err != nil {
			t.Fatalf("%v; see %s", err, logf.Name())
		}
		t.Cleanup(func() { p.Cont(); p.Kill() })
		c.procs[name] = &proc{name: name, p: p, relay: relay, agents: agents, dir: agentDir}
	}
	return c
}

// procOf maps an absolute URL to its process and path.
func (c *cluster) procOf(rawURL string) (string, string) {
	for name, p := range c.procs {
		if strings.HasPrefix(rawURL, p.p.URL()+"/") {
			return name, strings.TrimPrefix(rawURL, p.p.URL())
		}
	}
	return "", rawURL
}

// healthy waits until proc answers /health, up to d.
func (c *cluster) healthy(name string, d time.Duration) bool {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := client.Get(c.procs[name].p.URL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// do sends one recorded operation and observes the statuses its answer
// shows. path is relative to proc.
func (c *cluster) do(op Op) *Op {
	rec := c.rec.Begin(op)
	var body io.Reader
	if op.Body != "" {
		body = strings.NewReader(op.Body)
	}
	req, err := http.NewRequest(op.Method, c.procs[op.Proc].p.URL()+op.Path, body)
	if err != nil {
		c.rec.Finish(rec, 0, "", err)
		return rec
	}
	req.Header.Set("Authorization", "Bearer "+cmp.Or(op.User, OwnerToken))
	if op.Key != "" {
		req.Header.Set("Idempotency-Key", op.Key)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.rec.Finish(rec, 0, "", err)
		return rec
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	b = bytes.TrimSpace(b)
	rec.RetryAfter = resp.Header.Get("Retry-After")
	c.rec.Finish(rec, resp.StatusCode, string(b), err)
	c.observe(rec.End, b)
	return rec
}

// observe records the request statuses an answer shows.
func (c *cluster) observe(at time.Time, b []byte) {
	var v struct {
		RequestID string    `json:"request_id"`
		Status    string    `json:"status"`
		Requests  []Request `json:"requests"`
	}
	if json.Unmarshal(b, &v) != nil {
		return
	}
	var obs []Observation
	if v.RequestID != "" && v.Status != "" {
		obs = append(obs, Observation{RequestID: v.RequestID, Status: v.Status})
	}
	for _, r := range v.Requests {
		obs = append(obs, Observation{RequestID: r.RequestID, Status: r.Status})
	}
	c.rec.Observe(at, obs...)
}

// readAll reads the final state of both processes.
func (c *cluster) readAll(ctx context.Context) ([]*Task, error) {
	var all []*Task
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, 0, 2)
	for _, name := range []string{ProcA, ProcB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd := &Reader{Client: c.client, Proc: name, Base: c.procs[name].p.URL(), User: User}
			ts, err := rd.All(ctx, c.procs[name].agents)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, ts...)
			if err != nil {
				errs = append(errs, fmt.Errorf("read %s: %w", name, err))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	c.observeState(all)
	return all, nil
}

// reread reads again, in place, the tasks not at rest: a request Running,
// or the task Paused.
func (c *cluster) reread(ctx context.Context, tasks []*Task) error {
	var idx []int
	for i, t := range tasks {
		if t.Status == "Paused" || !atRest([]*Task{t}) {
			idx = append(idx, i)
		}
	}
	read := make([]*Task, len(idx))
	err := forEach(ctx, len(idx), func(ctx context.Context, j int) error {
		old := tasks[idx[j]]
		rd := &Reader{Client: c.client, Proc: old.Proc, Base: c.procs[old.Proc].p.URL(), User: User}
		t, err := rd.Task(ctx, old.Agent, old.TaskID)
		if err != nil {
			return err
		}
		tasks[idx[j]], read[j] = t, t
		return nil
	})
	c.observeState(slices.DeleteFunc(read, func(t *Task) bool { return t == nil }))
	return err
}

// observeState records the status each request of the tasks is seen in now.
func (c *cluster) observeState(tasks []*Task) {
	now := time.Now()
	for _, t := range tasks {
		for _, r := range t.Requests {
			c.rec.Observe(now, Observation{RequestID: r.RequestID, Status: r.Status})
		}
	}
}
