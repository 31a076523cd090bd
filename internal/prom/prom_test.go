package prom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/prom"
)

// The moments the engine does not reach in hitch serve's own tests.
func TestCounters(t *testing.T) {
	m := prom.New()
	m.Expired("a", 2)
	m.StoreConflict("a")
	m.StoreRetry("a")
	m.StoreRetry("a")
	m.Delivered("a", "webhook", false, time.Millisecond)
	m.Delivered("a", "webhook", true, time.Millisecond)
	m.ModelCalled("a", agent.Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 1500, CacheWriteInputTokens: 40}, true, time.Millisecond)
	m.Decided("a", []string{agent.ActionApprove, agent.ActionEdit, agent.ActionApprove}, time.Minute)
	m.RequestEnded("a", agent.StatusFailed, 0)
	reg := m.Registry()
	got := map[string]float64{}
	for name, want := range map[string]string{
		"expiries":   "hitch_expiries_total",
		"conflicts":  "hitch_store_conflicts_total",
		"retries":    "hitch_store_retries_total",
		"deliveries": "hitch_notifier_deliveries_total",
		"failures":   "hitch_notifier_failures_total",
		"model_errs": "hitch_model_errors_total",
		"tokens":     "hitch_model_tokens_total",
		"approvals":  "hitch_approvals_total",
		"requests":   "hitch_requests_total",
	} {
		n, err := testutil.GatherAndCount(reg, want)
		if err != nil {
			t.Fatal(err)
		}
		got[name+"#series"] = float64(n)
	}
	want := map[string]float64{
		"expiries#series": 1, "conflicts#series": 1, "retries#series": 1, "deliveries#series": 1, "failures#series": 1,
		"model_errs#series": 1, "tokens#series": 4, "approvals#series": 2, "requests#series": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	const exp = `
# HELP hitch_store_retries_total Writes tried again.
# TYPE hitch_store_retries_total counter
hitch_store_retries_total{agent="a"} 2
# HELP hitch_approvals_total Decided calls, by action.
# TYPE hitch_approvals_total counter
hitch_approvals_total{action="approve",agent="a"} 2
hitch_approvals_total{action="edit",agent="a"} 1
# HELP hitch_expiries_total Calls whose approval expired.
# TYPE hitch_expiries_total counter
hitch_expiries_total{agent="a"} 2
# HELP hitch_notifier_failures_total Notifications that failed, by kind.
# TYPE hitch_notifier_failures_total counter
hitch_notifier_failures_total{agent="a",kind="webhook"} 1
# HELP hitch_model_tokens_total Model tokens, by direction: input (billed at the full price), cache_read, cache_write (input read from and written to the prompt cache), output.
# TYPE hitch_model_tokens_total counter
hitch_model_tokens_total{agent="a",direction="cache_read"} 1500
hitch_model_tokens_total{agent="a",direction="cache_write"} 40
hitch_model_tokens_total{agent="a",direction="input"} 7
hitch_model_tokens_total{agent="a",direction="output"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "hitch_store_retries_total", "hitch_approvals_total",
		"hitch_expiries_total", "hitch_notifier_failures_total", "hitch_model_tokens_total"); err != nil {
		t.Error(err)
	}
}
