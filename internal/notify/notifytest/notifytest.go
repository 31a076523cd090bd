// Package notifytest has recording deliverers for the dispatcher's tests:
// a webhook sender that refuses the first attempts of each message, and a
// waiter answerer that records its calls.
package notifytest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
)

// Hooks records webhook attempts; it refuses the first Fail attempts of
// each message (by id).
type Hooks struct {
	mu       sync.Mutex
	Fail     int
	attempts map[string]int
	got      []notify.Webhook
}

// Send implements notify.WebhookSender.
func (h *Hooks) Send(_ context.Context, _ agent.Notification, msg notify.Webhook) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.attempts == nil {
		h.attempts = map[string]int{}
	}
	h.attempts[msg.ID]++
	if h.attempts[msg.ID] <= h.Fail {
		return fmt.Errorf("receiver answered 500 (attempt %d)", h.attempts[msg.ID])
	}
	h.got = append(h.got, msg)
	return nil
}

// Delivered lists the messages delivered, in order.
func (h *Hooks) Delivered() []notify.Webhook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notify.Webhook(nil), h.got...)
}

// Attempts is how many attempts the message id had.
func (h *Hooks) Attempts(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts[id]
}

// Types lists the messages' event types.
func Types(ws []notify.Webhook) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Type)
	}
	return out
}

// ErrGone is the final refusal Answers gives when Gone is set.
var ErrGone = errors.New("TaskTimedOut: the token timed out")

// Answers records a waiter's answers as "success|failure|heartbeat token …".
type Answers struct {
	mu    sync.Mutex
	calls []string
	// Gone makes every call answer ErrGone, a final refusal.
	Gone bool
}

func (a *Answers) record(s string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, s)
	if a.Gone {
		return ErrGone
	}
	return nil
}

// Succeed implements notify.Answerer.
func (a *Answers) Succeed(_ context.Context, token string, res *agent.RequestResult) error {
	return a.record("success " + token + " " + string(res.Status))
}

// Fail implements notify.Answerer.
func (a *Answers) Fail(_ context.Context, token string, res *agent.RequestResult) error {
	return a.record("failure " + token + " Hitch." + res.Error.Code)
}

// Heartbeat implements notify.Answerer.
func (a *Answers) Heartbeat(_ context.Context, token string) error {
	return a.record("heartbeat " + token)
}

// Final implements notify.Answerer.
func (a *Answers) Final(err error) bool { return errors.Is(err, ErrGone) }

// Calls lists the calls so far.
func (a *Answers) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}
