package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/hitch-agents/hitch/docs"
)

// The contract: every response the HTTP tests produce is checked against
// docs/openapi.yaml with kin-openapi (which loads OpenAPI 3.1 and validates
// 3.1 schemas as JSON Schema 2020-12): the status must be documented for the
// route and method, the headers and the JSON body must match the response's
// schema, and each Server-Sent Event, parsed into {id, event, data}, must
// match the text/event-stream schema.

var openAPI = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("load docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// openAPIDoc loads docs/openapi.yaml once, validated.
func openAPIDoc(tb testing.TB) *openapi3.T {
	tb.Helper()
	doc, err := openAPI()
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// contractRouter finds a request's operation in the document, whatever the
// test server's host (the document's servers name hitch serve's address).
var contractRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openAPI()
	if err != nil {
		return nil, err
	}
	c := *doc
	c.Servers = nil
	return legacy.NewRouter(&c)
})

// contract wraps an API handler so that every response it writes is checked
// against the document; mismatches fail tb when it cleans up (after the
// test's server has closed, so that every handler has returned).
func contract(tb testing.TB, h http.Handler) http.Handler {
	tb.Helper()
	openAPIDoc(tb)
	c := &checker{}
	tb.Cleanup(func() {
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, err := range c.errs {
			tb.Errorf("docs/openapi.yaml: %v", err)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.wg.Add(1)
		defer c.wg.Done()
		rec := &recorder{w: w, status: 0, header: http.Header{}}
		h.ServeHTTP(rec, r)
		if err := checkResponse(r, rec.result()); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("%s %s → %d: %w", r.Method, r.URL.RequestURI(), rec.result().status, err))
			c.mu.Unlock()
		}
	})
}

type checker struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// recorder passes a response through and keeps a copy of it.
type recorder struct {
	w      http.ResponseWriter
	mu     sync.Mutex
	status int
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(status int) {
	r.mu.Lock()
	if r.status == 0 {
		r.status = status
		r.header = r.w.Header().Clone()
	}
	r.mu.Unlock()
	r.w.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	if r.status == 0 {
		r.status = http.StatusOK
		r.header = r.w.Header().Clone()
	}
	r.body.Write(b)
	r.mu.Unlock()
	return r.w.Write(b)
}

// Flush and Unwrap keep http.ResponseController working through the
// recorder.
func (r *recorder) Flush() {
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

type recorded struct {
	status int
	header http.Header
	body   []byte
}

func (r *recorder) result() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	return recorded{status, r.header, bytes.Clone(r.body.Bytes())}
}

// checkResponse checks one response against the document.
func checkResponse(req *http.Request, res recorded) error {
	doc, err := openAPI()
	if err != nil {
		return err
	}
	router, err := contractRouter()
	if err != nil {
		return err
	}
	// The router matches on the URL; the server's request has only a path.
	u := *req.URL
	u.Scheme, u.Host = "http", req.Host
	r := req.Clone(context.Background())
	r.URL = &u
	method := r.Method
	if method == http.MethodHead {
		r.Method = http.MethodGet
	}
	route, params, err := router.FindRoute(r)
	var re *routers.RouteError
	switch {
	case errors.As(err, &re) && pathDocumented(router, r):
		// A documented path, another method.
		return checkError(doc, res, http.StatusMethodNotAllowed, "method_not_allowed")
	case errors.As(err, &re):
		// Not a route: the catch-all answers 404 route_not_found.
		return checkError(doc, res, http.StatusNotFound, "route_not_found")
	case err != nil:
		return err
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	sse := strings.HasPrefix(res.header.Get("Content-Type"), "text/event-stream")
	if sse || method == http.MethodHead {
		opts.ExcludeResponseBody = true
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts},
		Status:                 res.status,
		Header:                 res.header,
		Body:                   io.NopCloser(bytes.NewReader(res.body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if !sse || method == http.MethodHead {
		return nil
	}
	resp := route.Operation.Responses.Status(res.status)
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("status %d is not documented", res.status)
	}
	mt := resp.Value.Content.Get("text/event-stream")
	if mt == nil || mt.Schema == nil {
		return errors.New("the response is a stream the document does not describe")
	}
	return checkEvents(mt.Schema.Value, res.body)
}

// pathDocumented tells whether the document has r's path, with any method.
func pathDocumented(router routers.Router, r *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		c := r.Clone(context.Background())
		c.Method = m
		if _, _, err := router.FindRoute(c); err == nil {
			return true
		}
	}
	return false
}

// checkEvents parses an SSE body and checks every event against schema.
func checkEvents(schema *openapi3.Schema, body []byte) error {
	evs, err := parseEvents(body)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return errors.New("the stream has no event")
	}
	for _, ev := range evs {
		if err := schema.VisitJSON(ev, openapi3.EnableJSONSchema2020()); err != nil {
			b, _ := json.Marshal(ev)
			return fmt.Errorf("event %s: %w", b, err)
		}
	}
	return nil
}

// parseEvents reads an SSE body into {id, event, data} objects, data
// decoded as JSON; comments (keepalives) are skipped.
func parseEvents(body []byte) ([]map[string]any, error) {
	var out []map[string]any
	cur := map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]any{}
		case field == "":
			// a comment
		case field == "data":
			var v any
			dec := json.NewDecoder(strings.NewReader(value))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("data %q is not JSON: %w", value, err)
			}
			cur["data"] = jsonValue(v)
		case field == "id", field == "event":
			cur[field] = value
		default:
			return nil, fmt.Errorf("unexpected line %q", line)
		}
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("the stream ends inside an event: %v", cur)
	}
	return out, sc.Err()
}

// jsonValue turns json.Numbers into float64 (integers stay exact below
// 2^53), the form the schema validator expects.
func jsonValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
	}
	return v
}

// checkError checks an answer outside the document's operations (an unknown
// route, a method a path lacks): the error body with this status and code.
func checkError(doc *openapi3.T, res recorded, status int, code string) error {
	if res.status != status {
		return fmt.Errorf("status %d, want %d", res.status, status)
	}
	var v any
	if err := json.Unmarshal(res.body, &v); err != nil {
		return fmt.Errorf("body %q is not JSON", res.body)
	}
	if err := doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return err
	}
	if got := v.(map[string]any)["error"].(map[string]any)["code"]; got != code {
		return fmt.Errorf("code %v, want %s", got, code)
	}
	return nil
}

// TestContractCatchesMismatch proves the contract check can fail: bodies,
// statuses and events the document does not allow are refused.
func TestContractCatchesMismatch(t *testing.T) {
	const task = "/agents/acc/tasks/0190a8c2-7b3d-7c1e-9f00-000000000001"
	sseHeader := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             map[string]string
		body               string
		ok                 bool
	}{
		{"an error body", "GET", task, 404, nil, `{"error":{"code":"task_not_found","message":"no task"}}`, true},
		{"an error body with an extra field", "GET", task, 404, nil, `{"error":{"code":"task_not_found","message":"no task","detail":1}}`, false},
		{"a 409 code at 404", "GET", task, 404, nil, `{"error":{"code":"task_busy","message":"busy"}}`, false},
		{"an undocumented status", "GET", task, 418, nil, `{"error":{"code":"internal","message":"x"}}`, false},
		{"a Failed outcome", "POST", "/agents/acc/invoke", 502, nil, failed("model_error"), true},
		{"a Failed outcome at another code's status", "POST", "/agents/acc/invoke", 502, nil, failed("throttled"), false},
		{"a list", "GET", "/agents/acc/tasks", 200, nil, `{"tasks":[],"next_cursor":null}`, true},
		{"a list without next_cursor", "GET", "/agents/acc/tasks", 200, nil, `{"tasks":[]}`, false},
		{"a task summary with a number for a status", "GET", "/agents/acc/tasks", 200, nil,
			`{"tasks":[{"task_id":"0190a8c2-7b3d-7c1e-9f00-000000000001","session_id":"0190a8c2-7b3d-7c1e-9f00-000000000002","agent":"acc","status":3,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","metadata":{}}],"next_cursor":null}`, false},
		{"an unknown route's answer", "GET", "/nowhere", 404, nil, `{"error":{"code":"route_not_found","message":"no route"}}`, true},
		{"an unknown route answered 200", "GET", "/nowhere", 200, nil, `{}`, false},
		{"a stream", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answer\ndata: {\"delta\":\"hi\"}\n\n: keepalive\n\n", true},
		{"a stream with an unknown event", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answered\ndata: {\"delta\":\"hi\"}\n\n", false},
		{"an event with the wrong data", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 1\nevent: answer\ndata: {\"text\":\"hi\"}\n\n", false},
		{"a request_complete that is not a RequestResult", "GET", task + "/requests/0190a8c2-7b3d-7c1e-9f00-000000000003/events", 200, sseHeader,
			"id: 2\nevent: request_complete\ndata: {\"status\":\"Done\"}\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			req := httptest.NewRequest(tc.method, tc.path, nil)
			rec := &recorder{w: httptest.NewRecorder(), header: http.Header{}}
			h.ServeHTTP(rec, req)
			err := checkResponse(req, rec.result())
			if (err == nil) != tc.ok {
				t.Errorf("checkResponse = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func failed(code string) string {
	return `{"session_id":"0190a8c2-7b3d-7c1e-9f00-000000000002","task_id":"0190a8c2-7b3d-7c1e-9f00-000000000001",` +
		`"request_id":"0190a8c2-7b3d-7c1e-9f00-000000000003","status":"Failed","error":{"code":"` + code + `","message":"x"},` +
		`"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0},"source":"acc:0.1"}`
}
