package notify_test

import (
	"context"
	"testing"
	"time"

	streamedtable "github.com/hitch-agents/hitch/internal/ddblocal/streamed"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notify/notifytest"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// TestStreamOnDynamoDBLocal: on DynamoDB Local, the table's stream (read
// with the real dynamodbstreams client) feeds the dispatcher: a pause and a
// completion are delivered, in order, and their items deleted.
func TestStreamOnDynamoDBLocal(t *testing.T) {
	store, feed := streamed(t, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)         // the stream's iterators are taken before the first write
	s := startOn(t, store, feed, 1, time.Hour) // no sweep after the first: the stream alone delivers
	env := s.env
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "delete")))
	res, _ := env.Invoke(t, "", "do it")
	env.Model.Add(agenttest.Say("done"))
	if out, _, err := env.Resume(res, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("resume: %+v %v", out, err)
	}
	wait(t, "two webhooks", func() bool { return len(s.hooks.Delivered()) == 2 })
	if diff := cmp.Diff([]string{agent.EventRequestPaused, agent.EventRequestCompleted}, notifytest.Types(s.hooks.Delivered())); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
	wait(t, "the outbox to empty", func() bool {
		left, err := store.ListOutbox(context.Background(), time.Now().Add(24*365*time.Hour), 0)
		return err == nil && len(left) == 0
	})
}

// streamed is a table on DynamoDB Local whose stream feeds the dispatcher,
// as hitch serve does.
func streamed(tb testing.TB, poll time.Duration) (*dynamo.Store, <-chan agent.OutboxItem) {
	return streamedtable.Table(tb, poll)
}
