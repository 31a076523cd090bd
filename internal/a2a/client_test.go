package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	hitcha2a "github.com/hitch-agents/hitch/internal/a2a"
	"github.com/hitch-agents/hitch/internal/agent"
)

// A remote agent's calls carry the entry's headers and the caller's trace
// (W3C traceparent); the remote's JSON-RPC error with a Hitch code comes
// back as that code.
func TestRemoteHeadersAndTrace(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32001,"message":"no task x","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"code":"task_not_found"}}]}}`))
	}))
	t.Cleanup(srv.Close)
	r := hitcha2a.NewRemote(srv.URL+"/a2a/billing", map[string]string{"Authorization": "Bearer k", "X-Tenant": "t1"}, nil)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	_, err := r.Get(ctx, "c", "x")
	ae, ok := err.(*agent.Error)
	if !ok || ae.Code != agent.CodeTaskNotFound {
		t.Errorf("Get = %v, want the remote's task_not_found", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Get("Authorization") != "Bearer k" || got.Get("X-Tenant") != "t1" {
		t.Errorf("headers %v", got)
	}
	if tp := got.Get("Traceparent"); !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Errorf("traceparent %q, want the caller's trace", tp)
	}
}

// A message whose first send broke after it left, and whose later sends
// found no connection, may have landed: Send never calls it not sent (the
// engine would give the call an error result and leave the remote's task
// below a caller that moved on).
func TestSendMayHaveLanded(t *testing.T) {
	var srv *httptest.Server
	var mu sync.Mutex
	sends := 0
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sends++
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		// The message arrived; the connection breaks before an answer,
		// and the remote goes away.
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		go srv.Listener.Close()
	}))
	t.Cleanup(srv.Close)
	r := hitcha2a.NewRemote(srv.URL+"/a2a/leaf", nil, nil)
	_, err := r.Send(context.Background(), "", "m-1", "hello", nil)
	if err == nil {
		t.Fatal("Send succeeded")
	}
	if errors.Is(err, agent.ErrNotSent) {
		t.Errorf("Send = %v: called not sent, but the first send landed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sends != 1 {
		t.Errorf("the remote saw %d sends, want 1 (then it was gone)", sends)
	}
}
