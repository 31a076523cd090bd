package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/webhook"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// startListen runs `hitch webhook listen` in process.
func startListen(t *testing.T, secretRef string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- webhookCmd(ctx, []string{"listen", "--addr", "127.0.0.1:0", "--secret", secretRef}, nil, out, out, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listen: %v", err)
		}
	})
	return addr, out
}

func waitFor(t *testing.T, out *lockedBuffer, text string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(out.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", text, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeWebhooks: the example agent with a webhook, under hitch serve:
// `hitch webhook listen` receives, verifies and prints the pause, then the
// completion after the approval.
func TestServeWebhooks(t *testing.T) {
	t.Setenv("HITCH_WEBHOOK_SECRET", testSecret)
	t.Setenv("HITCH_URL", "http://hitch.example:8080") // the resume URL printed is whole, on HITCH_URL
	addr, out := startListen(t, "env:HITCH_WEBHOOK_SECRET")
	def, err := os.ReadFile(filepath.Join("..", "..", "examples", "webhooks", "assistant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	def = bytes.ReplaceAll(def, []byte("127.0.0.1:9000"), []byte(addr))
	if err := os.WriteFile(filepath.Join(dir, "assistant.yaml"), def, 0o644); err != nil {
		t.Fatal(err)
	}
	base, _, logs := startServe(t, "--agents", dir)
	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice",
		`{"items":[{"content":"/call write_file {\"path\": \"a.txt\", \"content\": \"hi\"}"}]}`)
	res := decode(t, body)
	if code != 200 || res["status"] != "Paused" {
		t.Fatalf("invoke: %d %s\n%s", code, body, logs)
	}
	waitFor(t, out, "request.paused msg_")
	waitFor(t, out, "agent=assistant task="+res["task_id"].(string))
	waitFor(t, out, "resume: POST http://hitch.example:8080/agents/assistant/tasks/")
	if code, body := call(t, "POST", base+res["resume_url"].(string), "alice", `{"action":"approve"}`); code != 200 {
		t.Fatalf("resume: %d %s", code, body)
	}
	waitFor(t, out, "request.completed msg_")
	if strings.Contains(out.String(), "refused") {
		t.Errorf("a delivery was refused:\n%s", out)
	}
}

func TestWebhookVerify(t *testing.T) {
	key, _ := webhook.ParseSecret(testSecret)
	body := `{"type":"request.paused"}`
	now := time.Now()
	sig := webhook.Sign(key, "msg_1", now, []byte(body))
	ts := now.Unix()
	args := func(sig string) []string {
		return []string{"verify", "--secret", testSecret, "--id", "msg_1", "--timestamp", strconv.FormatInt(ts, 10), "--signature", sig}
	}
	var out bytes.Buffer
	if err := webhookCmd(context.Background(), args(sig), strings.NewReader(body), &out, &out, nil); err != nil || out.String() != "valid\n" {
		t.Errorf("a valid webhook: %v %q", err, out.String())
	}
	if err := webhookCmd(context.Background(), args(sig), strings.NewReader(body+" "), &out, &out, nil); err == nil {
		t.Error("a changed body verified")
	}
	if err := webhookCmd(context.Background(), []string{"verify", "--id", "msg_1"}, strings.NewReader(body), &out, &out, nil); err == nil {
		t.Error("verify without a secret succeeded")
	}
	if err := webhookCmd(context.Background(), []string{"sign"}, nil, &out, &out, nil); err == nil {
		t.Error("an unknown subcommand succeeded")
	}
}
