// Command benchcheck reads `go test -bench` output on stdin and fails when
// a benchmark passes its budget (internal/benchcheck; `make bench`).
package main

import (
	"fmt"
	"os"

	"github.com/hitch-agents/hitch/internal/benchcheck"
)

func main() {
	rs, err := benchcheck.Parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bad := benchcheck.Check(rs, benchcheck.Budgets)
	for _, b := range bad {
		fmt.Fprintln(os.Stderr, "budget:", b)
	}
	if len(bad) > 0 {
		os.Exit(1)
	}
	fmt.Printf("benchcheck: %d results, every budget of %d kept\n", len(rs), len(benchcheck.Budgets))
}
