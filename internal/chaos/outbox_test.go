package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestOutboxSurvivesKill: hitch serve on DynamoDB Local commits a pause
// whose webhook it cannot deliver (the receiver is down), and is killed
// (SIGKILL) before any delivery; restarted, it delivers the webhook from the
// table — once, signed — and deletes it: nothing is lost.
func TestOutboxSurvivesKill(t *testing.T) {
	t.Setenv("HITCH_CHAOS_WEBHOOK_SECRET", secret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // down until after the kill: connections are refused
	def := fmt.Sprintf(`apiVersion: tealagents/v1alpha1
kind: Agent
name: notified
version: 0.1
description: Appends lines to files, with approval; tells a webhook.
spec:
  agent:
    model: local
    tools:
      - builtin: files
        config: {root: ./sandbox}
        requires_approval: [append_file]
  notifications:
    - url: http://%s/hooks
      events: [request.paused, request.completed]
      secret: env:HITCH_CHAOS_WEBHOOK_SECRET
`, addr)
	h := newHarness(t, map[string]string{"notified.yaml": def})
	code, res, err := h.post("/agents/notified/invoke", `{"items":[{"content":"/call append_file {\"path\": \"n.log\", \"content\": \"x\\n\"}"}]}`)
	if err != nil || code != 200 || res["status"] != "Paused" {
		t.Fatalf("the pause: %d %v %v", code, res, err)
	}
	h.kill()
	<-h.srv.done

	key, _ := webhook.ParseSecret(secret)
	type got struct {
		id, typ, task string
	}
	var mu sync.Mutex
	var received []got
	rl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the receiver cannot listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(key, r.Header, body, time.Now()); err != nil {
			t.Errorf("a delivery does not verify: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p struct {
			Type string `json:"type"`
			Data struct {
				TaskID string `json:"task_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		received = append(received, got{r.Header.Get(webhook.HeaderID), p.Type, p.Data.TaskID})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(rl)
	t.Cleanup(func() { srv.Close() })

	h.start() // its first sweep finds the undelivered item
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(h.logs.Name())
			t.Fatalf("the webhook was not delivered after the restart; log:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate would come now
	mu.Lock()
	defer mu.Unlock()
	if len(received) != 1 || received[0].typ != "request.paused" || received[0].task != res["task_id"] {
		t.Errorf("received %+v, want one request.paused of task %v", received, res["task_id"])
	}
}
