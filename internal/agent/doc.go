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
package agent
