// Package httpapi is Hitch's HTTP API (docs/api.md) as plain net/http
// handlers. The same handlers serve `hitch serve` locally and every Lambda
// function through internal/lambdahttp, so local and Lambda behaviour cannot
// drift.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// DefaultMaxBody is the default body limit (1 MiB).
const DefaultMaxBody = 1 << 20

// ErrUnauthenticated and ErrForbidden are returned by an Authenticator.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)

// Identity is who makes a request: the user, their tenant and the values
// of their groups claim (who may approve what: docs/api.md, "Approvers").
type Identity struct {
	UserID   string
	TenantID string
	Groups   []string
}

// Authenticator tells who makes a request, or ErrUnauthenticated /
// ErrForbidden.
type Authenticator func(r *http.Request) (Identity, error)

// DevAuth is the local development mode of docs/api.md: "Authorization: Bearer
// <user-id>", or "Bearer <user-id>;groups=sre,dba" with groups; no header
// is user "dev".
func DevAuth(r *http.Request) (Identity, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Identity{UserID: "dev"}, nil
	}
	const p = "Bearer "
	if len(h) <= len(p) || h[:len(p)] != p {
		return Identity{}, ErrUnauthenticated
	}
	user, groups, withGroups := strings.Cut(h[len(p):], ";groups=")
	id := Identity{UserID: user}
	if withGroups {
		for _, g := range strings.Split(groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				id.Groups = append(id.Groups, g)
			}
		}
	}
	return id, nil
}

// Server serves the API.
type Server struct {
	Engine *agent.Engine
	Auth   Authenticator
	Log    *slog.Logger
	// MaxBody is the body limit; 0 means DefaultMaxBody.
	MaxBody int64
	// Functions limits the routes served to those of these functions
	// ("invoke", "resume", "gettask"); empty serves every route.
	Functions []string
	// JSONWait is how long a JSON-mode answer waits before committing 200 and
	// writing spaces (docs/api.md: 15 s).
	JSONWait time.Duration
	// Keepalive is the SSE silence before ": keepalive" (15 s).
	Keepalive time.Duration
	// A2A, when set, answers the A2A routes (docs/api.md); without it they
	// are 404 route_not_found.
	A2A A2AServer
	// A2ADefaultAgent names the agent of the host's root Agent Card; empty:
	// the only agent (404 when there are several).
	A2ADefaultAgent string
	// Presigner, when set (artifacts in S3), answers a download with a 303
	// to a presigned URL instead of the bytes.
	Presigner Presigner
}

// Presigner makes a time-limited URL of an artifact's bytes whose response
// carries the artifact's media type and the given Content-Disposition
// (internal/s3artifacts).
type Presigner interface {
	Presign(ctx context.Context, a *agent.Artifact, disposition string, ttl time.Duration) (string, error)
}

// A2AServer answers the A2A binding once the API has authenticated the
// caller, found the agent and read the body (internal/a2a).
type A2AServer interface {
	ServeRPC(w http.ResponseWriter, r *http.Request, body []byte, ag *agent.Agent, user string)
	Card(r *http.Request, ag *agent.Agent) (json.RawMessage, error)
}

// Route is one route of the API and the function that serves it.
type Route struct {
	Method, Pattern, Function string
}

// Routes is the route table of docs/api.md; template.yaml must match it.
var Routes = []Route{
	{"POST", "/agents/{agent}/invoke", "invoke"},
	{"POST", "/agents/{agent}/tasks/{task_id}/requests/{request_id}/edit", "invoke"},
	{"POST", "/agents/{agent}/tasks/{task_id}/requests/{request_id}/resume", "resume"},
	{"POST", "/agents/{agent}/tasks/{task_id}/cancel", "resume"},
	{"DELETE", "/agents/{agent}/tasks/{task_id}", "resume"},
	{"GET", "/agents/{agent}/tasks/{task_id}", "gettask"},
	{"GET", "/agents/{agent}/tasks", "gettask"},
	{"GET", "/agents/{agent}/tasks/{task_id}/requests/{request_id}/events", "gettask"},
	{"GET", "/agents/{agent}/sessions/{session_id}/tasks", "gettask"},
	{"GET", "/agents/{agent}/tasks/{task_id}/artifacts/{artifact_id}", "gettask"},
	{"GET", "/agents", "gettask"},
	{"GET", "/health", "any"},
	{"GET", "/openapi.yaml", "any"},
	{"POST", "/a2a/{agent}", "invoke"},
	{"GET", "/a2a/{agent}/.well-known/agent-card.json", "gettask"},
	{"GET", "/.well-known/agent-card.json", "gettask"},
}

// public are the routes that need no token: liveness and the Agent Cards.
var public = map[string]bool{
	"/health": true, "/openapi.yaml": true, "/a2a/{agent}/.well-known/agent-card.json": true, "/.well-known/agent-card.json": true,
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Server) serves(fn string) bool {
	if len(s.Functions) == 0 || fn == "any" {
		return true
	}
	for _, f := range s.Functions {
		if f == fn {
			return true
		}
	}
	return false
}

// Handler returns the API's handler.
func (s *Server) Handler() http.Handler {
	handlers := map[string]http.HandlerFunc{
		"POST /agents/{agent}/invoke":                                       s.invoke,
		"POST /agents/{agent}/tasks/{task_id}/requests/{request_id}/edit":   s.edit,
		"POST /agents/{agent}/tasks/{task_id}/requests/{request_id}/resume": s.resume,
		"POST /agents/{agent}/tasks/{task_id}/cancel":                       s.cancel,
		"DELETE /agents/{agent}/tasks/{task_id}":                            s.deleteTask,
		"GET /agents/{agent}/tasks/{task_id}":                               s.getTask,
		"GET /agents/{agent}/tasks":                                         s.listTasks,
		"GET /agents/{agent}/tasks/{task_id}/requests/{request_id}/events":  s.events,
		"GET /agents/{agent}/sessions/{session_id}/tasks":                   s.listSessionTasks,
		"GET /agents/{agent}/tasks/{task_id}/artifacts/{artifact_id}":       s.artifact,
		"GET /agents":       s.listAgents,
		"GET /health":       s.health,
		"GET /openapi.yaml": s.openAPI,
		"POST /a2a/{agent}": s.a2aRPC,
		"GET /a2a/{agent}/.well-known/agent-card.json": s.a2aCard,
		"GET /.well-known/agent-card.json":             s.a2aCard,
	}
	// Group by path so that a known path with another method is 405, in JSON.
	byPath := map[string]map[string]http.HandlerFunc{}
	var order []string
	for _, rt := range Routes {
		if !s.serves(rt.Function) {
			continue
		}
		if byPath[rt.Pattern] == nil {
			byPath[rt.Pattern] = map[string]http.HandlerFunc{}
			order = append(order, rt.Pattern)
		}
		byPath[rt.Pattern][rt.Method] = handlers[rt.Method+" "+rt.Pattern]
	}
	mux := http.NewServeMux()
	for _, p := range order {
		methods := byPath[p]
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			h, ok := methods[r.Method]
			if !ok && r.Method == http.MethodHead {
				h, ok = methods[http.MethodGet]
			}
			if !ok {
				writeError(w, r, s.log(), agent.Errorf(agent.CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
				return
			}
			if !public[p] {
				user, err := s.authenticate(r)
				if err != nil {
					writeError(w, r, s.log(), err)
					return
				}
				r = r.WithContext(context.WithValue(r.Context(), userKey{}, user))
			}
			h(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log(), agent.Errorf(agent.CodeRouteNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

type userKey struct{}

// userOf is the id of the user who makes the request.
func userOf(r *http.Request) string { return identityOf(r).UserID }

// identityOf is who makes the request.
func identityOf(r *http.Request) Identity {
	id, _ := r.Context().Value(userKey{}).(Identity)
	return id
}

func (s *Server) authenticate(r *http.Request) (Identity, error) {
	auth := s.Auth
	if auth == nil {
		return Identity{}, agent.Errorf(agent.CodeUnauthenticated, "no authenticator is configured")
	}
	id, err := auth(r)
	switch {
	case errors.Is(err, ErrForbidden):
		return Identity{}, agent.Errorf(agent.CodeForbidden, "the token does not grant access to this API")
	case err != nil || id.UserID == "":
		return Identity{}, agent.Errorf(agent.CodeUnauthenticated, "a valid bearer token is required")
	}
	return id, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
