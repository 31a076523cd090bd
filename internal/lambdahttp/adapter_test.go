package lambdahttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// quiet drops the logs of the panics the tests cause on purpose.
var quiet = slog.New(slog.DiscardHandler)

// serve runs h on ev through the adapter, failing if it does not answer soon.
func serve(tb testing.TB, h http.Handler, ev events.APIGatewayProxyRequest) *events.APIGatewayProxyStreamingResponse {
	tb.Helper()
	type result struct {
		resp *events.APIGatewayProxyStreamingResponse
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		a := lambdahttp.New(h, nil)
		a.Log = quiet
		resp, err := a.ServeEvent(context.Background(), ev)
		ch <- result{resp, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			tb.Fatalf("ServeEvent: %v", r.err)
		}
		tb.Cleanup(func() { r.resp.Close() })
		return r.resp
	case <-time.After(10 * time.Second):
		tb.Fatal("ServeEvent did not return")
		return nil
	}
}

// readAll reads the body to its end, failing instead of hanging.
func readAll(tb testing.TB, r io.Reader) (string, error) {
	tb.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return string(r.b), r.err
	case <-time.After(10 * time.Second):
		tb.Fatal("the body did not end")
		return "", nil
	}
}

func get(path string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, Path: path}
}

func TestStatusAndHeadersAtFirstWrite(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("Content-Length", "999") // framing is the runtime's
		w.WriteHeader(http.StatusAccepted)
		<-release // ServeEvent must have returned by now
		w.Header().Set("X-Late", "ignored")
		io.WriteString(w, `{"ok":true}`)
	})
	resp := serve(t, h, get("/x"))
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("StatusCode = %d, want 202", resp.StatusCode)
	}
	if diff := cmp.Diff(map[string]string{"Content-Type": "application/json"}, resp.Headers); diff != "" {
		t.Errorf("Headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"Set-Cookie": {"a=1", "b=2"}}, resp.MultiValueHeaders); diff != "" {
		t.Errorf("MultiValueHeaders (-want +got):\n%s", diff)
	}
	close(release)
	got, err := readAll(t, resp.Body)
	if err != nil || got != `{"ok":true}` {
		t.Errorf("body = %q, %v", got, err)
	}
	if _, ok := resp.Headers["X-Late"]; ok {
		t.Error("a header set after the commit reached the response")
	}
}

func TestWriteWithoutWriteHeader(t *testing.T) {
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hi</html>")
	}), get("/"))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Headers["Content-Type"], "text/html") {
		t.Errorf("status %d, Content-Type %q; want 200 and a sniffed text/html", resp.StatusCode, resp.Headers["Content-Type"])
	}
}

func TestFlushCommits(t *testing.T) {
	release := make(chan struct{})
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-release
	}), get("/"))
	if resp.StatusCode != 200 || resp.Headers["Content-Type"] != "text/event-stream" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Headers)
	}
	close(release)
	if got, err := readAll(t, resp.Body); got != "" || err != nil {
		t.Errorf("body = %q, %v; want empty", got, err)
	}
}

// Each write reaches the reader before the handler goes on: nothing sits in a
// buffer.
func TestWritesAreUnbuffered(t *testing.T) {
	step := make(chan struct{})
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "event %d\n", i)
			<-step
		}
	}), get("/"))
	buf := make([]byte, 64)
	for i := range 3 {
		n, err := resp.Body.Read(buf)
		if want := fmt.Sprintf("event %d\n", i); string(buf[:n]) != want || err != nil {
			t.Fatalf("read %d = %q, %v; want %q", i, buf[:n], err, want)
		}
		step <- struct{}{}
	}
	if rest, err := readAll(t, resp.Body); rest != "" || err != nil {
		t.Errorf("rest = %q, %v", rest, err)
	}
}

func TestRequestMapping(t *testing.T) {
	ev := events.APIGatewayProxyRequest{
		HTTPMethod:     http.MethodPost,
		Resource:       "/agents/{agent}/invoke",
		Path:           "/agents/acc/invoke",
		PathParameters: map[string]string{"agent": "acc"},
		QueryStringParameters: map[string]string{
			"status": "Paused", "tag": "b", "single": "only",
		},
		MultiValueQueryStringParameters: map[string][]string{
			"status": {"Paused"}, "tag": {"a", "b"}, "q": {"x y&z"},
		},
		Headers: map[string]string{"host": "api.example.com", "accept": "text/event-stream", "x-one": "1"},
		MultiValueHeaders: map[string][]string{
			"Host": {"api.example.com"}, "Accept": {"text/event-stream"}, "X-Many": {"1", "2"},
		},
		Body:            base64.StdEncoding.EncodeToString([]byte("\x00binary\xff")),
		IsBase64Encoded: true,
		RequestContext: events.APIGatewayProxyRequestContext{
			Identity: events.APIGatewayRequestIdentity{SourceIP: "203.0.113.7"},
			Stage:    "prod",
		},
	}
	type seen struct {
		Method, Path, Host, RemoteAddr, RequestURI, Agent, Body string
		Query                                                   url.Values
		Header                                                  http.Header
		ContentLength                                           int64
		Stage                                                   string
	}
	var got seen
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc, _ := lambdahttp.ProxyRequestContext(r.Context())
		got = seen{r.Method, r.URL.Path, r.Host, r.RemoteAddr, r.RequestURI, r.PathValue("agent"), string(b),
			r.URL.Query(), r.Header, r.ContentLength, rc.Stage}
	}), ev)
	readAll(t, resp.Body)
	want := seen{
		Method: "POST", Path: "/agents/acc/invoke", Host: "api.example.com", RemoteAddr: "203.0.113.7:0",
		RequestURI: "/agents/acc/invoke?q=x+y%26z&single=only&status=Paused&tag=a&tag=b",
		Agent:      "acc", Body: "\x00binary\xff",
		Query:  url.Values{"status": {"Paused"}, "tag": {"a", "b"}, "q": {"x y&z"}, "single": {"only"}},
		Header: http.Header{"Accept": {"text/event-stream"}, "X-Many": {"1", "2"}, "X-One": {"1"}},
		// the decoded length, not the base64 one
		ContentLength: 8, Stage: "prod",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestBadBase64IsAFunctionError(t *testing.T) {
	_, err := lambdahttp.New(http.NotFoundHandler(), nil).ServeEvent(context.Background(),
		events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/", Body: "!!!", IsBase64Encoded: true})
	var fe *lambdahttp.FunctionError
	if !errors.As(err, &fe) || fe.Type != "Hitch.invalid_event" {
		t.Errorf("err = %v, want a Hitch.invalid_event FunctionError", err)
	}
}

func TestAuthorizerContextAndHeaderStripping(t *testing.T) {
	ev := get("/me")
	ev.RequestContext.Authorizer = map[string]any{"user_id": "u-1", "tenant_id": "t-1", "scopes": "hitch.use", "principalId": "u-1"}
	ev.MultiValueHeaders = map[string][]string{
		"X-Hitch-User-Id":      {"admin"},
		"x-authorizer-user_id": {"admin"},
		"X-Amzn-Oidc-Identity": {"admin"},
		"X-Forwarded-User":     {"admin"},
		"X-User-Id":            {"admin"},
		"Authorization":        {"Bearer t"},
	}
	var auth map[string]any
	var hdr http.Header
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, hdr = lambdahttp.Authorizer(r.Context()), r.Header
	}), ev)
	readAll(t, resp.Body)
	if diff := cmp.Diff(ev.RequestContext.Authorizer, auth); diff != "" {
		t.Errorf("Authorizer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(http.Header{"Authorization": {"Bearer t"}}, hdr); diff != "" {
		t.Errorf("headers after stripping (-want +got):\n%s", diff)
	}
}

func TestNoAuthorizer(t *testing.T) {
	var auth map[string]any
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = lambdahttp.Authorizer(r.Context())
	}), get("/health"))
	readAll(t, resp.Body)
	if auth != nil {
		t.Errorf("Authorizer = %v, want nil", auth)
	}
}

func TestHandlerReturnsWithoutWriting(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want int
	}{
		{"nothing", func(w http.ResponseWriter, r *http.Request) {}, 200},
		{"status only", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, 204},
		{"informational then nothing", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusEarlyHints) }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := serve(t, tc.h, get("/"))
			if resp.StatusCode != tc.want {
				t.Errorf("StatusCode = %d, want %d", resp.StatusCode, tc.want)
			}
			if got, err := readAll(t, resp.Body); got != "" || err != nil {
				t.Errorf("body = %q, %v; want empty", got, err)
			}
		})
	}
}

func TestPanics(t *testing.T) {
	const errEvent = "event: error\ndata: {\"code\":\"internal\","
	for _, tc := range []struct {
		name       string
		h          http.HandlerFunc
		wantStatus int
		wantBody   func(string) bool
		wantErr    error
	}{
		{
			name:       "before the first byte: 500 JSON",
			h:          func(w http.ResponseWriter, r *http.Request) { panic("boom") },
			wantStatus: 500,
			wantBody: func(b string) bool {
				var e struct{ Error struct{ Code string } }
				return json.Unmarshal([]byte(b), &e) == nil && e.Error.Code == "internal" && !strings.Contains(b, "boom")
			},
		},
		{
			name: "after a whole SSE event: an error event",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
				io.WriteString(w, "id: 1\nevent: answer\ndata: {}\n\n")
				panic("boom")
			},
			wantStatus: 200,
			wantBody: func(b string) bool {
				return strings.HasPrefix(b, "id: 1\nevent: answer\ndata: {}\n\n"+errEvent) && strings.HasSuffix(b, "}\n\n")
			},
		},
		{
			name: "inside an SSE event: the event is ended first",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: answer\ndata: {\"de")
				panic("boom")
			},
			wantStatus: 200,
			wantBody:   func(b string) bool { return strings.Contains(b, "{\"de\n\n"+errEvent) },
		},
		{
			name: "after the first byte of JSON: the body is cut",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, "{\"a\":")
				panic("boom")
			},
			wantStatus: 200,
			wantBody:   func(b string) bool { return b == "{\"a\":" },
			wantErr:    lambdahttp.ErrHandlerPanic,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := serve(t, tc.h, get("/"))
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("StatusCode = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			got, err := readAll(t, resp.Body)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("read error = %v, want %v", err, tc.wantErr)
			}
			if !tc.wantBody(got) {
				t.Errorf("unexpected body %q", got)
			}
		})
	}
}

// Closing the body (the runtime does, after sending it) stops the handler's
// writes and waits for the handler to return.
func TestCloseWaitsForTheHandler(t *testing.T) {
	wrote := make(chan error, 1)
	returned := make(chan struct{})
	resp := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		w.WriteHeader(200)
		time.Sleep(20 * time.Millisecond) // let Close come first
		_, err := io.WriteString(w, "nobody reads this")
		wrote <- err
	}), get("/"))
	if err := resp.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the handler")
	}
	if err := <-wrote; err == nil {
		t.Error("a write after Close succeeded")
	}
}

func TestIsProxyEvent(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  bool
	}{
		{`{"httpMethod":"GET","path":"/"}`, true},
		{`  {"resource":"/","requestContext":{}}`, true},
		{`{"agent":"acc","user_id":"u","items":[{"content":"hi"}]}`, false},
		{`{"body":"{\"httpMethod\":1}"}`, false},
		{`"httpMethod"`, false},
		{`[{"httpMethod":"GET"}]`, false},
		{`null`, false},
		{``, false},
	} {
		if got := lambdahttp.IsProxyEvent(json.RawMessage(tc.event)); got != tc.want {
			t.Errorf("IsProxyEvent(%s) = %v, want %v", tc.event, got, tc.want)
		}
	}
}

func TestHandleDispatch(t *testing.T) {
	var direct json.RawMessage
	h := lambdahttp.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "http")
	}), func(ctx context.Context, payload json.RawMessage) (any, error) {
		direct = payload
		return "direct", nil
	})
	ctx := context.Background()

	out, err := h.Handle(ctx, json.RawMessage(`{"agent":"acc"}`))
	if out != "direct" || err != nil || string(direct) != `{"agent":"acc"}` {
		t.Errorf("direct: %v, %v, payload %s", out, err, direct)
	}

	out, err = h.Handle(ctx, json.RawMessage(`{"httpMethod":"GET","path":"/","requestContext":{"authorizer":{"user_id":"u"}}}`))
	resp, ok := out.(*events.APIGatewayProxyStreamingResponse)
	if !ok || err != nil {
		t.Fatalf("proxy: %T, %v; want *events.APIGatewayProxyStreamingResponse", out, err)
	}
	defer resp.Close()
	if got, _ := readAll(t, resp.Body); got != "http" {
		t.Errorf("proxy body = %q", got)
	}

	_, err = lambdahttp.New(http.NotFoundHandler(), nil).Handle(ctx, json.RawMessage(`{"agent":"acc"}`))
	var fe *lambdahttp.FunctionError
	if !errors.As(err, &fe) || fe.Type != "Hitch.unsupported_event" {
		t.Errorf("no direct func: err = %v", err)
	}
}
