package a2a

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/hitch-agents/hitch/internal/agent"
)

// ProtocolVersion is the A2A version of the shapes chosen by the
// A2A-Version header "1.0"; without the header, the 0.3 shapes answer.
const ProtocolVersion = "1.0"

// Server serves one deployment's agents over A2A. The HTTP API authenticates
// the caller, finds the agent and reads the body (internal/httpapi); Server
// answers the JSON-RPC call and the Agent Cards.
type Server struct {
	Engine *agent.Engine
	Log    *slog.Logger
	// BaseURL is the API's public base URL (e.g. the stage URL) for the
	// cards' interface URLs; empty derives it from each request: its scheme
	// and host, then PathPrefix's answer (API Gateway's "/<stage>").
	BaseURL    string
	PathPrefix func(*http.Request) string
	// KeepAlive is the SSE keep-alive interval of streams (15 s when 0).
	KeepAlive time.Duration
	// Detach lets a request go on after its call answered (returnImmediately,
	// a stream whose client left): true for a long-lived server (hitch
	// serve). When false (Lambda, whose environment freezes once the
	// invocation ends), the call returns only after every request it started
	// has ended or paused, as every HTTP route does (docs/architecture.md).
	Detach bool
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// v1Names are the 1.0 method names by their 0.3 names, and back.
var v1Names = map[string]string{
	"message/send":                        "SendMessage",
	"message/stream":                      "SendStreamingMessage",
	"tasks/get":                           "GetTask",
	"tasks/cancel":                        "CancelTask",
	"tasks/resubscribe":                   "SubscribeToTask",
	"tasks/list":                          "ListTasks",
	"agent/getAuthenticatedExtendedCard":  "GetExtendedAgentCard",
	"tasks/pushNotificationConfig/get":    "GetTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/set":    "CreateTaskPushNotificationConfig",
	"tasks/pushNotificationConfig/list":   "ListTaskPushNotificationConfigs",
	"tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
}

var v0Names = func() map[string]string {
	m := map[string]string{}
	for v0, v1 := range v1Names {
		m[v1] = v0
	}
	return m
}()

// ServeRPC answers one JSON-RPC call (body, already read) to ag by user.
func (s *Server) ServeRPC(w http.ResponseWriter, r *http.Request, body []byte, ag *agent.Agent, user string) {
	version := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
	v1 := false
	switch version {
	case "", "0.3":
	case "1.0", "1":
		v1 = true
	default:
		writeVersionError(w, rpcID(body), protoErr(a2a.ErrVersionNotSupported, "version_not_supported",
			"A2A-Version "+version+" is not supported: send 1.0, or no header for 0.3"))
		return
	}
	body, v1, invalid := prepareCall(body, v1)
	deadline, _ := r.Context().Deadline()
	h := &handler{e: s.Engine, agent: ag.Name, user: user, log: s.log().With("agent", ag.Name, "a2a", true), deadline: deadline,
		base: s.baseURL(r), invalid: invalid}
	keep := s.KeepAlive
	if keep <= 0 {
		keep = 15 * time.Second
	}
	var rpc http.Handler
	if v1 {
		rpc = a2asrv.NewJSONRPCHandler(h, a2asrv.WithTransportKeepAlive(keep))
	} else {
		rpc = a2av0.NewJSONRPCHandler(h, a2asrv.WithTransportKeepAlive(keep))
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	// The SDK's 0.3 handler writes its errors without a Content-Type (Go
	// would sniff text/plain): every answer is JSON, but a stream's, which
	// says text/event-stream over this.
	w.Header().Set("Content-Type", "application/json")
	rpc.ServeHTTP(w, r2)
	if !s.Detach {
		h.wait()
	}
}

// prepareCall gives the call the method name of the handler that answers
// it: either version's names are taken, the shapes follow A2A-Version.
// ListTasks, which 0.3 lacks, is answered by the 1.0 handler. A call
// without params gets empty ones (JSON-RPC lets them be omitted; the SDK
// would answer a parse error), so that the handler says what is missing.
//
// ListTasks' params are checked here for what the SDK's decoding loses
// (listParams): a call they fail goes on with empty params, and the
// handler answers invalid, in the SDK's shape.
func prepareCall(body []byte, v1 bool) (out []byte, isV1 bool, invalid error) {
	var call map[string]json.RawMessage
	if json.Unmarshal(body, &call) != nil {
		return body, v1, nil // the SDK answers the parse error
	}
	var method string
	if json.Unmarshal(call["method"], &method) != nil {
		return body, v1, nil
	}
	name := method
	switch {
	case method == "ListTasks" || method == "tasks/list":
		v1, name = true, "ListTasks"
	case v1 && v1Names[method] != "":
		name = v1Names[method]
	case !v1 && v0Names[method] != "":
		name = v0Names[method]
	}
	changed := name != method
	if _, ok := call["params"]; !ok {
		call["params"], changed = json.RawMessage(`{}`), true
	}
	if name == "ListTasks" {
		if invalid = listParams(call["params"]); invalid != nil {
			call["params"], changed = json.RawMessage(`{}`), true
		}
	}
	if !changed {
		return body, v1, nil
	}
	call["method"], _ = json.Marshal(name)
	out, err := json.Marshal(call)
	if err != nil {
		return body, v1, invalid
	}
	return out, v1, invalid
}

func rpcID(body []byte) any {
	var call struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(body, &call)
	switch call.ID.(type) {
	case string, float64:
		return call.ID
	}
	return nil
}

// writeVersionError answers VersionNotSupportedError (-32009) before any
// handler of a version is chosen.
func writeVersionError(w http.ResponseWriter, id any, e *a2a.Error) {
	info := e.ErrorInfo()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32009, "message": e.Message, "data": []any{info}},
	})
}

// Card returns ag's public Agent Card (docs/api.md): the 1.0 ProtoJSON card,
// with 0.3's url and preferredTransport alongside for older clients.
func (s *Server) Card(r *http.Request, ag *agent.Agent) (json.RawMessage, error) {
	url := s.baseURL(r) + "/a2a/" + ag.Name
	card := &a2a.AgentCard{
		Name: ag.Name, Description: ag.Description, Version: ag.Version,
		// The same URL answers 0.3 calls (no A2A-Version header): said so for
		// 0.3 clients, after the 1.0 interface.
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: ProtocolVersion},
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             []a2a.AgentSkill{},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": a2a.SecuritySchemeScopes{}}},
	}
	if card.Description == "" {
		card.Description = ag.Name
	}
	for _, t := range ag.Tools {
		sp := t.Tool.Spec()
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: sp.Name, Name: sp.Name, Description: sp.Description, Tags: []string{"tool"}})
	}
	raw, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	// Capabilities that are false are said, not left out; a 0.3 client finds
	// the endpoint where 0.3 cards put it.
	m["capabilities"] = map[string]any{"streaming": true, "pushNotifications": false, "extendedAgentCard": false}
	m["url"], m["preferredTransport"] = url, "JSONRPC"
	return json.Marshal(m)
}

// baseURL is the API's base URL as the caller reached it.
func (s *Server) baseURL(r *http.Request) string {
	if s.BaseURL != "" {
		return strings.TrimSuffix(s.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	prefix := ""
	if s.PathPrefix != nil {
		prefix = s.PathPrefix(r)
	}
	return scheme + "://" + r.Host + prefix
}
