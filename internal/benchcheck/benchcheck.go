// Package benchcheck checks the output of `go test -bench` against the
// budgets the benchmarks state (docs/guide/budgets.md, "Budgets"): `make bench` fails
// when a budget is passed, or when a budgeted benchmark reported nothing.
package benchcheck

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Budget bounds one metric of the benchmarks whose name starts with Bench:
// at most Max, or at least Min when Min is set.
type Budget struct {
	Bench string // a benchmark's name, or the prefix of its sub-benchmarks ("BenchmarkX/")
	Unit  string // the metric's unit, as b.ReportMetric names it
	Max   float64
	Min   float64
	Why   string // what the budget says, for the report
}

// Budgets are the README's budgets that benchmarks measure.
var Budgets = []Budget{
	{Bench: "BenchmarkLongHistoryMemory", Unit: "turn-peak-heap-MB", Max: 64, Why: "peak memory of a turn over 1,000 history items ≤ 64 MB"},
	{Bench: "BenchmarkDeltaToSSE", Unit: "p99-µs", Max: 5000, Why: "model delta → SSE event on the wire p99 ≤ 5 ms"},
	{Bench: "BenchmarkDynamoTurns/", Unit: "service-%-of-ddb", Max: 30, Why: "service time beyond the DynamoDB calls ≤ 30 %"},
	{Bench: "BenchmarkColdStart/", Unit: "p50-ms", Max: 50, Why: "a function's binary start → ready ≤ 50 ms"},
	{Bench: "BenchmarkColdStart/", Unit: "bytes", Max: 30 << 20, Why: "a function's binary ≤ 30 MB"},
	{Bench: "BenchmarkPromptCache", Unit: "%-full-price-input-saved", Min: 70, Why: "prompt caching: at least 70 % fewer input tokens billed at the full price"},
	{Bench: "BenchmarkArtifact10MB", Unit: "peak-heap-MB", Max: 4, Why: "a 10 MB artifact saved and downloaded streamed: ≤ 4 MB of heap"},
}

// Result is one metric of one benchmark.
type Result struct {
	Bench string
	Unit  string
	Value float64
}

// benchLine is a result line: the name (with its -GOMAXPROCS suffix), the
// iterations, then value–unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// Parse reads the results of `go test -bench` output; other lines are
// skipped.
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchcheck: %s: %q is not a number", m[1], f[i])
			}
			out = append(out, Result{Bench: m[1], Unit: f[i+1], Value: v})
		}
	}
	return out, sc.Err()
}

// Check returns what passes its budget, and each budget no result measured.
func Check(results []Result, budgets []Budget) []string {
	var bad []string
	for _, b := range budgets {
		seen := false
		for _, r := range results {
			if r.Unit != b.Unit || !matches(b.Bench, r.Bench) {
				continue
			}
			seen = true
			switch {
			case b.Max != 0 && r.Value > b.Max:
				bad = append(bad, fmt.Sprintf("%s: %s %g, over the budget %g (%s)", r.Bench, r.Unit, r.Value, b.Max, b.Why))
			case b.Min != 0 && r.Value < b.Min:
				bad = append(bad, fmt.Sprintf("%s: %s %g, under the budget %g (%s)", r.Bench, r.Unit, r.Value, b.Min, b.Why))
			}
		}
		if !seen {
			bad = append(bad, fmt.Sprintf("%s: no %s reported (%s)", b.Bench, b.Unit, b.Why))
		}
	}
	return bad
}

func matches(pattern, name string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(name, pattern)
	}
	return name == pattern
}
