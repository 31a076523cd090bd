// Package a2a serves Hitch's agents over the Agent2Agent protocol (A2A 1.0,
// the JSON-RPC binding, with the 0.3 method names and shapes for older
// peers), docs/api.md.
//
// The transport — JSON-RPC framing, SSE, the 1.0 and 0.3 shapes, error
// objects — is the official Go SDK's (github.com/a2aproject/a2a-go/v2:
// a2asrv for 1.0, a2acompat/a2av0 for 0.3); this package implements the
// SDK's RequestHandler on the turn engine:
//
//   - an A2A contextId is a Hitch task, an A2A task is a Hitch request (its id
//     is the request_id); a request is found by its id alone through the
//     store's request lookup (A2A#<rid>), written with the request;
//   - Running → working; Paused → input-required, the status message
//     carrying the question(s) in a text part and the pending calls as a
//     data part {"pending_approvals": […], "pending_inputs": […]};
//     Completed → completed with the output as an artifact; Failed → failed;
//     Canceled → canceled;
//   - a message on an input-required task resumes it: a data part holding a
//     ResumeRequest (action | decisions, round?) or a text part "approve" /
//     "reject" (any plain text, when the round holds one question alone);
//   - streams begin with the Task; answer deltas are artifact updates on one
//     artifact; state changes are status updates. SubscribeToTask replays the
//     request's durable event log and follows it live.
//
// Errors carry the Hitch code in the ErrorInfo's metadata ("code"); another
// user's task is TaskNotFound, as the spec asks (its existence is not
// revealed).
package a2a
