package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics as Prometheus does and returns the value of each
// series, keyed name{label=value,…} (labels sorted by name, as exposed); a
// histogram's key ends in "count" and holds its number of observations.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key+"count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// After a turn with a tool call and an approved pause, /metrics counts them.
func TestMetricsEndpoint(t *testing.T) {
	base, _, _ := startServe(t)
	if code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"/call get_time {\"zone\": \"Europe/Paris\"}"}]}`); code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"/call get_time {\"zone\": \"Mars/Olympus\"}"}]}`); code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice", `{"items":[{"content":"/call delete_file {\"path\": \"nothing.log\"}"}]}`)
	paused := decode(t, body)
	if code != 200 || paused["status"] != "Paused" {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+paused["resume_url"].(string), "alice", `{"action":"reject","reason":"no"}`); code != 200 {
		t.Fatalf("reject: %d %s", code, body)
	}
	got := scrape(t, base)
	want := map[string]float64{
		`hitch_requests_total{agent=assistant,status=Completed}`:   3,
		`hitch_requests_total{agent=assistant,status=Paused}`:      1,
		`hitch_tool_calls_total{agent=assistant,tool=get_time}`:    2,
		`hitch_tool_errors_total{agent=assistant,tool=get_time}`:   1,
		`hitch_tool_calls_total{agent=assistant,tool=delete_file}`: 0,
		`hitch_approvals_total{action=reject,agent=assistant}`:     1,
		`hitch_model_calls_total{agent=assistant}`:                 6,
		`hitch_pause_to_decision_seconds{agent=assistant}count`:    1,
		`hitch_time_to_first_event_seconds{agent=assistant}count`:  4,
		`hitch_store_conflicts_total{agent=assistant}`:             0,
	}
	sub := map[string]float64{}
	for k := range want {
		sub[k] = got[k]
	}
	if got[`hitch_model_tokens_total{agent=assistant,direction=input}`] <= 0 {
		t.Errorf("no input tokens counted: %v", got)
	}
	if diff := cmp.Diff(want, sub); diff != "" {
		t.Errorf("/metrics (-want +got):\n%s", diff)
	}
}

// A sub-agent call is counted as the tool it is, once it has its result
// (not while it waits on an approval below it).
func TestMetricsAgentTool(t *testing.T) {
	base, _, _ := startServe(t)
	code, body := call(t, "POST", base+"/agents/desk/invoke", "alice", `{"items":[{"content":"/call assistant {\"message\": \"/call get_time {}\"}"}]}`)
	if code != 200 || decode(t, body)["status"] != "Completed" {
		t.Fatalf("desk: %d %s", code, body)
	}
	code, body = call(t, "POST", base+"/agents/desk/invoke", "alice", `{"items":[{"content":"/call assistant {\"message\": \"/call delete_file {\\\"path\\\": \\\"x\\\"}\"}"}]}`)
	if code != 200 || decode(t, body)["status"] != "Paused" {
		t.Fatalf("desk: %d %s", code, body)
	}
	got := scrape(t, base)
	if n := got[`hitch_tool_calls_total{agent=desk,tool=assistant}`]; n != 1 {
		t.Errorf("desk's calls of assistant counted %v, want 1 (the paused one not yet)", n)
	}
	if n := got[`hitch_tool_calls_total{agent=assistant,tool=get_time}`]; n != 1 {
		t.Errorf("assistant's get_time counted %v, want 1", n)
	}
}
