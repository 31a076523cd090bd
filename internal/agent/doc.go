// Package agent is Hitch's domain: tasks, requests, history items, statuses,
// the errors clients see, and the turn engine that runs a request.
//
// It imports no AWS package. Adapters (dynamo, memstore, bedrock, httpapi,
// lambdahttp, tools) import it and implement its small interfaces: Store,
// Model, Tool, Sink.
//
// # State
//
// A task's META (Task) holds its owner, status, version, the next history seq
// and the active request's mutable state (ActiveRequest). Every change is one
// Store.Write guarded by the version; the write's WriteID lets a store
// recognise an ambiguous success that was retried. History entries (Item) are
// written once and never rewritten; entries at or past NextSeq are invisible,
// so a write that landed in parts is harmless.
//
// # The turn engine
//
// A leg loads the history, calls the model, streams deltas as events, and for
// each tool call runs it (in parallel, each with a timeout) or pauses for a
// human's approval. Each iteration records its tool calls before they run, so
// a crash never hides a call that ran. The commit that ends the request writes
// the remaining entries, the request's record and the idle META at once.
//
// Every model call of a leg resends the agent's tools, system prompt and
// history, so each carries the agent's CacheTTL and the prefix is kept the
// same from call to call (tools sorted by name, nothing per turn in the
// system prompt): the model caches it (the bedrock adapter places the cache
// points; docs/guide/prompt-caching.md, "Prompt caching"), and Usage counts what was read from the
// cache and written to it apart from the input billed at the full price.
//
// # The paths of a request, file by file
//
//	engine.go     a new message or edit: the claim, settling a dead leg (or a
//	              caller's expired chain) before it
//	leg.go        what a Start… gives: a leg to run (Run), or a follower of a
//	              leg that runs elsewhere (followLeg), and how followers follow
//	run.go        a leg: the turn loop and its commits
//	toolrun.go    a turn's tool calls
//	hitl.go       approvals: the pause, and the decided round's run
//	resume.go     a decision on a paused request (the answer table), and which
//	              follower answers a duplicate: in flight, past round, ended
//	follow.go     reading a request's event log: GET events and followers' streams
//	eventlog.go   events no leg logs (an expiry's, a cancel's, a dead leg's end);
//	              the log itself, batched per leg, is internal/eventlog
//	child.go      child calls: a sub-agent's request, its pause pausing the caller
//	continue.go   continuations: a caller goes on once its children moved — after
//	              a child's end, a hand-off, a poll, a decision at the caller
//	              (runContinued); the claim a reaper's takeover uses too
//	              (claimContinue, through reaper.go's claimTakeover)
//	caller.go     decisions at a caller: checked whole, the caller and its local
//	              leaves claimed in one write, the leaves' legs run
//	notify.go     the outbox items a commit owes; waiters bound to a request
//	remote.go     remote leaves: `a2a:` calls to another system's agent
//	cancel.go     cancel, of one request and of a tree
//	expiry.go     expiry, of a round and of a chain
//	reaper.go     the reaper: dead legs taken over, due rounds expired
//	edit.go, delete.go, view.go, compaction.go: edits, deletes, GET task, compaction
//
// # Orchestration (docs/architecture.md, "Orchestration")
//
// An agent calls agents as tools. A child call runs the sub-agent's
// request in its own task; when it pauses, the caller pauses too, its
// round's pending calls the leaves' (awaits). A decision may be sent to a
// leaf or to any caller above it: at a caller it is one claim of every
// leaf it decides, then the leaves run and the caller continues in the
// same invocation. A leaf decided at its own URL ends; its end puts a
// continuation item for its caller, whose claim consumes it. A chain ends
// whole: cancel flags the tree top-down before it finalises anything, an
// expiry found anywhere expires the chain, and a caller whose leg died is
// taken over with its children (reaper.go). A remote leaf (an `a2a:` call)
// is polled in every round it pauses, and decisions for it are sent there.
//
// # Approval rules, trust and compaction (docs/guide/configuration.md, "Agent definitions")
//
// A tool's policy may carry ApprovalRules: its calls need approval only when
// a rule matches their input; the pending call, the event and the decision
// name the rule. A decision that says "remember": "task" adds a Trust to the
// task's META (one per tool and rule): later calls it covers run without
// approval; an edit that supersedes the deciding request drops it.
//
// An agent with a ContextPolicy compacts: before a model call whose messages
// would pass max_input_tokens, the oldest turns but the last keep_turns are
// summarised by one model call into a summary entry; META's Context says
// where the model's context starts, and Store.LoadContext reads from there
// (one page at any history length). Each request records its Compactions, so
// GET task marks what a summary stands in for and an edit can undo the
// summaries it supersedes.
package agent
