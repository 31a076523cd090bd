package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// BenchmarkCommitToWebhook: the time from a request's commit (its
// completion, on DynamoDB Local) to its signed webhook verified by a
// receiver, through what `hitch serve` runs: the table's stream read with
// the dynamodbstreams client (its default 200 ms poll), the dispatcher and
// the Standard Webhooks sender. Reports p50 and p99 in ms (ns/op includes a
// random 0–200 ms pause before each request).
func BenchmarkCommitToWebhook(b *testing.B) {
	store, feed := streamed(b, 0) // hitch serve's poll
	key := []byte("bench-webhook-key")
	var mu sync.Mutex
	received := map[string]time.Time{} // request id → when its webhook verified
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(key, r.Header, body, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p struct {
			Data struct {
				RequestID string `json:"request_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		received[p.Data.RequestID] = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(recv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	env := enginetest.New(b, store)
	ag, _ := env.E.Agents.Get("acc")
	ag.Notifications = []agent.Notification{{URL: recv.URL, Events: []string{agent.EventRequestCompleted}, Secret: key}}
	d := &notify.Dispatcher{Engine: env.E, Webhooks: &webhook.Sender{Client: recv.Client()}, Log: slog.New(slog.DiscardHandler)}
	r := &notify.Runner{D: d, Feed: feed, SweepEvery: time.Hour}
	go r.Run(ctx)

	// one request's latency, or false when no webhook came within wait
	one := func(wait time.Duration) (time.Duration, bool) {
		// Requests end at any moment of the stream's poll, not just after
		// the last delivery.
		time.Sleep(rand.N(200 * time.Millisecond))
		env.Model.Add(agenttest.Say("done"))
		res, _ := env.Invoke(b, "", "hi")
		committed := time.Now() // the answer follows the commit
		for deadline := committed.Add(wait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			at, ok := received[res.RequestID]
			mu.Unlock()
			if ok {
				return max(at.Sub(committed), 0), true
			}
		}
		return 0, false
	}
	// The stream reads from its shards' latest records once it has their
	// iterators (no sweep here): warm up until a webhook comes.
	for start := time.Now(); ; {
		if _, ok := one(2 * time.Second); ok {
			break
		}
		if time.Since(start) > time.Minute {
			b.Fatal("no webhook after a minute of warm-up requests")
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		d, ok := one(30 * time.Second)
		if !ok {
			b.Fatal("a webhook did not come in 30 s")
		}
		lat = append(lat, d)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}
