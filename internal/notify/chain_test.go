package notify_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

// TestContinuationAfterARestart: boss → desk → leaf; the leaf is approved
// and commits, and the process dies before any continuation runs (nothing
// delivers the items its commit wrote). A new dispatcher's first sweep
// continues desk, whose end continues boss: the root completes, the call
// ran once, the continuation items are gone, and sweeping again changes
// nothing. In memory and on DynamoDB Local.
func TestContinuationAfterARestart(t *testing.T) {
	for name, store := range map[string]func(*testing.T) agent.Store{
		"memory":   func(*testing.T) agent.Store { return memstore.New() },
		"dynamodb": func(t *testing.T) agent.Store { s, _ := streamed(t, 0); return s },
	} {
		t.Run(name, func(t *testing.T) {
			st := store(t)
			o := enginetest.NewOrch(t, st)
			res, _ := o.Invoke(t, "boss", "", enginetest.CallAgent("desk", enginetest.CallAgent("leaf", enginetest.Append("restart.txt", "x"))))
			if res.Status != agent.StatusPaused {
				t.Fatalf("boss: %+v", res)
			}
			p := res.PendingApprovals[0]
			if out, _, err := o.Resume("leaf", p.TaskID, p.RequestID, enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("resume at the leaf: %+v %v", out, err)
			}
			// The restarted process: no feed from before, a sweep at start.
			d := &notify.Dispatcher{Engine: o.E, Webhooks: &notifytest.Hooks{}, Log: slog.New(slog.DiscardHandler)}
			r := &notify.Runner{D: d, Feed: make(chan agent.OutboxItem), Backoff: func(int) time.Duration { return 20 * time.Millisecond },
				SweepEvery: 100 * time.Millisecond, SweepAge: time.Nanosecond}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			wait(t, "boss to complete", func() bool { return o.View(t, "boss", res.TaskID).Status == agent.StatusCompleted })
			if got := o.Lines("restart.txt"); !slices.Equal(got, []string{"x"}) {
				t.Errorf("restart.txt = %q", got)
			}
			wait(t, "the continuations to be deleted", func() bool {
				left, err := st.ListOutbox(context.Background(), time.Now().Add(time.Hour), 0)
				return err == nil && !slices.ContainsFunc(left, func(o agent.OutboxItem) bool { return o.Kind == agent.OutboxContinue })
			})
			boss := o.View(t, "boss", res.TaskID)
			time.Sleep(300 * time.Millisecond) // more sweeps
			if again := o.View(t, "boss", res.TaskID); again.UpdatedAt != boss.UpdatedAt || len(again.Requests) != 1 {
				t.Errorf("boss changed after its end: %+v", again)
			}
			if got := o.Lines("restart.txt"); len(got) != 1 {
				t.Errorf("restart.txt = %q", got)
			}
		})
	}
}
