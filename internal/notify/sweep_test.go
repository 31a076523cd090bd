package notify_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

// TestSweepPassesWhatItCannotDeliver: 1,100 outbox items that cannot go
// now (their agent is not loaded here: each waits in its queue) stand
// ahead of a pause's webhook item in the outbox, older, and nothing feeds
// the dispatcher: the sweep alone finds the item, however many come
// before it, and delivers it.
func TestSweepPassesWhatItCannotDeliver(t *testing.T) {
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			store, _ := mk(t)
			env := enginetest.New(t, store)
			res, _ := env.Pause(t)
			standing(t, env.Store, 1100)
			hooks := &notifytest.Hooks{}
			d := &notify.Dispatcher{Engine: env.E, Webhooks: hooks, Log: slog.New(slog.DiscardHandler)}
			r := &notify.Runner{D: d, SweepEvery: 50 * time.Millisecond, SweepAge: time.Millisecond,
				Backoff: func(int) time.Duration { return time.Hour }}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			wait(t, "the pause's webhook", func() bool {
				for _, w := range hooks.Delivered() {
					if w.Type == agent.EventRequestPaused {
						return true
					}
				}
				return false
			})
			wait(t, "the delivered item deleted", func() bool {
				left, err := env.Store.ListRequestOutbox(context.Background(), res.TaskID, res.RequestID)
				return err == nil && len(left) == 0
			})
		})
	}
}

// standing puts n webhook items of one request of an agent this process
// has not loaded, created a month ago, under a task written straight
// through the store.
func standing(t *testing.T, store agent.Store, n int) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().Add(-30 * 24 * time.Hour)
	tk := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "gone", UserID: "alice", Status: agent.StatusCompleted,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 1, WriteID: uuid.NewString()}
	if err := store.Write(ctx, &agent.Write{Task: tk, Session: &agent.SessionLink{SessionID: tk.SessionID, UserID: "alice", TaskID: tk.ID,
		Agent: "gone", CreatedAt: at}}); err != nil {
		t.Fatal(err)
	}
	rid := uuid.NewString()
	for i := 0; i < n; {
		next := tk.Clone()
		next.Version++
		next.WriteID = uuid.NewString()
		w := &agent.Write{Task: next, PrevVersion: tk.Version}
		for ; i < n && len(w.Outbox) < 90; i++ {
			w.Outbox = append(w.Outbox, agent.OutboxItem{TaskID: tk.ID, RequestID: rid, Epoch: 1, EventID: int64(i + 1), Recipient: agent.WebhookRecipient(0),
				Kind: agent.OutboxWebhook, Event: agent.EventRequestCompleted, Agent: "gone", UserID: "alice", CreatedAt: at.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := store.Write(ctx, w); err != nil {
			t.Fatal(err)
		}
		tk = next
	}
}
