package lambdahttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/lambdahttp"
	"github.com/hitch-agents/hitch/internal/lambdahttp/fakeruntime"
)

// runLoop runs lambdahttp.Run against a new fake Runtime API until the test
// ends.
func runLoop(tb testing.TB, fn lambdahttp.HandlerFunc) *fakeruntime.Server {
	tb.Helper()
	fake := fakeruntime.New(tb)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lambdahttp.Run(ctx, fake.Addr(), fn) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("Run did not return after its context ended")
		}
	})
	return fake
}

func wait(tb testing.TB, fake *fakeruntime.Server, id string) fakeruntime.Invocation {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inv, err := fake.Wait(ctx, id)
	if err != nil {
		tb.Fatalf("invocation %s: %v", id, err)
	}
	return inv
}

type errorBody struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

func decodeError(tb testing.TB, inv fakeruntime.Invocation) errorBody {
	tb.Helper()
	if inv.Kind != "error" {
		tb.Fatalf("answered %q, want error; body %q", inv.Kind, inv.Body)
	}
	var e errorBody
	if err := json.Unmarshal(inv.Body, &e); err != nil {
		tb.Fatalf("error body %q: %v", inv.Body, err)
	}
	if got := inv.Header.Get("Lambda-Runtime-Function-Error-Type"); got != e.ErrorType {
		tb.Errorf("Lambda-Runtime-Function-Error-Type = %q, body's errorType %q", got, e.ErrorType)
	}
	return e
}

func TestRunDirectInvocations(t *testing.T) {
	h := lambdahttp.New(http.NotFoundHandler(), func(ctx context.Context, p json.RawMessage) (any, error) {
		var in struct{ Do string }
		json.Unmarshal(p, &in)
		switch in.Do {
		case "refuse":
			return nil, lambdahttp.Refusal("task_busy", "The task is running a request.")
		case "wrapped":
			return nil, errors.Join(errors.New("context"), lambdahttp.Refusal("task_paused", "paused"))
		case "fail":
			return nil, errors.New("dynamodb: secret table name")
		case "panic":
			panic("boom")
		case "context":
			lc, _ := lambdacontext.FromContext(ctx)
			dl, _ := ctx.Deadline()
			return map[string]any{"request_id": lc.AwsRequestID, "deadline_in_future": time.Until(dl) > 30*time.Second}, nil
		}
		return map[string]any{"status": "Completed", "echo": p}, nil
	})
	fake := runLoop(t, h.Handle)

	t.Run("result as buffered JSON", func(t *testing.T) {
		inv := wait(t, fake, fake.Enqueue([]byte(`{"agent":"acc","items":[]}`)))
		if inv.Kind != "response" || inv.Header.Get("Content-Type") != "application/json" {
			t.Errorf("answered %q with Content-Type %q", inv.Kind, inv.Header.Get("Content-Type"))
		}
		if inv.Header.Get("Lambda-Runtime-Function-Response-Mode") != "" || len(inv.TransferEncoding) != 0 {
			t.Errorf("a direct result was streamed: %v %v", inv.Header, inv.TransferEncoding)
		}
		if got, want := string(inv.Body), `{"echo":{"agent":"acc","items":[]},"status":"Completed"}`; got != want {
			t.Errorf("body = %s, want %s", got, want)
		}
	})
	t.Run("refusal sets errorType", func(t *testing.T) {
		e := decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"do":"refuse"}`))))
		want := errorBody{ErrorMessage: "The task is running a request.", ErrorType: "Hitch.task_busy"}
		if diff := cmp.Diff(want, e); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("wrapped refusal", func(t *testing.T) {
		if e := decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"do":"wrapped"}`)))); e.ErrorType != "Hitch.task_paused" {
			t.Errorf("errorType = %q", e.ErrorType)
		}
	})
	t.Run("other errors are internal and not shown", func(t *testing.T) {
		e := decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"do":"fail"}`))))
		if e.ErrorType != lambdahttp.DefaultErrorType || strings.Contains(e.ErrorMessage, "secret") {
			t.Errorf("error = %+v", e)
		}
	})
	t.Run("panic is an internal error and the loop goes on", func(t *testing.T) {
		if e := decodeError(t, wait(t, fake, fake.Enqueue([]byte(`{"do":"panic"}`)))); e.ErrorType != "Hitch.internal" {
			t.Errorf("error = %+v", e)
		}
		if inv := wait(t, fake, fake.Enqueue([]byte(`{}`))); inv.Kind != "response" {
			t.Errorf("after a panic: %q", inv.Kind)
		}
	})
	t.Run("context carries request id and deadline", func(t *testing.T) {
		id := fake.Enqueue([]byte(`{"do":"context"}`))
		inv := wait(t, fake, id)
		var got map[string]any
		json.Unmarshal(inv.Body, &got)
		if diff := cmp.Diff(map[string]any{"request_id": id, "deadline_in_future": true}, got); diff != "" {
			t.Errorf("context (-want +got):\n%s", diff)
		}
	})
}

func TestRunStreamsProxyEvents(t *testing.T) {
	h := lambdahttp.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cut":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a":`)
			panic("boom")
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "short and stout")
		}
	}), nil)
	h.Log = quiet
	fake := runLoop(t, h.Handle)

	inv := wait(t, fake, fake.Enqueue([]byte(`{"httpMethod":"GET","path":"/tea","requestContext":{}}`)))
	if p := fakeruntime.StreamingProblems(inv); len(p) > 0 {
		t.Errorf("not streamed: %v", p)
	}
	prelude, body, err := fakeruntime.SplitFrame(inv.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(prelude), `{"statusCode":418,"headers":{"Content-Type":"text/plain"},"cookies":[]}`; got != want {
		t.Errorf("prelude = %s, want %s", got, want)
	}
	if string(body) != "short and stout" {
		t.Errorf("body = %q", body)
	}

	// A body cut by a panic is reported in the trailers.
	inv = wait(t, fake, fake.Enqueue([]byte(`{"httpMethod":"GET","path":"/cut","requestContext":{}}`)))
	_, body, _ = fakeruntime.SplitFrame(inv.Body)
	if string(body) != `{"a":` {
		t.Errorf("cut body = %q", body)
	}
	if got := inv.Trailer.Get("Lambda-Runtime-Function-Error-Type"); got != "Hitch.internal" {
		t.Errorf("trailer error type = %q, want Hitch.internal (trailers %v)", got, inv.Trailer)
	}
	if b, err := base64.StdEncoding.DecodeString(inv.Trailer.Get("Lambda-Runtime-Function-Error-Body")); err != nil || !strings.Contains(string(b), `"errorType":"Hitch.internal"`) {
		t.Errorf("trailer error body = %q, %v", b, err)
	}
}

func TestRunWithoutRuntimeAPI(t *testing.T) {
	if err := lambdahttp.Run(context.Background(), "", nil); err == nil {
		t.Error("Run with no Runtime API address succeeded")
	}
}
