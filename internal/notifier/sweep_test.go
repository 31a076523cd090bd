package notifier_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
)

// TestSweepReachesPastFiveHundred: 600 older outbox items that cannot go
// (their agent is not loaded here: each is re-queued) stand ahead of a
// pause's webhook item whose stream record was lost; the schedule's
// re-drive reaches it all the same, however many come before it.
func TestSweepReachesPastFiveHundred(t *testing.T) {
	f := newFixture(t, 0)
	f.h.SweepAge = time.Nanosecond
	_, item := f.pause(t)
	ctx := context.Background()
	at := time.Now().Add(-30 * 24 * time.Hour)
	tk := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "gone", UserID: "alice", Status: agent.StatusCompleted,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 1, WriteID: uuid.NewString()}
	if err := f.store.Write(ctx, &agent.Write{Task: tk, Session: &agent.SessionLink{SessionID: tk.SessionID, UserID: "alice", TaskID: tk.ID,
		Agent: "gone", CreatedAt: at}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; {
		next := tk.Clone()
		next.Version++
		next.WriteID = uuid.NewString()
		w := &agent.Write{Task: next, PrevVersion: tk.Version}
		for ; i < 600 && len(w.Outbox) < 90; i++ {
			w.Outbox = append(w.Outbox, agent.OutboxItem{TaskID: tk.ID, RequestID: uuid.NewString(), Epoch: 1, EventID: 1, Recipient: agent.WebhookRecipient(0),
				Kind: agent.OutboxWebhook, Event: agent.EventRequestCompleted, Agent: "gone", UserID: "alice", CreatedAt: at.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := f.store.Write(ctx, w); err != nil {
			t.Fatal(err)
		}
		tk = next
	}
	time.Sleep(10 * time.Millisecond)
	f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-11-26T07:35:00Z"})
	if got := f.hooks.Delivered(); len(got) != 1 || got[0].ID != item.DeliveryID() {
		t.Errorf("the re-drive delivered %+v, want the pause's item", got)
	}
}
