// Package chaos is a black-box crash test of hitch serve on DynamoDB Local
// (`make chaos`; a short run is part of `make test`).
//
// The server runs as a process of its own, its DynamoDB calls through a
// relay (a small HTTP proxy in front of DynamoDB Local). Each round pauses a
// batch of requests on a call that needs approval (append_file, which is not
// idempotent: each run appends one line), approves them all at once, and has
// the relay SIGKILL the server when it sees the k-th DynamoDB call — before
// forwarding it (the call did not land) or after its answer (it landed,
// unanswered). The server is restarted and every approval sent again with
// the same decision. The report counts, per approved call, how many times it
// ran (never more than once), the requests lost (their retry did not answer
// Completed) and the tasks left stuck (not Completed), and times each
// retried approval from the restart to its outcome.
//
// The relay (Relay) and the process harness (Process, BuildHitch) are
// exported: the torture test (internal/torture) drives its two processes
// with them.
package chaos
