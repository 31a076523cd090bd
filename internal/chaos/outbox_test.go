package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
	"github.com/hitch-agents/hitch/internal/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestOutboxSurvivesKill: hitch serve on DynamoDB Local commits a pause
// whose webhook it cannot deliver (the receiver is down), and is killed
// (SIGKILL) before any delivery; restarted, it delivers the webhook from the
// table — once, signed — and deletes it: nothing is lost.
func TestOutboxSurvivesKill(t *testing.T) {
	t.Setenv("HITCH_CHAOS_WEBHOOK_SECRET", secret)
	// The receiver keeps its address (a busy machine would hand a freed
	// port to another test) but is down until after the kill: it answers
	// every delivery 503 and records none.
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := rl.Addr().String()
	var up atomic.Bool
	key, _ := webhook.ParseSecret(secret)
	type got struct {
		id, typ, task string
	}
	var mu sync.Mutex
	var received []got
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
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
	<-h.srv.Done()

	up.Store(true)
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

// TestCallbackSurvivesKill: a durable execution's callback (callback_id, on
// a direct invoke through --lambda-addr) whose answer the Lambda API fails
// (500) when the request completes; hitch serve is killed (SIGKILL) before
// any answer lands; restarted, it answers the callback from the table, once,
// with the Completed RequestResult.
func TestCallbackSurvivesKill(t *testing.T) {
	fn := fakelambda.New(t)
	fn.FailNext(1 << 20) // every answer fails until the kill
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", fn.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lambdaAddr := ln.Addr().String()
	ln.Close()
	h := newHarnessArgs(t, []string{"--lambda-addr", lambdaAddr})
	api := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + lambdaAddr),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), RetryMaxAttempts: 1})
	out, err := api.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("hitch-invoke"),
		Payload: []byte(`{"op":"invoke","agent":"chaos","user_id":"durable","items":[{"content":"hello"}],"callback_id":"Y2FsbGJhY2stMQ=="}`)})
	if err != nil || out.FunctionError != nil {
		t.Fatalf("invoke: %v %s", err, out.Payload)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Payload, &res); err != nil || res["status"] != "Completed" {
		t.Fatalf("invoke answered %s (%v)", out.Payload, err)
	}
	h.kill()
	<-h.srv.Done()
	before := len(fn.Callbacks())
	fn.FailNext(0)

	h.start() // its first sweep finds the unanswered item
	deadline := time.Now().Add(30 * time.Second)
	for len(fn.Callbacks()) == before {
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(h.logs.Name())
			t.Fatalf("the callback was not answered after the restart; log:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate would come now
	after := fn.Callbacks()[before:]
	if len(after) != 1 || after[0].Op != "succeed" || after[0].ID != "Y2FsbGJhY2stMQ==" {
		t.Fatalf("answers after the restart: %+v", after)
	}
	var got map[string]any
	if err := json.Unmarshal(after[0].Body, &got); err != nil || got["status"] != "Completed" || got["request_id"] != res["request_id"] {
		t.Errorf("the answer: %s (%v)", after[0].Body, err)
	}
}
