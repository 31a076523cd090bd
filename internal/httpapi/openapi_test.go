package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/docs"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
)

// wantStatuses are the statuses a route can answer, from what the router
// and the handlers do: every path answers 405 for another method; a route
// behind the token 401 and 403 and, once past it, 500; a body 413; path ids
// 400 (invalid_id) and 404; a request that runs (invoke, edit, resume) the
// statuses of a Failed outcome and of its refusals.
func wantStatuses(rt httpapi.Route) []int {
	public := map[string]bool{"/health": true, "/openapi.yaml": true,
		"/a2a/{agent}/.well-known/agent-card.json": true, "/.well-known/agent-card.json": true}
	want := []int{http.StatusMethodNotAllowed}
	if !public[rt.Pattern] {
		want = append(want, 401, 403, 500)
	}
	if rt.Method == http.MethodPost {
		want = append(want, 413)
	}
	if strings.Contains(rt.Pattern, "{agent}") {
		want = append(want, 404)
	}
	if strings.Contains(rt.Pattern, "_id}") || strings.HasSuffix(rt.Pattern, "/tasks") {
		want = append(want, 400) // invalid_id, invalid_query
	}
	switch {
	case strings.HasSuffix(rt.Pattern, "/invoke"), strings.HasSuffix(rt.Pattern, "/edit"), strings.HasSuffix(rt.Pattern, "/resume"):
		want = append(want, 200, 400, 409, 410, 422, 429, 502, 503, 504)
	case strings.HasSuffix(rt.Pattern, "/cancel"):
		want = append(want, 200, 202, 400, 409)
	case rt.Method == http.MethodDelete:
		want = append(want, 204, 409)
	case strings.HasSuffix(rt.Pattern, "/events"):
		want = append(want, 200, 410)
	default:
		want = append(want, 200)
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// TestOpenAPICoversRoutes walks the router's route table: every route and
// method is in docs/openapi.yaml with every status it can answer, and every
// path and method of the document is a route.
func TestOpenAPICoversRoutes(t *testing.T) {
	doc := contract.Document(t)
	routes := map[string]bool{}
	for _, rt := range httpapi.Routes {
		key := rt.Method + " " + rt.Pattern
		routes[key] = true
		item := doc.Paths.Value(rt.Pattern)
		if item == nil {
			t.Errorf("route %s: the path is not in the document", key)
			continue
		}
		op := item.GetOperation(rt.Method)
		if op == nil {
			t.Errorf("route %s: the method is not in the document", key)
			continue
		}
		for _, st := range wantStatuses(rt) {
			if op.Responses.Status(st) == nil {
				t.Errorf("route %s: status %d is not documented", key, st)
			}
		}
		if len(op.Responses.Map()) == 0 || op.Responses.Default() != nil {
			t.Errorf("route %s: want explicit statuses, no default", key)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !routes[method+" "+path] {
				t.Errorf("the document has %s %s; the router does not", method, path)
			}
		}
	}
}

// TestOpenAPIErrorCodes checks the document's error codes against the
// status table: each CodeNNN schema lists exactly the codes answered with
// status NNN.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc := contract.Document(t)
	want := map[string][]string{}
	for _, c := range httpapi.Codes() {
		name := "Code" + strconv.Itoa(httpapi.StatusOf(c))
		want[name] = append(want[name], c)
	}
	got := map[string][]string{}
	for name, s := range doc.Components.Schemas {
		if !strings.HasPrefix(name, "Code") {
			continue
		}
		for _, v := range s.Value.Enum {
			got[name] = append(got[name], fmt.Sprint(v))
		}
		slices.Sort(got[name])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error codes by status (-status table +docs/openapi.yaml):\n%s", diff)
	}
}

// TestServeOpenAPI: GET /openapi.yaml needs no token and answers the
// embedded document.
func TestServeOpenAPI(t *testing.T) {
	e := newEnv(t)
	e.api.Auth = func(*http.Request) (httpapi.Identity, error) { return httpapi.Identity{}, httpapi.ErrUnauthenticated }
	r := e.do(t, "GET", "/openapi.yaml", "", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/yaml" || string(r.body) != string(docs.OpenAPI) {
		t.Fatalf("GET /openapi.yaml: %d %q, %d bytes", r.status, r.header.Get("Content-Type"), len(r.body))
	}
	if r := e.do(t, "HEAD", "/openapi.yaml", "", ""); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD /openapi.yaml: %d, %d bytes", r.status, len(r.body))
	}
	if r := e.do(t, "POST", "/openapi.yaml", "", "{}"); r.status != 405 || r.code() != "method_not_allowed" {
		t.Errorf("POST /openapi.yaml: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/agents", "", ""); r.status != 401 {
		t.Errorf("GET /agents without a token: %d, want 401 (the token check is on)", r.status)
	}
}
