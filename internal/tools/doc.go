// Package tools holds the tools an agent may call: the built-in groups and
// Lambda functions. Each tool implements agent.Tool and agent.InputValidator;
// internal/catalog binds them to agents with their policies.
//
// # Built-in groups
//
// clock adds get_time {zone?}: the current time in an IANA zone (UTC by
// default), as {"time": RFC 3339, "zone": name}.
//
// files adds list_files, read_file, write_file, append_file and delete_file
// over one directory, the root (docs/guide/configuration.md, "Agent definitions"). Paths are relative to the root;
// absolute paths, ".." leaving the root and symlinks resolving outside it are
// errors. Every call opens the root with os.Root, which enforces the
// confinement at each step of the path, symlinks included, so a path checked
// once cannot be swapped for an escaping one between the check and the use.
// An empty directory lists as "(empty directory)" and an empty file reads as
// "(empty file)", because Bedrock rejects blank text blocks. All but
// append_file are idempotent (Builtin.Idempotent). Where the disk is not
// shared (Lambda, whose disk is per execution environment), FilesConfig.
// Unavailable makes every call fail with ErrFilesUnavailable.
//
// # Lambda functions
//
// A Lambda tool invokes its function synchronously (RequestResponse) with the
// payload
//
//	{"input": <the tool input>, "tool_name": "...", "tool_call_id": "...",
//	 "request_id": "...", "idempotency_key": "<request_id>#<tool_call_id>"}
//
// The key travels in the payload rather than in ClientContext so a function
// reads it like any other field. It is the same on every run of a call: a
// call re-run after a crash (a tool marked idempotent) or a retry of the SDK
// carries the same key, so the function can recognise the repetition.
//
// The function's answer becomes the result: a JSON string is a text block,
// any other JSON value a json block, and null (or no payload) the text
// "null". A function error (X-Amz-Function-Error) is a tool error carrying
// the function's errorMessage.
//
// # Input
//
// Input is validated against the tool's JSON Schema (compiled by
// internal/schema: draft 2020-12 unless the schema says otherwise, no
// reference outside the schema followed, RE2 patterns). An invalid
// input is an *agent.Error with code invalid_input whose message names each
// field and why, e.g. `input.path: got number, want string`. Built-in tools
// validate again in Run, so they never run on an input they do not accept.
package tools
