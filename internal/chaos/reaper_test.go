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

	"github.com/google/uuid"
)

// TestReaperRecovers: requests whose process died finish with no client
// action (the reaper, docs/architecture.md). Each round runs approvals of
// paused requests (append_file, not idempotent) and new messages whose turn
// calls a tool that needs no approval, all at once, while the relay kills
// hitch serve at a random DynamoDB call (before or after it lands). The
// server is restarted and nobody sends anything again: every request whose
// leg had been claimed must end on its own — Completed — within the bound
// (lease 15 s + sweep 5 s after the kill), with every approved call run at
// most once. An approval whose claim never landed leaves its request
// Paused (nothing was decided); it is sent again afterwards and completes.
func TestReaperRecovers(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHAOS_FLOWS"))
	if n <= 0 {
		t.Skip("set CHAOS_FLOWS (make chaos; make test runs it)")
	}
	n = max(batch, n/2)
	h := newHarness(t)
	sandbox := filepath.Join(h.dir, "sandbox")
	type flow struct {
		approval            bool
		file, session, task string
		url                 string
		status              string
		recovered           time.Duration
		// running: seen Running after the restart (its leg had died):
		// only these are recoveries.
		running bool
	}
	var recovery []time.Duration
	var flows, kills, undecided, dups, stuck, ended int
	for round := 0; flows < n; round++ {
		fs := make([]*flow, min(batch, n-flows))
		for i := range fs {
			f := &flow{approval: i%2 == 0, file: fmt.Sprintf("reap%d-%d.log", round, i), session: uuid.NewString()}
			if f.approval {
				msg := fmt.Sprintf(`/call append_file {"path": %q, "content": "ran\n"}`, f.file)
				body, _ := json.Marshal(map[string]any{"items": []map[string]string{{"content": msg}}})
				code, res, err := h.post("/agents/chaos/invoke", string(body))
				if err != nil || code != 200 || res["status"] != "Paused" {
					t.Fatalf("round %d: the pause: %d %v %v", round, code, res, err)
				}
				f.task, f.url = res["task_id"].(string), res["resume_url"].(string)
			}
			fs[i] = f
		}
		k, after := 1+rand.IntN(3*len(fs)), rand.IntN(2) == 1
		h.relay.Arm(k, after, h.kill)
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if f.approval {
					_, _, _ = h.post(f.url, `{"action":"approve"}`)
					return
				}
				body, _ := json.Marshal(map[string]any{"session_id": f.session,
					"items": []map[string]string{{"content": "/call list_files {}"}}})
				_, _, _ = h.post("/agents/chaos/invoke", string(body))
			}()
		}
		wg.Wait()
		op := h.relay.Disarm()
		flows += len(fs)
		if op == "" {
			continue // the batch ended before the k-th call: nothing died
		}
		kills++
		killed := time.Now()
		<-h.srv.Done()
		h.start()
		// No client action from here: only reads.
		for _, f := range fs {
			if f.task == "" {
				list := h.get("/agents/chaos/sessions/" + f.session + "/tasks")
				if tasks, _ := list["tasks"].([]any); len(tasks) == 1 {
					f.task, _ = tasks[0].(map[string]any)["task_id"].(string)
				}
			}
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			open := 0
			for _, f := range fs {
				if f.task == "" || f.status != "" {
					continue
				}
				task := h.get("/agents/chaos/tasks/" + f.task)
				switch st, _ := task["status"].(string); st {
				case "Completed", "Failed", "Canceled", "Paused":
					f.status, f.recovered = st, time.Since(killed)
				default:
					f.running = true
					open++
				}
			}
			if open == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, f := range fs {
			switch {
			case f.task == "":
				// The message's create never landed: nothing to recover.
			case f.status == "Paused" && f.approval:
				// The approval's claim never landed: nothing was decided.
				undecided++
				code, res, err := h.post(f.url, `{"action":"approve"}`)
				if err != nil || code != 200 || res["status"] != "Completed" {
					t.Errorf("round %d: the approval sent again: %d %v %v", round, code, res, err)
				}
			case f.status == "Completed":
				if f.running {
					recovery = append(recovery, f.recovered)
				} else {
					ended++ // it had ended before the kill
				}
			default:
				stuck++
				t.Logf("round %d (kill at %s): task %s left %q after the kill", round, op, f.task, f.status)
			}
			if f.approval {
				data, _ := os.ReadFile(filepath.Join(sandbox, f.file))
				if runs := strings.Count(string(data), "ran\n"); runs > 1 {
					dups++
					t.Logf("round %d: append_file of %s ran %d times", round, f.task, runs)
				}
			}
		}
	}
	sort.Slice(recovery, func(i, j int) bool { return recovery[i] < recovery[j] })
	pct := func(p float64) time.Duration {
		if len(recovery) == 0 {
			return 0
		}
		return recovery[min(len(recovery)-1, int(p*float64(len(recovery))))]
	}
	report := fmt.Sprintf("reaper: %d flows, %d kills; %d requests left running by a kill recovered with no client action (%d had ended before it), %d approvals had not landed, %d stuck, %d duplicate runs\n"+
		"  kill → outcome with no client action: p50 %s, p99 %s, max %s\n",
		flows, kills, len(recovery), ended, undecided, stuck, dups,
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	t.Log("\n" + report)
	fmt.Print(report)
	if stuck > 0 || dups > 0 {
		t.Errorf("stuck %d, duplicates %d: want 0 (server log: %s)", stuck, dups, h.logs.Name())
	}
	if p99 := pct(0.99); p99 > 20*time.Second+restartAllowance {
		t.Errorf("recovery p99 %s, want ≤ 20 s (the lease and the sweep) + %s for the restart", p99, restartAllowance)
	}
}

// restartAllowance is what a restart of hitch serve (a process start and
// its table check) may add to the recovery bound in this test.
const restartAllowance = 3 * time.Second
