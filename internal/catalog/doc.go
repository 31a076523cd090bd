// Package catalog loads the agent definitions, agents/*.yaml in the
// tealagents/v1alpha1 shape of docs/guide/configuration.md, "Agent definitions", into agents with their tools bound.
//
// Definitions are read from an fs.FS: the binaries embed agents/ (package
// agents), and `hitch serve --agents DIR` reads a directory (LoadDir). A
// definition that is wrong fails the whole load, at start-up, with errors
// that name the file, the field path and the reason:
//
//	agents/a.yaml: spec.agent.tools[1].approval_ttl: "1x" is not a Go duration
//
// Every problem found is reported (errors.Join), not only the first.
//
// The YAML is walked node by node rather than decoded into structs, so that
// each error carries its field path, unknown and duplicate keys are refused,
// and `version: 0.1` stays the string "0.1" as written.
//
// # Defaults and policies
//
// max_tokens 2048, max_iterations 10, max_tool_result_bytes 65536,
// default_requires_approval false. A tool entry's requires_approval is true,
// false, or (in a builtin group) a list of the group's tools: those listed
// need approval, the group's others do not. default_requires_approval applies
// only to entries that say nothing. approval_ttl (a Go duration, default
// DefaultApprovalTTL) applies to the tools that need approval.
//
// A requires_approval list may hold rules {tool, when: {field: glob}}
// (docs/guide/configuration.md, "Agent definitions"; rules.go, globs in internal/glob): the tool then needs approval only
// for the calls whose input matches; each when field must be in the tool's
// input schema. spec.agent.context {max_input_tokens, keep_turns} turns on
// context compaction. spec.agent.cache {ttl: 5m | 1h | off | auto} sets
// prompt caching (cache.go); auto, the default, caches for 5 minutes on
// Claude, Nova and the local model and not on other models.
//
// Beyond docs/guide/configuration.md, "Agent definitions", a tool entry may set timeout (a Go duration, default
// DefaultToolTimeout): how long one call of its tools may run.
//
// # Environment
//
// Env carries what tools need from where they run: whether the files tools
// work (not on Lambda), the directory a files root is resolved against (the
// agent file's directory on disk), and the Lambda client of lambda tools.
package catalog
