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
// points; README "Prompt caching"), and Usage counts what was read from the
// cache and written to it apart from the input billed at the full price.
//
// # Approval rules, trust and compaction (DESIGN §12)
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
