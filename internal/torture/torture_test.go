package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/ddblocal"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestTorture is `make torture` (docs/architecture.md, "The guarantees"): TORTURE_SECONDS of random
// workloads under faults on two hitch serve processes, then the checker.
// TORTURE_SEED replays a run's choices; TORTURE_WORKERS sets the
// concurrency (default 4); TORTURE_SETTLE the quiet period's bound in
// seconds (default 90).
func TestTorture(t *testing.T) {
	seconds := envInt("TORTURE_SECONDS", 0)
	if seconds == 0 {
		t.Skip("set TORTURE_SECONDS (make torture)")
	}
	seed := rand.Uint64() % 1_000_000_000
	if v := os.Getenv("TORTURE_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TORTURE_SEED %q is not a number", v)
		}
		seed = s
	}
	fmt.Printf("torture: seed %d\n", seed)
	t.Logf("seed %d", seed)
	workers := envInt("TORTURE_WORKERS", 4)
	settle := time.Duration(envInt("TORTURE_SETTLE", 90)) * time.Second
	dir, err := os.MkdirTemp("", fmt.Sprintf("torture-%d-", seed))
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, seed, dir)
	run := Run{Seed: seed, Seconds: seconds, Workers: workers, Start: time.Now(), Dir: dir}
	deadline := run.Start.Add(time.Duration(seconds) * time.Second)
	nem := &nemesis{c: c, rng: rand.New(rand.NewPCG(seed, 0x6e656d)), deadline: deadline, stall: 20 * time.Second}
	nemDone := make(chan struct{})
	go func() { defer close(nemDone); nem.run() }()
	g := &generator{c: c, seed: seed, deadline: deadline, chains: Chains}
	if os.Getenv("TORTURE_FANOUT") == "0" {
		// On request only: every run, make test's minute included, has
		// the callers of two children.
		g.chains = nil
		for _, ch := range Chains {
			if len(ch.Fan) == 0 {
				g.chains = append(g.chains, ch)
			}
		}
		fmt.Println("torture: without callers of two children (TORTURE_FANOUT=0)")
	}
	g.run(workers)
	<-nemDone
	run.LoadEnd, run.Armed = time.Now(), nem.armed
	for name := range c.procs {
		if !c.healthy(name, 60*time.Second) {
			run.Problems = append(run.Problems, fmt.Sprintf("process %s does not answer after the load", name))
		}
	}

	// The quiet period: no fault, no client; wait until every request is
	// at rest and the webhooks stopped coming, or the bound passes. The
	// state is read in full once; after that only the tasks not at rest
	// (Running, or Paused: a caller may still move) are read again.
	ctx := context.Background()
	tasks, err := c.readAll(ctx)
	if err != nil {
		run.Problems = append(run.Problems, "reading the state: "+err.Error())
	}
	quietDeadline := run.LoadEnd.Add(settle)
	lastDeliveries, stableSince := -1, time.Now()
	for err == nil {
		n := len(c.recv.Deliveries()) + len(c.waiterCalls())
		if n != lastDeliveries {
			lastDeliveries, stableSince = n, time.Now()
		}
		if atRest(tasks) && chainsEnded(tasks) && time.Since(stableSince) > 3*time.Second {
			run.Settled = time.Now()
			break
		}
		if time.Now().After(quietDeadline) {
			break
		}
		time.Sleep(time.Second)
		if err = c.reread(ctx, tasks); err != nil {
			run.Problems = append(run.Problems, "reading the state: "+err.Error())
		}
	}
	if ts, err := c.readAll(ctx); err == nil {
		tasks = ts
	} else {
		run.Problems = append(run.Problems, "reading the final state: "+err.Error())
	}
	// The full read takes a while: a paused round that expired during it
	// ends its chain, and the read may show the root after the change and
	// the requests below before it. The tasks that can still move are read
	// again until a pass finds nothing changed.
	for range 10 {
		before := statuses(tasks)
		if err := c.reread(ctx, tasks); err != nil {
			run.Problems = append(run.Problems, "reading the final state again: "+err.Error())
			break
		}
		if statuses(tasks) == before {
			break
		}
		time.Sleep(time.Second)
	}
	in := Input{Ops: c.rec.Ops(), Ledger: c.ledger.Executions(), Answers: c.ledger.Answers(), Tasks: tasks, Deliveries: c.recv.Deliveries(),
		Faults: c.rec.Faults(), Observations: c.rec.Observations(), Gone: c.gone.state(), Waiters: c.waiterCalls()}
	res := Check(in)
	save(t, dir, in)
	var b strings.Builder
	Report(&b, run, in, res)
	fmt.Print(b.String())
	if len(res.Violations) > 0 {
		t.Errorf("%d violations of the guarantees (seed %d; report above; history in %s)", len(res.Violations), seed, dir)
	}
	if len(run.Problems) > 0 {
		t.Errorf("the harness: %s", strings.Join(run.Problems, "; "))
	}
}

// chainsEnded is whether no request waits below a root that ended: a
// remote agent's task is canceled by an outbox item its caller's end put,
// which the quiet period waits for (within its bound) as it waits for the
// webhooks.
func chainsEnded(tasks []*Task) bool {
	for _, r := range NewWorld(tasks).Order {
		if r.Parent != nil || !r.Finished() {
			continue
		}
		for _, below := range r.Below()[1:] {
			if !below.Finished() {
				return false
			}
		}
	}
	return true
}

// statuses is the tasks' requests' statuses, in one string.
func statuses(tasks []*Task) string {
	var b strings.Builder
	for _, t := range tasks {
		for _, r := range t.Requests {
			b.WriteString(r.RequestID + r.Status)
		}
	}
	return b.String()
}

// atRest is whether no request of the tasks is Running.
func atRest(tasks []*Task) bool {
	for _, t := range tasks {
		for _, r := range t.Requests {
			if r.Status == "Running" {
				return false
			}
		}
	}
	return true
}

// save writes the history, the ledger, the deliveries, the faults, the
// statuses seen and the final state as JSON lines, for a closer look.
func save(t *testing.T, dir string, in Input) {
	write := func(name string, items func(enc *json.Encoder) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("save %s: %v", name, err)
			return
		}
		defer f.Close()
		if err := items(json.NewEncoder(f)); err != nil {
			t.Errorf("save %s: %v", name, err)
		}
	}
	write("ops.jsonl", func(enc *json.Encoder) error {
		for _, op := range in.Ops {
			if err := enc.Encode(op); err != nil {
				return err
			}
		}
		return nil
	})
	write("ledger.jsonl", func(enc *json.Encoder) error {
		for _, e := range in.Ledger {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
	write("answers.jsonl", func(enc *json.Encoder) error {
		for _, a := range in.Answers {
			if err := enc.Encode(a); err != nil {
				return err
			}
		}
		return nil
	})
	write("deliveries.jsonl", func(enc *json.Encoder) error {
		for _, d := range in.Deliveries {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	})
	write("waiters.jsonl", func(enc *json.Encoder) error {
		for _, wc := range in.Waiters {
			if err := enc.Encode(wc); err != nil {
				return err
			}
		}
		return nil
	})
	write("faults.jsonl", func(enc *json.Encoder) error {
		for _, f := range in.Faults {
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
		return nil
	})
	write("observations.jsonl", func(enc *json.Encoder) error {
		for _, o := range in.Observations {
			if err := enc.Encode(o); err != nil {
				return err
			}
		}
		return nil
	})
	write("gone.json", func(enc *json.Encoder) error { return enc.Encode(in.Gone) })
	write("tasks.jsonl", func(enc *json.Encoder) error {
		for _, tk := range in.Tasks {
			if err := enc.Encode(tk); err != nil {
				return err
			}
		}
		return nil
	})
}
