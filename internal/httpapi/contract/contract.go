// Package contract holds the HTTP API to its document: it checks responses
// against docs/openapi.yaml with kin-openapi, which loads OpenAPI 3.1 and
// validates 3.1 schemas as JSON Schema 2020-12. Tests wrap the API's
// handler with Check; every response is then checked for its status (it
// must be documented for the route and method), its headers, its JSON body
// and, for a stream, each Server-Sent Event parsed into {id, event, data}.
package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// Document is docs/openapi.yaml, loaded once and validated.
func Document(tb testing.TB) *openapi3.T {
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

// Check wraps an API handler so that every response it writes is checked
// against the document; mismatches fail tb when it cleans up. Call it
// before httptest.NewServer registers its Close, so that the check runs
// after every handler has returned.
func Check(tb testing.TB, h http.Handler) http.Handler {
	tb.Helper()
	Document(tb)
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
		if err := checkRecorded(r, rec.result()); err != nil {
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

// Response checks one response against the document.
func Response(req *http.Request, status int, header http.Header, body []byte) error {
	return checkRecorded(req, recorded{status, header, body})
}

func checkRecorded(req *http.Request, res recorded) error {
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
