// Command echo is a Lambda function for lambdahttp's runtime tests, built
// like Hitch's functions (CGO_ENABLED=0, -tags lambda.norpc, -trimpath) and
// run against a fake Runtime API.
//
//	/echo      answers the request as JSON (method, path, query, headers,
//	           body, authorizer)
//	/sse       streams event one, waits for GET ?gate=URL to answer, streams
//	           event two
//	/panic     streams an SSE event, then panics
//
// Direct payloads: {"refuse": "code"} fails with errorType Hitch.<code>,
// {"fail": true} with a plain error; anything else is echoed as {"direct": …}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

func main() {
	if os.Getenv("ECHO_INIT_FAIL") != "" {
		lambdahttp.ExitInitError(errors.New("echo: told to fail at init"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/{name}", echo)
	mux.HandleFunc("/sse", sse)
	mux.HandleFunc("/panic", panicky)
	lambdahttp.Start(lambdahttp.New(mux, direct).Handle)
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{
		"method":     r.Method,
		"path":       r.URL.Path,
		"name":       r.PathValue("name"),
		"query":      r.URL.Query(),
		"headers":    r.Header,
		"body":       string(b),
		"authorizer": lambdahttp.Authorizer(r.Context()),
	})
}

func sse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, "id: 1\nevent: answer\ndata: {\"delta\":\"one\"}\n\n")
	w.(http.Flusher).Flush()
	if gate := r.URL.Query().Get("gate"); gate != "" {
		resp, err := http.Get(gate)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	fmt.Fprint(w, "id: 2\nevent: answer\ndata: {\"delta\":\"two\"}\n\n")
}

func panicky(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "id: 1\nevent: answer\ndata: {\"delta\":\"one\"}\n\n")
	panic("echo: boom")
}

func direct(ctx context.Context, payload json.RawMessage) (any, error) {
	var in struct {
		Refuse string `json:"refuse"`
		Fail   bool   `json:"fail"`
	}
	json.Unmarshal(payload, &in)
	switch {
	case in.Refuse != "":
		return nil, lambdahttp.Refusal(in.Refuse, "refused as asked")
	case in.Fail:
		return nil, errors.New("echo: a secret internal failure")
	}
	return map[string]any{"direct": payload}, nil
}
