// Package deploy describes how Hitch is deployed on AWS: the routes of
// docs/api.md and the function serving each, the functions of template.yaml and
// their build targets, and the gateway responses of docs/api.md.
//
// These values are the contract template.yaml is tested against (see
// template_test.go): a route, a function, a streaming setting, an environment
// variable a function's main reads, or a gateway response that drifts from
// them fails `go test`. Other packages may use them too, e.g. to check that
// the HTTP router serves exactly these routes.
package deploy

import "net/http"

// Route is one route of the API.
type Route struct {
	Method string
	// Path in API Gateway's form: /agents/{agent}/tasks/{task_id}.
	Path string
	// Function is the directory of the function serving it, under functions/.
	Function string
	// Public routes are not behind the authorizer.
	Public bool
}

// Functions of docs/architecture.md, by directory under functions/.
const (
	Invoke     = "invoke"
	Resume     = "resume"
	GetTask    = "gettask"
	Authorizer = "authorizer"
	Notifier   = "notifier"
)

// Routes is the route table of docs/api.md.
var Routes = []Route{
	{http.MethodPost, "/agents/{agent}/invoke", Invoke, false},
	{http.MethodPost, "/agents/{agent}/tasks/{task_id}/requests/{request_id}/edit", Invoke, false},
	{http.MethodPost, "/agents/{agent}/tasks/{task_id}/requests/{request_id}/resume", Resume, false},
	{http.MethodPost, "/agents/{agent}/tasks/{task_id}/cancel", Resume, false},
	{http.MethodDelete, "/agents/{agent}/tasks/{task_id}", Resume, false},
	{http.MethodGet, "/agents/{agent}/tasks/{task_id}", GetTask, false},
	{http.MethodGet, "/agents/{agent}/tasks", GetTask, false},
	{http.MethodGet, "/agents/{agent}/tasks/{task_id}/requests/{request_id}/events", GetTask, false},
	{http.MethodGet, "/agents/{agent}/sessions/{session_id}/tasks", GetTask, false},
	{http.MethodGet, "/agents/{agent}/tasks/{task_id}/artifacts/{artifact_id}", GetTask, false},
	{http.MethodGet, "/agents", GetTask, false},
	{http.MethodGet, "/health", GetTask, true},
	{http.MethodGet, "/openapi.yaml", GetTask, true},
	{http.MethodPost, "/a2a/{agent}", Invoke, false},
	{http.MethodGet, "/a2a/{agent}/.well-known/agent-card.json", GetTask, true},
	{http.MethodGet, "/.well-known/agent-card.json", GetTask, true},
}

// LogicalIDs maps each function's directory to its logical id in
// template.yaml. SAM builds function X with `make build-X` (BuildMethod:
// makefile), so these also name the Makefile's targets.
var LogicalIDs = map[string]string{
	Invoke:     "InvokeFunction",
	Resume:     "ResumeFunction",
	GetTask:    "GetTaskFunction",
	Authorizer: "AuthorizerFunction",
	Notifier:   "NotifierFunction",
}

// Streaming settings of every route's integration.
const (
	ResponseTransferMode = "RESPONSE_STREAM"
	IntegrationTimeoutMs = 900000
	// FunctionTimeout of the functions behind routes, in seconds.
	FunctionTimeout = 900
)

// GatewayResponse is what API Gateway answers itself, in the error body of
// docs/api.md.
type GatewayResponse struct {
	Status int
	Code   string
}

// GatewayResponses of docs/api.md, by API Gateway response type.
var GatewayResponses = map[string]GatewayResponse{
	"UNAUTHORIZED":                 {401, "unauthenticated"},
	"ACCESS_DENIED":                {403, "forbidden"},
	"MISSING_AUTHENTICATION_TOKEN": {404, "route_not_found"},
	"REQUEST_TOO_LARGE":            {413, "body_too_large"},
	"THROTTLED":                    {429, "throttled"},
	"INTEGRATION_TIMEOUT":          {504, "deadline_exceeded"},
	"DEFAULT_5XX":                  {500, "internal"},
}
