package perf_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// TestCallsPerDelivery: what one webhook delivery costs the dispatcher (the
// notifier, or hitch serve's), off every turn's path. Before it sends, one
// strongly consistent Query of the request's outbox tells that the item is
// still there and that no earlier one for its webhook is (the order per
// request and recipient; it replaced a GetItem of the item alone, so the
// calls are as many as before); the result is resolved from META and the
// request's record; then the item is deleted.
func TestCallsPerDelivery(t *testing.T) {
	env, c := dynamoEnv(t)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	ag, _ := env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: recv.URL, Events: agent.NotificationEvents, Secret: []byte("0123456789abcdef")}}
	env.Model.Add(agenttest.Say("hello"))
	res, _ := env.Invoke(t, "", "hi")
	ctx := context.Background()
	items, err := env.Store.ListRequestOutbox(ctx, res.TaskID, res.RequestID)
	if err != nil || len(items) != 1 {
		t.Fatalf("the outbox: %+v %v", items, err)
	}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: &webhook.Sender{}, Log: slog.New(slog.DiscardHandler)}
	c.Reset()
	if err := d.Deliver(ctx, items[0]); err != nil {
		t.Fatal(err)
	}
	calls, _ := c.Calls()
	if diff := cmp.Diff(map[string]int{"Query": 2, "GetItem": 1, "DeleteItem": 1}, calls); diff != "" {
		t.Errorf("calls of a delivery (-want +got):\n%s", diff)
	}
}
