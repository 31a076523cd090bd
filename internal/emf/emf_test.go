package emf_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/emf"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// units CloudWatch accepts in EMF.
var units = map[string]bool{"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true,
	"Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true,
	"Terabits": true, "Percent": true, "Count": true, "Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true,
	"Gigabytes/Second": true, "Terabytes/Second": true, "Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
	"Gigabits/Second": true, "Terabits/Second": true, "Count/Second": true, "None": true}

// sample is one metric value of a line with its dimensions.
type sample struct {
	Name string
	Dims string // k=v,k=v in the directive's order
	Unit string
	V    float64
}

// parse checks every line against the EMF specification
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html)
// and returns its metric values.
func parse(tb testing.TB, out []byte) []sample {
	tb.Helper()
	var all []sample
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Bytes()
		var root map[string]any
		if err := json.Unmarshal(line, &root); err != nil {
			tb.Fatalf("not a JSON object: %v\n%s", err, line)
		}
		aws, ok := root["_aws"].(map[string]any)
		if !ok {
			tb.Fatalf("no _aws object: %s", line)
		}
		ts, ok := aws["Timestamp"].(float64)
		if !ok || ts <= 0 || ts != float64(int64(ts)) {
			tb.Fatalf("_aws.Timestamp must be a positive integer of milliseconds: %s", line)
		}
		dirs, ok := aws["CloudWatchMetrics"].([]any)
		if !ok || len(dirs) == 0 {
			tb.Fatalf("_aws.CloudWatchMetrics must be a non-empty array: %s", line)
		}
		for _, d := range dirs {
			dir := d.(map[string]any)
			if ns, ok := dir["Namespace"].(string); !ok || ns == "" || len(ns) > 255 {
				tb.Fatalf("bad Namespace: %s", line)
			}
			sets, ok := dir["Dimensions"].([]any)
			if !ok {
				tb.Fatalf("Dimensions must be an array of dimension sets: %s", line)
			}
			for _, s := range sets {
				set, ok := s.([]any)
				if !ok || len(set) > 30 {
					tb.Fatalf("a dimension set must be an array of at most 30 names: %s", line)
				}
				dims := ""
				var names []string
				for _, n := range set {
					name, _ := n.(string)
					v, ok := root[name].(string)
					if !ok {
						tb.Fatalf("dimension %q has no string member: %s", name, line)
					}
					if dims != "" {
						dims += ","
					}
					dims += name + "=" + v
					names = append(names, name)
				}
				ms, ok := dir["Metrics"].([]any)
				if !ok || len(ms) == 0 || len(ms) > 100 {
					tb.Fatalf("Metrics must hold 1 to 100 definitions: %s", line)
				}
				for _, m := range ms {
					def := m.(map[string]any)
					name, _ := def["Name"].(string)
					unit, _ := def["Unit"].(string)
					if name == "" || !units[unit] {
						tb.Fatalf("metric definition %v: name or unit invalid: %s", def, line)
					}
					v, ok := root[name].(float64)
					if !ok {
						tb.Fatalf("metric %q has no number member: %s", name, line)
					}
					if !slices.Equal(emf.Dimensions[name], names) {
						tb.Errorf("metric %s under dimensions %v; emf.Dimensions says %v", name, names, emf.Dimensions[name])
					}
					all = append(all, sample{Name: name, Dims: dims, Unit: unit, V: v})
				}
			}
		}
	}
	return all
}

// sum adds the values of a metric under a dimension set.
func sum(ss []sample, name, dims string) float64 {
	var t float64
	for _, s := range ss {
		if s.Name == name && s.Dims == dims {
			t += s.V
		}
	}
	return t
}

func TestNamesHaveDimensions(t *testing.T) {
	for _, n := range emf.Names {
		if len(emf.Dimensions[n]) == 0 {
			t.Errorf("metric %s has no dimensions in emf.Dimensions", n)
		}
	}
	if len(emf.Dimensions) != len(emf.Names) {
		t.Errorf("emf.Dimensions has %d metrics, emf.Names %d", len(emf.Dimensions), len(emf.Names))
	}
}

func TestLinesOfATurn(t *testing.T) {
	var out bytes.Buffer
	env := enginetest.New(t, memstore.New())
	env.E.Metrics = emf.New(&out, "", "hitch-invoke")
	res, _ := env.Pause(t)
	env.Advance(10 * time.Minute)
	env.Model.Add(agenttest.Say("done", "."))
	res, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionApprove})
	if err != nil || res.Status != agent.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	ss := parse(t, out.Bytes())
	const base = "agent=acc,function=hitch-invoke"
	got := map[string]float64{}
	for _, k := range []struct{ name, dims string }{
		{emf.Requests, base + ",status=Paused"},
		{emf.Requests, base + ",status=Completed"},
		{emf.Approvals, base + ",action=approve"},
		{emf.PauseToDecision, base},
		{emf.ToolCalls, base + ",tool=safe"},
		{emf.ToolCalls, base + ",tool=guarded"},
		{emf.ToolErrors, base + ",tool=guarded"},
		{emf.ModelCalls, base},
		{emf.ModelInputTokens, base},
		{emf.ModelOutputTokens, base},
	} {
		got[k.name+"{"+k.dims+"}"] = sum(ss, k.name, k.dims)
	}
	want := map[string]float64{
		"Requests{" + base + ",status=Paused}":    1,
		"Requests{" + base + ",status=Completed}": 1,
		"Approvals{" + base + ",action=approve}":  1,
		"PauseToDecision{" + base + "}":           600000, // 10 minutes of the engine's clock, in ms
		"ToolCalls{" + base + ",tool=safe}":       1,
		"ToolCalls{" + base + ",tool=guarded}":    1,
		"ToolErrors{" + base + ",tool=guarded}":   0,
		"ModelCalls{" + base + "}":                2,
		"ModelInputTokens{" + base + "}":          15, // 5 for the tool turn, 10 for the answer
		"ModelOutputTokens{" + base + "}":         3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	// Each leg's first output is timed once.
	if n := len(slices.DeleteFunc(slices.Clone(ss), func(s sample) bool { return s.Name != emf.TimeToFirstEvent })); n != 2 {
		t.Errorf("TimeToFirstEvent: %d values, want one per leg (2)", n)
	}
}

// A model call's cache reads and writes are metrics of their own beside the
// full-price input tokens.
func TestModelCacheTokens(t *testing.T) {
	var out bytes.Buffer
	w := emf.New(&out, "", "fn")
	w.ModelCalled("a", agent.Usage{InputTokens: 4, OutputTokens: 9, CacheReadInputTokens: 1500, CacheWriteInputTokens: 120}, false, time.Millisecond)
	ss := parse(t, out.Bytes())
	got := map[string]float64{}
	for _, n := range []string{emf.ModelInputTokens, emf.ModelOutputTokens, emf.ModelCacheReadTokens, emf.ModelCacheWriteTokens} {
		got[n] = sum(ss, n, "agent=a,function=fn")
	}
	want := map[string]float64{emf.ModelInputTokens: 4, emf.ModelOutputTokens: 9, emf.ModelCacheReadTokens: 1500, emf.ModelCacheWriteTokens: 120}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

func TestExpiry(t *testing.T) {
	var out bytes.Buffer
	env := enginetest.New(t, memstore.New())
	env.E.Metrics = emf.New(&out, "Custom", "fn")
	res, _ := env.Pause(t)
	env.Advance(2 * time.Hour)
	if _, _, err := env.Resume(res, "alice", agent.ResumeRequest{Action: agent.ActionApprove}); enginetest.Code(err) != agent.CodeApprovalExpired {
		t.Fatalf("resume after expiry: %v", err)
	}
	ss := parse(t, out.Bytes())
	if got := sum(ss, emf.Expiries, "agent=acc,function=fn"); got != 1 {
		t.Errorf("Expiries = %v, want 1 (the guarded call)", got)
	}
	if got := sum(ss, emf.Requests, "agent=acc,function=fn,status=Failed"); got != 1 {
		t.Errorf("Requests{Failed} = %v, want 1", got)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"Namespace":"Custom"`)) {
		t.Errorf("namespace not used:\n%s", out.Bytes())
	}
}

func TestToolAndModelErrors(t *testing.T) {
	var out bytes.Buffer
	env := enginetest.New(t, memstore.New())
	env.E.Metrics = emf.New(&out, "", "fn")
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("u1", "nosuch", "x")),
		agenttest.FailWith(fmt.Errorf("boom")))
	res, _ := env.Invoke(t, "", "go")
	if res.Status != agent.StatusFailed {
		t.Fatalf("want Failed, got %+v", res)
	}
	ss := parse(t, out.Bytes())
	for _, c := range []struct {
		name, dims string
		want       float64
	}{
		{emf.ToolErrors, "agent=acc,function=fn,tool=" + agent.UnknownTool, 1},
		{emf.ModelErrors, "agent=acc,function=fn", 1},
		{emf.ModelCalls, "agent=acc,function=fn", 2},
		{emf.Requests, "agent=acc,function=fn,status=Failed", 1},
	} {
		if got := sum(ss, c.name, c.dims); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.dims, got, c.want)
		}
	}
}

// Names that need escaping still make valid lines; the notifier's hook
// counts deliveries and failures.
func TestEscapingAndDeliveries(t *testing.T) {
	var out bytes.Buffer
	w := emf.New(&out, "", "fn\"\n\\")
	w.Delivered("a\u00e9\x01\"", "webhook", false, 20*time.Millisecond)
	w.Delivered("a\u00e9\x01\"", "webhook", true, 5*time.Millisecond)
	w.StoreConflict("a")
	w.StoreRetry("a")
	ss := parse(t, out.Bytes())
	dims := "agent=a\u00e9\x01\",function=fn\"\n\\,kind=webhook"
	want := []sample{
		{emf.NotifierDeliveries, dims, "Count", 1}, {emf.NotifierFailures, dims, "Count", 0}, {emf.NotifierDuration, dims, "Milliseconds", 20},
		{emf.NotifierDeliveries, dims, "Count", 1}, {emf.NotifierFailures, dims, "Count", 1}, {emf.NotifierDuration, dims, "Milliseconds", 5},
		{emf.StoreConflicts, "agent=a,function=fn\"\n\\", "Count", 1},
		{emf.StoreRetries, "agent=a,function=fn\"\n\\", "Count", 1},
	}
	if diff := cmp.Diff(want, ss); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}
