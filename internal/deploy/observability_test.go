package deploy_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/deploy"
	"github.com/hitch-agents/hitch/internal/emf"
)

// Every function has an alarm on its errors and one on its throttles; an
// alarm on Hitch's own namespace names a metric the code emits.
func TestAlarms(t *testing.T) {
	res := resources(t, loadTemplate(t))
	have := map[string]bool{}
	for id, r := range res {
		if get(r, "Type") != "AWS::CloudWatch::Alarm" {
			continue
		}
		props, _ := get(r, "Properties").(map[string]any)
		metric, _ := props["MetricName"].(string)
		switch ns := props["Namespace"]; {
		case ns == "AWS/Lambda":
			dims := asList(props["Dimensions"])
			if len(dims) != 1 || get(dims[0], "Name") != "FunctionName" {
				t.Errorf("alarm %s: dimensions %v, want FunctionName", id, dims)
				continue
			}
			fn, _ := get(dims[0], "Value", "Ref").(string)
			have[fn+"/"+metric] = true
		case cmp.Equal(ns, map[string]any{"Ref": "MetricsNamespace"}):
			if !slices.Contains(emf.Names, metric) {
				t.Errorf("alarm %s watches %s, a metric the code never emits (internal/emf)", id, metric)
			}
		}
	}
	for _, fn := range deploy.LogicalIDs {
		for _, m := range []string{"Errors", "Throttles"} {
			if !have[fn+"/"+m] {
				t.Errorf("no alarm on %s's %s", fn, m)
			}
		}
	}
}

// A metric the dashboard shows: its namespace, dimension set and name.
type shown struct {
	Namespace string
	Dims      []string
	Name      string
}

var (
	searchRe = regexp.MustCompile(`SEARCH\('\{([^}]*)\}\s*MetricName="([^"]+)"`)
	subRe    = regexp.MustCompile(`\$\{([A-Za-z0-9:]+)\}`)
)

// dashboardMetrics reads the dashboard's body (the ${...} of its !Sub left as
// the names they stand for) and lists the metrics of its widgets.
func dashboardMetrics(tb testing.TB) []shown {
	tb.Helper()
	res := resources(tb, loadTemplate(tb))
	d, ok := res["Dashboard"]
	if !ok || get(d, "Type") != "AWS::CloudWatch::Dashboard" {
		tb.Fatal("template.yaml has no Dashboard (AWS::CloudWatch::Dashboard)")
	}
	body, ok := get(d, "Properties", "DashboardBody", "Fn::Sub").(string)
	if !ok {
		tb.Fatalf("DashboardBody is not a !Sub string: %v", get(d, "Properties", "DashboardBody"))
	}
	var doc struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(subRe.ReplaceAllString(body, "$1")), &doc); err != nil {
		tb.Fatalf("DashboardBody is not JSON: %v", err)
	}
	var out []shown
	for _, w := range doc.Widgets {
		for _, m := range w.Properties.Metrics {
			for _, part := range m {
				switch p := part.(type) {
				case map[string]any:
					expr, _ := p["expression"].(string)
					for _, sm := range searchRe.FindAllStringSubmatch(expr, -1) {
						schema := strings.Split(sm[1], ",")
						out = append(out, shown{Namespace: schema[0], Dims: schema[1:], Name: sm[2]})
					}
				}
			}
			// The plain form: [namespace, name, dim, value, ...].
			if len(m) >= 2 {
				ns, ok1 := m[0].(string)
				name, ok2 := m[1].(string)
				if ok1 && ok2 && ns != "..." {
					var dims []string
					for i := 2; i+1 < len(m); i += 2 {
						if k, ok := m[i].(string); ok {
							dims = append(dims, k)
						}
					}
					out = append(out, shown{Namespace: ns, Dims: dims, Name: name})
				}
			}
		}
	}
	return out
}

// The dashboard shows what the issue asks for, and every metric of Hitch's
// namespace it shows is one the code emits, under the dimensions it emits.
func TestDashboard(t *testing.T) {
	ms := dashboardMetrics(t)
	var names []string
	for _, m := range ms {
		if m.Namespace != "MetricsNamespace" {
			continue
		}
		names = append(names, m.Name)
		if !slices.Contains(emf.Names, m.Name) {
			t.Errorf("the dashboard shows %s, a metric the code never emits (internal/emf)", m.Name)
			continue
		}
		if !slices.Equal(m.Dims, emf.Dimensions[m.Name]) {
			t.Errorf("the dashboard searches %s under %v; the code emits it under %v", m.Name, m.Dims, emf.Dimensions[m.Name])
		}
	}
	for _, want := range []string{emf.Requests, emf.PauseToDecision, emf.ModelInputTokens, emf.ModelOutputTokens,
		emf.ModelCacheReadTokens, emf.ModelCacheWriteTokens, emf.ToolErrors} {
		if !slices.Contains(names, want) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// The functions get the namespace the dashboard reads.
func TestMetricsNamespace(t *testing.T) {
	tpl := loadTemplate(t)
	got := get(tpl, "Globals", "Function", "Environment", "Variables", "HITCH_METRICS_NAMESPACE")
	if !cmp.Equal(got, map[string]any{"Ref": "MetricsNamespace"}) {
		t.Errorf("HITCH_METRICS_NAMESPACE = %v, want !Ref MetricsNamespace", got)
	}
	if d := get(tpl, "Parameters", "MetricsNamespace", "Default"); d != emf.DefaultNamespace {
		t.Errorf("MetricsNamespace defaults to %v, want %s", d, emf.DefaultNamespace)
	}
}
