package benchcheck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const output = `goos: linux
goarch: amd64
pkg: github.com/hitch-agents/hitch/internal/perf
BenchmarkDeltaToSSE-2             	     200	     61234 ns/op	        51.00 p50-µs	       159.0 p99-µs	    1234 B/op	      12 allocs/op
BenchmarkDynamoTurns/follow-on-2  	     200	   3000000 ns/op	      2900 p50-µs	         7.700 service-%-of-ddb
BenchmarkDynamoTurns/resume-2     	     200	   4000000 ns/op	      3900 p50-µs	        16.00 service-%-of-ddb
BenchmarkLongHistoryMemory-2      	     200	   9000000 ns/op	         2.300 turn-peak-heap-MB
BenchmarkColdStart/invoke-2       	     200	   5000000 ns/op	  24500000 bytes	        22.10 p50-ms	        27.60 max-ms
BenchmarkPromptCache-2            	     200	  14072631 ns/op	       829.6 $-off/1k-tasks	       100.0 %-full-price-input-saved
BenchmarkArtifact10MB-2           	     200	  59245999 ns/op	        20.00 download-ms	         1.445 peak-heap-MB	        28.25 save-ms
PASS
ok  	github.com/hitch-agents/hitch/internal/perf	12.3s
`

func TestParse(t *testing.T) {
	rs, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 24 {
		t.Fatalf("%d results, want 24: %+v", len(rs), rs)
	}
	want := Result{Bench: "BenchmarkDynamoTurns/resume", Unit: "service-%-of-ddb", Value: 16}
	found := false
	for _, r := range rs {
		found = found || r == want
	}
	if !found {
		t.Errorf("no %+v in %+v", want, rs)
	}
}

// Within every budget: nothing to say. Over one, under a minimum, or not
// measured at all: each is named.
func TestCheck(t *testing.T) {
	rs, _ := Parse(strings.NewReader(output))
	if bad := Check(rs, Budgets); len(bad) != 0 {
		t.Errorf("within budget, yet: %v", bad)
	}
	over, _ := Parse(strings.NewReader(strings.Replace(output, "16.00 service-%-of-ddb", "31.5 service-%-of-ddb", 1)))
	bad := Check(over, Budgets)
	if diff := cmp.Diff([]string{"BenchmarkDynamoTurns/resume: service-%-of-ddb 31.5, over the budget 30 (service time beyond the DynamoDB calls ≤ 30 %)"}, bad); diff != "" {
		t.Errorf("over budget (-want +got):\n%s", diff)
	}
	min := []Budget{{Bench: "BenchmarkLongHistoryMemory", Unit: "turn-peak-heap-MB", Min: 3, Why: "at least 3"}}
	if bad := Check(rs, min); len(bad) != 1 || !strings.Contains(bad[0], "under the budget 3") {
		t.Errorf("under a minimum: %v", bad)
	}
	saved, _ := Parse(strings.NewReader(strings.Replace(output, "100.0 %-full-price-input-saved", "29.4 %-full-price-input-saved", 1)))
	if bad := Check(saved, Budgets); len(bad) != 1 || !strings.Contains(bad[0], "BenchmarkPromptCache: %-full-price-input-saved 29.4, under the budget 70") {
		t.Errorf("prompt caching under its budget: %v", bad)
	}
	missing := strings.Replace(output, "BenchmarkLongHistoryMemory", "BenchmarkSomethingElse", 1)
	rs, _ = Parse(strings.NewReader(missing))
	if bad := Check(rs, Budgets); len(bad) != 1 || !strings.Contains(bad[0], "no turn-peak-heap-MB reported") {
		t.Errorf("a budgeted benchmark that reported nothing: %v", bad)
	}
}
