package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/docs"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/auth"
	"github.com/hitch-agents/hitch/internal/auth/authtest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdaauth"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// The fixed ids of the events/ fixtures.
const (
	fixtureSession = "0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f"
	fixtureTask    = "0190f3a1-6c3d-7e5f-9071-2b3c4d5e6f70"
	fixtureRequest = "0190f3a1-7d4e-7f60-a182-3c4d5e6f7081"
	fixtureUser    = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	fixtureTenant  = "3f2b8c1e-9d4a-4e6b-8a7c-5d1e2f3a4b5c"
)

// newFunctions builds the three API functions as their main does
// (lambdafn.New, the default AWS configuration from the environment) against
// the backend.
func newFunctions(t *testing.T, be backend) map[string]*lambdahttp.Handler {
	t.Helper()
	for _, kv := range awsEnv(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	out := map[string]*lambdahttp.Handler{}
	for _, fn := range []string{"invoke", "resume", "gettask"} {
		app, err := lambdafn.New(context.Background(), lambdafn.Config{
			Function: fn, Table: be.Table, DynamoDBEndpoint: be.DynamoDBEndpoint, BedrockEndpoint: be.BedrockEndpoint, A2ADefaultAgent: "assistant",
			Log: testLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		out[fn] = app.Handler
	}
	return out
}

// functionOf is the function that serves an API Gateway event's route, per
// the route table (the one template.yaml is checked against).
func functionOf(tb testing.TB, raw []byte) string {
	tb.Helper()
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		tb.Fatal(err)
	}
	for _, rt := range httpapi.Routes {
		if rt.Pattern == ev.Resource && rt.Method == ev.HTTPMethod {
			if rt.Function == "any" {
				return "gettask"
			}
			return rt.Function
		}
	}
	tb.Fatalf("no route %s %s", ev.HTTPMethod, ev.Resource)
	return ""
}

type reply struct {
	status int
	header map[string]string
	body   []byte
}

func (r reply) code() string {
	var b struct{ Error struct{ Code string } }
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

// serve runs an API Gateway event through a function's handler and reads
// the whole streamed answer.
func serve(tb testing.TB, h *lambdahttp.Handler, raw []byte) reply {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.Handle(ctx, raw)
	if err != nil {
		tb.Fatalf("Handle: %v", err)
	}
	resp, ok := out.(*events.APIGatewayProxyStreamingResponse)
	if !ok {
		tb.Fatalf("Handle answered %T, want a streaming response", out)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Close()
	if err != nil {
		tb.Fatalf("read the body: %v", err)
	}
	return reply{resp.StatusCode, resp.Headers, body}
}

// TestEventFixtures runs every API Gateway event of events/ through the
// function that serves its route, each against a fresh table.
func TestEventFixtures(t *testing.T) {
	type answer struct {
		status int
		code   string // error code, for 4xx and 5xx
	}
	tests := []struct {
		file string
		want []answer // any of these
	}{
		{"health.json", []answer{{200, ""}}},
		{"openapi.json", []answer{{200, ""}}},
		{"agents.json", []answer{{200, ""}}},
		{"invoke.json", []answer{{200, ""}}},
		{"invoke-sse.json", []answer{{200, ""}}},
		{"list-tasks.json", []answer{{200, ""}}},
		// The fixed ids name nothing in a fresh table.
		{"get-task.json", []answer{{404, "task_not_found"}}},
		{"artifact.json", []answer{{404, "task_not_found"}}},
		{"edit.json", []answer{{404, "task_not_found"}}},
		{"resume.json", []answer{{404, "task_not_found"}}},
		{"cancel.json", []answer{{404, "task_not_found"}}},
		{"session-tasks.json", []answer{{404, "session_not_found"}}},
		{"delete-task.json", []answer{{404, "task_not_found"}}},
		{"events.json", []answer{{404, "task_not_found"}}},
		{"a2a-send.json", []answer{{200, ""}}},
		{"agent-card.json", []answer{{200, ""}}},
		{"root-agent-card.json", []answer{{200, ""}}},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	covered := []string{"direct-invoke.json", "direct-resume.json", "direct-cancel.json", "direct-get.json", "authorizer.json"} // tested below
	for _, tc := range tests {
		covered = append(covered, tc.file)
	}
	for _, f := range files {
		if !slices.Contains(covered, filepath.Base(f)) {
			t.Errorf("events/%s is tested by nothing", filepath.Base(f))
		}
	}
	for _, route := range httpapi.Routes {
		if !fixtureFor(t, route) {
			t.Errorf("no fixture in events/ for %s %s", route.Method, route.Pattern)
		}
	}

	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.file, ".json"), func(t *testing.T) {
			fns := newFunctions(t, newBackend(t))
			raw := readFixture(t, tc.file)
			r := serve(t, fns[functionOf(t, raw)], raw)
			got := answer{r.status, ""}
			if r.status >= 400 {
				got.code = r.code()
			}
			if !slices.Contains(tc.want, got) {
				t.Fatalf("answered %d %q: %s; want one of %v", r.status, got.code, r.body, tc.want)
			}
			if r.status >= 500 {
				t.Fatalf("a fixture answered %d", r.status)
			}
			ct := r.header["Content-Type"]
			if strings.Contains(tc.file, "sse") && r.status == 200 {
				if ct != "text/event-stream" {
					t.Errorf("Content-Type = %q, want text/event-stream", ct)
				}
				evs := parseSSE(t, r.body)
				if len(evs) < 2 || evs[0].Event != "request_started" || evs[len(evs)-1].Event != "request_complete" {
					t.Errorf("events = %+v, want request_started … request_complete", evs)
				}
				return
			}
			if tc.file == "openapi.json" {
				if ct != "application/yaml" || !bytes.Equal(r.body, docs.OpenAPI) {
					t.Errorf("Content-Type %q, %d bytes: want application/yaml, the embedded docs/openapi.yaml", ct, len(r.body))
				}
				return
			}
			if !strings.HasPrefix(ct, "application/json") || !json.Valid(r.body) {
				t.Errorf("Content-Type %q, body %q: want JSON", ct, r.body)
			}
		})
	}
}

// fixtureFor tells whether events/ has an event for the route.
func fixtureFor(tb testing.TB, route httpapi.Route) bool {
	files, _ := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var ev events.APIGatewayProxyRequest
		if json.Unmarshal(b, &ev) == nil && ev.Resource == route.Pattern && ev.HTTPMethod == route.Method {
			return true
		}
	}
	return false
}

// TestEventFixturesOnATask runs the fixtures that name a task on the task
// that invoke.json creates: the fixtures are the real shapes, and only their
// ids are examples.
func TestEventFixturesOnATask(t *testing.T) {
	fns := newFunctions(t, newBackend(t))
	raw := readFixture(t, "invoke.json")
	r := serve(t, fns["invoke"], raw)
	var res agent.RequestResult
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	if res.Status != agent.StatusCompleted || res.Output != "echo: What time is it in Tokyo?" || res.SessionID != fixtureSession {
		t.Fatalf("invoke result = %+v", res)
	}
	on := func(file string) []byte {
		b := readFixture(t, file)
		return []byte(strings.NewReplacer(fixtureTask, res.TaskID, fixtureRequest, res.RequestID).Replace(string(b)))
	}
	tests := []struct {
		file   string
		status int
		code   string
		check  func(t *testing.T, body map[string]any)
	}{
		{"get-task.json", 200, "", func(t *testing.T, b map[string]any) {
			if b["task_id"] != res.TaskID || b["user_id"] != fixtureUser || b["status"] != "Completed" {
				t.Errorf("task = %v", b)
			}
		}},
		{"session-tasks.json", 200, "", func(t *testing.T, b map[string]any) {
			tasks, _ := b["tasks"].([]any)
			if len(tasks) != 1 || tasks[0].(map[string]any)["task_id"] != res.TaskID {
				t.Errorf("session tasks = %v", b)
			}
		}},
		{"cancel.json", 409, "not_running", nil},
		{"resume.json", 409, "not_paused", nil},
		{"edit.json", 200, "", func(t *testing.T, b map[string]any) {
			if b["status"] != "Completed" || b["task_id"] != res.TaskID || b["request_id"] == res.RequestID || b["output"] != "echo: What time is it in Osaka?" {
				t.Errorf("edit result = %v", b)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.file, ".json"), func(t *testing.T) {
			raw := on(tc.file)
			r := serve(t, fns[functionOf(t, raw)], raw)
			if r.status != tc.status || (tc.code != "" && r.code() != tc.code) {
				t.Fatalf("answered %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if tc.check != nil {
				var b map[string]any
				if err := json.Unmarshal(r.body, &b); err != nil {
					t.Fatal(err)
				}
				tc.check(t, b)
			}
		})
	}
}

func TestDirectFixture(t *testing.T) {
	fns := newFunctions(t, newBackend(t))
	raw := readFixture(t, "direct-invoke.json")
	if lambdahttp.IsProxyEvent(raw) {
		t.Fatal("direct-invoke.json passes for an API Gateway event")
	}
	out, err := fns["invoke"].Handle(context.Background(), raw)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	res, ok := out.(*agent.RequestResult)
	if !ok || res.Status != agent.StatusCompleted || res.SessionID != fixtureSession || res.Output != "echo: Summarise ticket ACME-42 in one sentence." {
		t.Fatalf("result = %#v", out)
	}
	// Only invoke takes direct invocations.
	_, err = fns["gettask"].Handle(context.Background(), raw)
	var fe *lambdahttp.FunctionError
	if !errors.As(err, &fe) || fe.Type != "Hitch.unsupported_event" {
		t.Errorf("gettask answered a direct payload with %v", err)
	}
}

// TestDirectOpFixtures: the resume, cancel and get fixtures are payloads
// the invoke function takes; their task does not exist here.
func TestDirectOpFixtures(t *testing.T) {
	fns := newFunctions(t, newBackend(t))
	for _, f := range []string{"direct-resume.json", "direct-cancel.json", "direct-get.json"} {
		_, err := fns["invoke"].Handle(context.Background(), readFixture(t, f))
		var fe *lambdahttp.FunctionError
		if !errors.As(err, &fe) || fe.Type != "Hitch.task_not_found" {
			t.Errorf("%s: %v, want Hitch.task_not_found", f, err)
		}
	}
}

// TestAuthorizerFixture runs events/authorizer.json through the authorizer
// against a local OIDC issuer: as it is (its token is an example) it is
// refused; with a real token it is allowed, with the context that the API
// fixtures carry.
func TestAuthorizerFixture(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, err := auth.NewVerifier(auth.Config{
		Issuers: []string{is.Issuer(fixtureTenant)}, Audience: "api://hitch", Tenants: []string{fixtureTenant},
		RequiredScope: "Agents.Use", HTTPClient: is.Client(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := lambdaauth.New(v, slog.New(slog.DiscardHandler))
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal(readFixture(t, "authorizer.json"), &ev); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Handle(context.Background(), ev); !errors.Is(err, lambdaauth.ErrUnauthorized) {
		t.Fatalf("the example token: %v, want Unauthorized", err)
	}

	exp := time.Now().Add(time.Hour).Unix()
	tok := "Bearer " + is.Sign(t, jwt.MapClaims{
		"iss": is.Issuer(fixtureTenant), "aud": "api://hitch", "tid": fixtureTenant, "oid": fixtureUser,
		"sub": "pairwise-sub", "scp": "Agents.Use", "exp": exp, "nbf": time.Now().Add(-time.Minute).Unix(),
	})
	ev.Headers["Authorization"] = tok
	ev.MultiValueHeaders["Authorization"] = []string{tok}
	resp, err := a.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{{
		Action: []string{"execute-api:Invoke"}, Effect: "Allow",
		Resource: []string{"arn:aws:execute-api:eu-west-1:123456789012:abcdef1234/v1/*/*"},
	}}}
	if diff := cmp.Diff(want, resp.PolicyDocument); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	// The API fixtures' authorizer context is what the authorizer gives.
	var api events.APIGatewayProxyRequest
	if err := json.Unmarshal(readFixture(t, "invoke.json"), &api); err != nil {
		t.Fatal(err)
	}
	fixture := api.RequestContext.Authorizer
	if resp.PrincipalID != fixture["principalId"] {
		t.Errorf("principalId = %q, the fixtures say %v", resp.PrincipalID, fixture["principalId"])
	}
	for k, v := range resp.Context {
		if k == lambdaauth.ContextExpiresAt {
			continue // the fixtures' is far in the future
		}
		if fixture[k] != v {
			t.Errorf("context %s = %v, the fixtures say %v", k, v, fixture[k])
		}
	}
	for k := range fixture {
		if _, ok := resp.Context[k]; !ok && k != "principalId" && k != "integrationLatency" {
			t.Errorf("the fixtures' context has %s, which the authorizer does not give", k)
		}
	}
}

// The Agent Card served by the gettask function names the A2A endpoint with
// the stage the request came through.
func TestAgentCardURL(t *testing.T) {
	fns := newFunctions(t, newBackend(t))
	raw := readFixture(t, "agent-card.json")
	r := serve(t, fns[functionOf(t, raw)], raw)
	var card struct {
		URL                 string `json:"url"`
		SupportedInterfaces []struct {
			URL, ProtocolVersion string
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(r.body, &card); err != nil || r.status != 200 {
		t.Fatalf("card: %d %s (%v)", r.status, r.body, err)
	}
	const want = "https://abcdef1234.execute-api.eu-west-1.amazonaws.com/v1/a2a/assistant"
	if card.URL != want || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != want || card.SupportedInterfaces[0].ProtocolVersion != "1.0" {
		t.Errorf("card url %q, interfaces %+v; want %s", card.URL, card.SupportedInterfaces, want)
	}
}
