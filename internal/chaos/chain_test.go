package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const frontYAML = `apiVersion: tealagents/v1alpha1
kind: Agent
name: front
version: 0.1
description: Hands work on files to the chaos agent.
spec:
  agent:
    model: local
    max_iterations: 4
    tools:
      - agent: chaos
`

// TestChainChaos: agents calling agents under SIGKILL (docs/architecture.md,
// "The guarantees"). Each flow asks front, which delegates to chaos, whose
// append_file pauses both; the approvals go half to the leaf, half to the
// root, while the relay kills hitch serve at a random DynamoDB call (before
// or after it lands) — between a leaf's commit and its caller's
// continuation among others. After the restart each approval is sent
// again; then every root must complete, every approved call must have run
// exactly once.
func TestChainChaos(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHAOS_FLOWS"))
	if n <= 0 {
		t.Skip("set CHAOS_FLOWS (make chaos; make test runs it)")
	}
	n = max(8, n/5)
	h := newHarness(t, map[string]string{"front.yaml": frontYAML})
	sandbox := filepath.Join(h.dir, "sandbox")
	var flows, kills, dups, lost, stuck int
	runs := map[int]int{}
	var recovery []time.Duration
	kinds := map[string]int{}
	for round := 0; flows < n; round++ {
		size := min(4, n-flows)
		type chain struct {
			file, rootTask, url, at string
			outcome                 string
		}
		cs := make([]*chain, size)
		for i := range cs {
			c := &chain{file: fmt.Sprintf("c%d-%d.log", round, i)}
			inner, _ := json.Marshal(map[string]string{"path": c.file, "content": "ran\n"})
			msg, _ := json.Marshal(map[string]string{"message": "/call append_file " + string(inner)})
			body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": "/call chaos " + string(msg)}}})
			code, res, err := h.post("/agents/front/invoke", string(body))
			if err != nil || code != 200 || res["status"] != "Paused" {
				t.Fatalf("round %d: the cascading pause: %d %v %v", round, code, res, err)
			}
			c.rootTask = res["task_id"].(string)
			if i%2 == 0 {
				c.at, c.url = "leaf", res["pending_approvals"].([]any)[0].(map[string]any)["resume_url"].(string)
			} else {
				c.at, c.url = "root", res["resume_url"].(string)
			}
			cs[i] = c
		}
		k, after := 1+rand.IntN(6*size), rand.IntN(2) == 1
		h.relay.Arm(k, after, h.kill)
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = h.post(c.url, `{"action":"approve"}`)
			}()
		}
		wg.Wait()
		op := h.relay.Disarm()
		moment := "none"
		if op != "" {
			kills++
			moment = op
			if after {
				moment += " (landed)"
			}
			<-h.srv.Done()
			h.start()
		}
		kinds[moment]++
		ready := time.Now()
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, res, err := h.post(c.url, `{"action":"approve"}`)
				if err != nil || code != 200 {
					c.outcome = fmt.Sprintf("%d %v %v", code, res, err)
					return
				}
				c.outcome, _ = res["status"].(string)
			}()
		}
		wg.Wait()
		for _, c := range cs {
			flows++
			if c.outcome != "Completed" {
				lost++
				t.Logf("round %d (kill at %s): the retried approval at the %s answered %s", round, moment, c.at, c.outcome)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				task := h.get("/agents/front/tasks/" + c.rootTask)
				if task["status"] == "Completed" {
					if op != "" {
						recovery = append(recovery, time.Since(ready))
					}
					break
				}
				if time.Now().After(deadline) {
					stuck++
					t.Logf("round %d (kill at %s): root %s is left %v", round, moment, c.rootTask, task["status"])
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			// At most once: a call its leg may have started when it died
			// is reported outcome_unknown, not run again (not idempotent).
			data, _ := os.ReadFile(filepath.Join(sandbox, c.file))
			n := strings.Count(string(data), "ran\n")
			runs[min(n, 2)]++
			if n > 1 {
				dups++
				t.Logf("round %d (kill at %s): append_file of %s ran %d times", round, moment, c.file, n)
			}
		}
	}
	sort.Slice(recovery, func(i, j int) bool { return recovery[i] < recovery[j] })
	var b strings.Builder
	fmt.Fprintf(&b, "chain chaos: %d flows (front → chaos, approvals at the leaf and at the root), %d kills\n", flows, kills)
	for m, c := range kinds {
		fmt.Fprintf(&b, "  kills at %-36s %d\n", m, c)
	}
	fmt.Fprintf(&b, "  runs of each approved append_file: 0×: %d, 1×: %d, more: %d (duplicates)\n", runs[0], runs[1], dups)
	fmt.Fprintf(&b, "  retried approvals lost: %d; roots not completed: %d\n", lost, stuck)
	if len(recovery) > 0 {
		fmt.Fprintf(&b, "  restart → root completed: p50 %s, max %s\n", recovery[len(recovery)/2].Round(time.Millisecond), recovery[len(recovery)-1].Round(time.Millisecond))
	}
	t.Log("\n" + b.String())
	fmt.Print(b.String())
	if dups > 0 || lost > 0 || stuck > 0 {
		t.Errorf("duplicates %d, lost %d, stuck %d: want 0 (server log: %s)", dups, lost, stuck, h.logs.Name())
	}
}
