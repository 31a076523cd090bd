package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// hitch chat forgives (docs/api.md, "Pauses for input"): an answer that is
// not one of the question's choices is asked again, not sent and left
// stuck behind a 400 with every later line a 409 task_paused.
func TestChatAsksAgainAfterRefusal(t *testing.T) {
	base, _, _ := startServe(t)
	in := strings.NewReader("/call ask_user {\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}\n7\n2\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not one of the choices: type its number (1 to 2) or the choice itself; again:", "[answered by carol]", "← ask_user success: \"blue\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "task_paused") {
		t.Errorf("the chat got stuck:\n%s", out.String())
	}
}

// A form field that does not fit its schema (the example server's reason:
// minLength 3) is asked again, the same field, before anything is sent.
func TestChatFormAsksFieldAgain(t *testing.T) {
	base, _ := startTickets(t)
	in := strings.NewReader("/call tickets_reopen_ticket {\"id\": \"T-2\"}\ny\nno\nthe fix did not hold\nyes\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", base, "--agent", "tickets", "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if n := strings.Count(got, "Why reopen it? (string, required)> "); n != 2 {
		t.Errorf("the reason was asked %d times, want 2:\n%s", n, got)
	}
	for _, want := range []string{"minLength", "[answered by carol]", "reopened T-2: the fix did not hold (urgent)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat does not show %q:\n%s", want, got)
		}
	}
}

// Ctrl-C at a prompt (the chat's context ends) declines with a reason and
// leaves: the task is not left Paused.
func TestChatInterruptDeclines(t *testing.T) {
	base, _, _ := startServe(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- chat(ctx, []string{"--url", base, "--token", "carol"}, pr, out, io.Discard) }()
	if _, err := io.WriteString(pw, "/call ask_user {\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "answer (empty: decline)> ")
	cancel() // what Ctrl-C does: main's signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the chat did not end at Ctrl-C:\n%s", out)
	}
	for _, want := range []string{"[Ctrl-C: declining, then leaving]", "[rejected by carol]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat does not show %q:\n%s", want, out)
		}
	}
	code, body := call(t, "GET", base+"/agents/assistant/tasks?status=Paused", "carol", "")
	if tasks := decode(t, body)["tasks"].([]any); code != 200 || len(tasks) != 0 {
		t.Errorf("a task was left Paused: %d %s", code, body)
	}
}
