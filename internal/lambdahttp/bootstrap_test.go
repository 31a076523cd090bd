package lambdahttp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/lambdahttp/fakeruntime"
)

var echoBinary struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildEcho builds testdata/echo as Hitch's functions are built for Lambda,
// once per test binary.
func buildEcho(tb testing.TB) string {
	tb.Helper()
	echoBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "lambdahttp-echo-")
		if err != nil {
			echoBinary.err = err
			return
		}
		echoBinary.path = filepath.Join(dir, "bootstrap")
		goTool, err := exec.LookPath("go")
		if err != nil {
			echoBinary.err = err
			return
		}
		cmd := exec.Command(goTool, "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
			"-o", echoBinary.path, "./testdata/echo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		echoBinary.out, echoBinary.err = cmd.CombinedOutput()
	})
	if echoBinary.err != nil {
		tb.Fatalf("build testdata/echo: %v\n%s", echoBinary.err, echoBinary.out)
	}
	return echoBinary.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if echoBinary.path != "" {
		os.RemoveAll(filepath.Dir(echoBinary.path))
	}
	os.Exit(code)
}

// startEcho runs the built bootstrap against a new fake Runtime API.
func startEcho(tb testing.TB, env ...string) (*fakeruntime.Server, *exec.Cmd, *bytes.Buffer) {
	tb.Helper()
	bin := buildEcho(tb)
	fake := fakeruntime.New(tb)
	var logs bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+fake.Addr()), env...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if tb.Failed() {
			tb.Logf("bootstrap output:\n%s", logs.String())
		}
	})
	return fake, cmd, &logs
}

func proxyEvent(tb testing.TB, ev events.APIGatewayProxyRequest) []byte {
	tb.Helper()
	if ev.RequestContext.RequestID == "" {
		ev.RequestContext.RequestID = "apigw-req-1"
		ev.RequestContext.Stage = "prod"
	}
	b, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestBootstrapStreamsHTTPResponse(t *testing.T) {
	fake, _, _ := startEcho(t)
	ev := events.APIGatewayProxyRequest{
		HTTPMethod:                      "POST",
		Resource:                        "/echo/{name}",
		Path:                            "/echo/acc",
		PathParameters:                  map[string]string{"name": "acc"},
		MultiValueQueryStringParameters: map[string][]string{"tag": {"a", "b"}},
		MultiValueHeaders: map[string][]string{
			"Content-Type":    {"application/json"},
			"X-Hitch-User-Id": {"impostor"},
		},
		Body:            base64.StdEncoding.EncodeToString([]byte(`{"hello":"world"}`)),
		IsBase64Encoded: true,
		RequestContext: events.APIGatewayProxyRequestContext{
			Authorizer: map[string]any{"user_id": "u-1", "tenant_id": "t-1", "scopes": "hitch.use", "principalId": "u-1"},
		},
	}
	inv := wait(t, fake, fake.Enqueue(proxyEvent(t, ev)))
	if p := fakeruntime.StreamingProblems(inv); len(p) > 0 {
		t.Fatalf("the response POST was not streamed: %v", p)
	}
	prelude, body, err := fakeruntime.SplitFrame(inv.Body)
	if err != nil {
		t.Fatal(err)
	}
	var gotPrelude map[string]any
	if err := json.Unmarshal(prelude, &gotPrelude); err != nil {
		t.Fatalf("prelude %q: %v", prelude, err)
	}
	wantPrelude := map[string]any{
		"statusCode":        float64(201),
		"headers":           map[string]any{"Content-Type": "application/json"},
		"multiValueHeaders": map[string]any{"X-Multi": []any{"a", "b"}},
		"cookies":           []any{},
	}
	if diff := cmp.Diff(wantPrelude, gotPrelude); diff != "" {
		t.Errorf("prelude (-want +got):\n%s", diff)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	want := map[string]any{
		"method": "POST", "path": "/echo/acc", "name": "acc",
		"query":      map[string]any{"tag": []any{"a", "b"}},
		"headers":    map[string]any{"Content-Type": []any{"application/json"}},
		"body":       `{"hello":"world"}`,
		"authorizer": map[string]any{"user_id": "u-1", "tenant_id": "t-1", "scopes": "hitch.use", "principalId": "u-1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the handler saw (-want +got):\n%s", diff)
	}
}

// Event one must reach the Runtime API while the handler is still blocked
// before producing event two: the handler waits on a gate this test opens
// only after it has seen event one arrive.
func TestBootstrapStreamsEventsAsProduced(t *testing.T) {
	fake, _, _ := startEcho(t)
	reached, open := make(chan struct{}), make(chan struct{})
	var once sync.Once
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(reached) })
		select {
		case <-open:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(gate.Close)
	t.Cleanup(func() {
		select {
		case <-open:
		default:
			close(open)
		}
	})

	id := fake.Enqueue(proxyEvent(t, events.APIGatewayProxyRequest{
		HTTPMethod:            "GET",
		Path:                  "/sse",
		QueryStringParameters: map[string]string{"gate": gate.URL},
		Headers:               map[string]string{"Accept": "text/event-stream"},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.WaitBody(ctx, id, `"delta":"one"`); err != nil {
		t.Fatalf("event one never arrived: %v", err)
	}
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the handler never reached the gate")
	}
	opened := time.Now()
	close(open)

	inv := wait(t, fake, id)
	if p := fakeruntime.StreamingProblems(inv); len(p) > 0 {
		t.Fatalf("the response POST was not streamed: %v", p)
	}
	prelude, body, err := fakeruntime.SplitFrame(inv.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prelude), `"Content-Type":"text/event-stream"`) || !strings.HasPrefix(string(prelude), `{"statusCode":200,`) {
		t.Errorf("prelude = %s", prelude)
	}
	wantBody := "id: 1\nevent: answer\ndata: {\"delta\":\"one\"}\n\nid: 2\nevent: answer\ndata: {\"delta\":\"two\"}\n\n"
	if string(body) != wantBody {
		t.Errorf("body = %q, want %q", body, wantBody)
	}
	// Event one arrived in a chunk of its own, before the gate opened; event
	// two after.
	var oneAt, twoAt time.Time
	for _, c := range inv.Chunks {
		if bytes.Contains(c.Data, []byte(`"one"`)) {
			oneAt = c.At
		}
		if bytes.Contains(c.Data, []byte(`"two"`)) {
			twoAt = c.At
		}
	}
	if oneAt.IsZero() || twoAt.IsZero() || !oneAt.Before(opened) || twoAt.Before(opened) {
		t.Errorf("event one at %v, event two at %v, gate opened at %v", oneAt, twoAt, opened)
	}
}

func TestBootstrapPanicEndsStreamWithErrorEvent(t *testing.T) {
	fake, _, _ := startEcho(t)
	inv := wait(t, fake, fake.Enqueue(proxyEvent(t, events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/panic"})))
	_, body, err := fakeruntime.SplitFrame(inv.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := "id: 1\nevent: answer\ndata: {\"delta\":\"one\"}\n\nevent: error\ndata: {\"code\":\"internal\","
	if !strings.HasPrefix(string(body), want) || !strings.HasSuffix(string(body), "\n\n") {
		t.Errorf("body = %q, want it to start with %q", body, want)
	}
	// The process survives and answers the next invocation.
	if inv := wait(t, fake, fake.Enqueue([]byte(`{"ping":1}`))); inv.Kind != "response" {
		t.Errorf("after the panic: %q %s", inv.Kind, inv.Body)
	}
}

func TestBootstrapDirectInvocation(t *testing.T) {
	fake, _, _ := startEcho(t)

	inv := wait(t, fake, fake.Enqueue([]byte(`{"agent":"acc","items":[{"content":"hi"}]}`)))
	if inv.Kind != "response" || inv.Header.Get("Content-Type") != "application/json" {
		t.Errorf("answered %q, Content-Type %q", inv.Kind, inv.Header.Get("Content-Type"))
	}
	if got, want := string(inv.Body), `{"direct":{"agent":"acc","items":[{"content":"hi"}]}}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}

	e := decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"refuse":"task_busy"}`))))
	if diff := cmp.Diff(errorBody{ErrorMessage: "refused as asked", ErrorType: "Hitch.task_busy"}, e); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}

	e = decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"fail":true}`))))
	if e.ErrorType != "Hitch.internal" || strings.Contains(e.ErrorMessage, "secret") {
		t.Errorf("failure = %+v", e)
	}
}

func TestBootstrapInitError(t *testing.T) {
	fake, cmd, _ := startEcho(t, "ECHO_INIT_FAIL=1")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the bootstrap exited 0 after an init error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the bootstrap did not exit")
	}
	inv, ok := fake.InitError()
	if !ok {
		t.Fatal("no init error reported")
	}
	if got := inv.Header.Get("Lambda-Runtime-Function-Error-Type"); got != "Runtime.InitError" {
		t.Errorf("init error type = %q", got)
	}
}
