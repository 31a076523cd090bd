// Package torture is the torture test of docs/architecture.md, "The guarantees" (`make torture`): a
// black-box test of two `hitch serve` processes under random workloads and
// faults, judged afterwards by a checker of the seven guarantees.
//
// # What runs
//
// Two processes, A and B, on one DynamoDB Local (a table each), each behind
// the chaos relay (internal/chaos) that can SIGKILL it at the k-th DynamoDB
// call, before the call lands or after. A serves agents whose chains are
// one to three deep — leaf, mid → leaf, top → mid → leaf — and agents that
// call B's over A2A (rmid → B's leaf, rtop → B's mid → B's leaf, xtop →
// rmid → B's leaf); B serves leaf and mid, and workloads of its own.
// A's gmid reaches B's leaf through a relay in the test process that, at
// a random moment, goes away for good (gone.go: a remote gone mid-chain).
//
// The leaves' tools are those of an MCP server run by the test itself
// (Ledger, built with the official Go SDK): effect (not idempotent, needs
// approval), upsert (idempotent, needs approval), peek (needs none), and
// effect again under a short approval_ttl (ex_effect, 2 s) so that rounds
// expire; and ask_user, whose questions (their tag in their text, two
// choices) are answered, never run; and form (fq_form, served statelessly
// so that Hitch speaks protocol 2026-07-28 to it), which asks one to three
// rounds of elicitation (forms and URLs) in one call and records each
// answer as it got it (Answer, elicit.go). Each run of a tool writes a ledger line — its idempotency key
// (<request_id>#<tool_call_id>, from the call's _meta), the request, the
// tool, the process that called, the generator's tag of the call, its
// input and the time — before its side effect, and its result names the
// run ("ran #N;"), so a result in a history can be matched to the run that
// produced it. Every agent has a webhook to a receiver (Receiver) that
// verifies the Standard Webhooks signature and refuses some attempts at
// random, to exercise retries.
//
// A generator, seeded (TORTURE_SEED replays the choices), runs concurrent
// flows: a message to a random chain (with an Idempotency-Key, sent again
// with it after a lost answer; a quarter of the leaves' scripts ask a
// question beside their calls), then approvals, rejections, edits and
// answers (a round holding a question is settled call by call) sent
// at random levels — the leaf, a caller in the middle, the root; some
// twice, some stale (an old round), some racing (identical or conflicting,
// at once) — cancels at random levels, waits past an approval's expiry,
// follow-on messages and edits of earlier messages. Every operation is
// recorded with its start, end, request, status and answer (Op, Recorder):
// Jepsen's history. A nemesis kills a process at the k-th DynamoDB call
// (before or after it lands), stops one past its lease (SIGSTOP for 20 s,
// then SIGCONT or SIGKILL), or restarts one, and records each fault.
//
// Some invokes and decisions at the root go through each process's Lambda
// API (--lambda-addr) with a Step Functions task token or a durable
// callback id; each process answers them to fakes of its own
// (internal/sfnfake, internal/tools/fakelambda) that record every call
// (WaiterCall). Finished roots are deleted, and Paused levels sent deletes
// that must be refused, each read before and after (waiters.go).
//
// Then the faults stop; after a quiet period (the lease, the reaper's
// sweep, the work left) the final state of both processes is read back —
// every task, children included, in full — and Check judges the history.
//
// # The checker
//
// Check takes the operations, the ledger, the final state, the webhook
// deliveries and the faults, and reports each breach of the seven
// invariants with the operations and ledger lines around it:
//
//  1. At most once: a non-idempotent call runs at most once; an idempotent
//     one again only after a fault of its process; a call the generator
//     tagged runs under one call id only (else a message or a sub-agent
//     call was run twice).
//  2. Only what was approved: a run of a call that needs approval follows
//     a recorded decision approving it (not a rejection, not an expiry),
//     a client's approval sent before it, with the input approved (the
//     edited one after an edit); never after a rejection answered 200 or
//     a decision answered 410. A question's answer reaches the model once
//     (one result in the history), as the leaf recorded it and as a client
//     sent it.
//  3. Cancel means cancel: after a cancel answered 200 Canceled, nothing of
//     that request or below it (local children by their parent link,
//     remote ones by their message) starts, and nothing below it is left
//     Paused or Running; a start by a holder frozen past its lease is
//     reported apart.
//  4. The history tells the truth: a result saying "not run", "rejected",
//     or "expired" belongs to a call with no run; a success result is the
//     result of a run of that very call; every run is a call of some
//     history, and a finished request has a result for each of its runs.
//  5. Answers agree: every answer to the same decision (same URL, same
//     body) reports the same outcome (202 / Running and lost answers say
//     nothing); a terminal answer is what GET task shows; a 200 to a
//     decision means that decision is the one recorded (for a question,
//     that answer).
//  6. Nothing hangs: after the quiet period no request is Running; a
//     Paused one has something to decide, or waits on a leaf that is
//     Paused; nothing is Paused or Running below a finished root.
//  7. Nothing is lost: every request an answer named exists; each has one
//     outcome (answers, webhooks, GET task); each end and each pause (each
//     round decided, answered or shown) has its webhook, delivered to the
//     2xx receiver, verified, in commit order per request, a delivery
//     starting only after the previous one was accepted, and delivered
//     again at most once after a 2xx. A task token or callback is answered
//     (success or failure) at most once, as its request ended (or paused,
//     with on_pause return), and at least once when it did; a deleted
//     request is not lost, and its end still owes its webhook and waiters.
//     Deletes (under 5): a 204 leaves a 404 and never removed a task
//     Running or Paused; a 409 changes nothing.
//
// The checker's own tests (check_test.go) feed it small hand-made
// histories, one breach each, and a clean one.
//
// # Determinism
//
// The seed fixes every choice the generator and the nemesis make from what
// they see; what they see depends on real timing (two processes, DynamoDB
// Local, the machine's load), so a replay walks the same choices only as
// far as the answers are the same. The report prints the seed first.
package torture
