package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// recordResumes is a reverse proxy in front of serve at base that keeps
// the body of every resume passed through it (hitch chat and the console
// reach serve through it).
func recordResumes(t *testing.T, base string) (string, func() []map[string]any) {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // streams pass as they come
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/resume") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("a resume body that is not JSON: %s", b)
			}
			mu.Lock()
			bodies = append(bodies, m)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), bodies...)
	}
}

// hitch chat names the round in every resume, with decisions as with an
// action (docs/api.md ResumeRequest: a call that asks again in a later
// round keeps its id, so a decision naming it must name its round).
func TestChatSendsRound(t *testing.T) {
	base, _, _ := startServe(t)
	proxied, resumes := recordResumes(t, base)
	in := strings.NewReader("/call ask_user {\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}\n2\n" +
		"/call ask_user {\"question\": \"Which size?\"}\nlarge\n/quit\n")
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--url", proxied, "--token", "carol"}, in, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := resumes()
	if len(got) != 2 {
		t.Fatalf("%d resumes, want 2:\n%s", len(got), out.String())
	}
	for i, b := range got {
		if _, ok := b["decisions"]; !ok || b["round"] != float64(1) {
			t.Errorf("resume %d: %v, want its decisions with round 1", i+1, b)
		}
	}
}
