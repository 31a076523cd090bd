// Package perf measures Hitch against the budgets of docs/guide/budgets.md, "Budgets": DynamoDB
// calls per turn (a test, exact), and with benchmarks (make bench, never
// timed assertions) the latency of a turn, the service time beyond the
// DynamoDB calls, model delta → SSE event latency, memory over a long
// history, and many concurrent streams.
package perf
