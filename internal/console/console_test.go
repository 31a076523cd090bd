package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/chromium"
	"github.com/hitch-agents/hitch/internal/console"
)

func TestHandler(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "api "+r.URL.Path)
	})
	srv := httptest.NewServer(console.Mount(api))
	t.Cleanup(srv.Close)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path string
		status       int
		contentType  string // prefix
		body         string // substring
		location     string
	}{
		{"GET", "/console", http.StatusMovedPermanently, "", "", "/console/"},
		{"GET", "/console/", http.StatusOK, "text/html", `<script type="module" src="app.js">`, ""},
		{"GET", "/console/app.js", http.StatusOK, "text/javascript", "import { API", ""},
		{"GET", "/console/sse.js", http.StatusOK, "text/javascript", "export class SSEParser", ""},
		{"GET", "/console/console.css", http.StatusOK, "text/css", "@media", ""},
		{"HEAD", "/console/", http.StatusOK, "text/html", "", ""},
		{"GET", "/console/missing.js", http.StatusNotFound, "", "", ""},
		{"POST", "/console/", http.StatusMethodNotAllowed, "", "", ""},
		{"GET", "/agents", http.StatusTeapot, "", "api /agents", ""},
		{"GET", "/consoles", http.StatusTeapot, "", "api /consoles", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("Content-Type %q, want %s…", ct, tc.contentType)
			}
			if !strings.Contains(string(b), tc.body) {
				t.Errorf("body %.200q lacks %q", b, tc.body)
			}
			if got := resp.Header.Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if tc.status == http.StatusOK && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("no CSP on %s", tc.path)
			}
		})
	}
}

// The console's JavaScript modules, run in a real Chromium.
func TestModules(t *testing.T) {
	ctx := chromium.New(t, 800, 600)
	srv := httptest.NewServer(console.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// A blank page of the console's origin, so that the modules import.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/console/missing")); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, js string, arg any, out any) {
		t.Helper()
		a, _ := json.Marshal(arg)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("(async (arg) => JSON.stringify(await ("+js+")(arg)))("+string(a)+")", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(v), out); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}

	t.Run("sse", func(t *testing.T) {
		type ev struct {
			ID    *string `json:"id"`
			Event string  `json:"event"`
			Data  string  `json:"data"`
		}
		id := func(s string) *string { return &s }
		tests := []struct {
			name   string
			chunks []string
			want   []ev
		}{
			{"one event", []string{"id: 1\nevent: answer\ndata: {\"delta\":\"hi\"}\n\n"},
				[]ev{{id("1"), "answer", `{"delta":"hi"}`}}},
			{"split anywhere", []string{"id", ": 7\nev", "ent: thinking\nda", "ta: {\"delta\"", ":\"x\"}\n", "\n"},
				[]ev{{id("7"), "thinking", `{"delta":"x"}`}}},
			{"CRLF split between CR and LF", []string{"id: 2\r", "\nevent: a\r\ndata: 1\r", "\n\r", "\n"},
				[]ev{{id("2"), "a", "1"}}},
			{"bare CR lines", []string{"event: a\rdata: 1\r\r"}, []ev{{nil, "a", "1"}}},
			{"data lines join", []string{"data: a\ndata: b\ndata:c\n\n"}, []ev{{nil, "message", "a\nb\nc"}}},
			{"comments and keepalives", []string{": keepalive\n\n: x\nid: 3\nevent: e\ndata: d\n\n"},
				[]ev{{id("3"), "e", "d"}}},
			{"id carries over", []string{"id: 4\nevent: a\ndata: 1\n\nevent: b\ndata: 2\n\n"},
				[]ev{{id("4"), "a", "1"}, {nil, "b", "2"}}},
			{"retry and unknown fields ignored", []string{"retry: 5\nfoo: bar\nevent: a\ndata: 1\n\n"}, []ev{{nil, "a", "1"}}},
			{"a cut event is dropped", []string{"id: 5\nevent: a\ndata: 1\n\nid: 6\nevent: b\ndata: 2\n"},
				[]ev{{id("5"), "a", "1"}}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var got []ev
				run(t, `async (chunks) => {
					const { SSEParser } = await import('/console/sse.js');
					const p = new SSEParser();
					return chunks.flatMap((c) => p.push(c));
				}`, tc.chunks, &got)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				// The same through a fetch body: the stream reader.
				var streamed []ev
				run(t, `async (chunks) => {
					const { events } = await import('/console/sse.js');
					const enc = new TextEncoder();
					const body = new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(enc.encode(x)); c.close(); } });
					const out = [];
					for await (const e of events(body)) out.push(e);
					return out;
				}`, tc.chunks, &streamed)
				if diff := cmp.Diff(tc.want, streamed); diff != "" {
					t.Errorf("streamed events (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("schema", func(t *testing.T) {
		files := map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"path"},
			"properties": map[string]any{
				"path":  map[string]any{"type": "string", "minLength": 1},
				"n":     map[string]any{"type": "integer", "minimum": 1, "maximum": 3},
				"mode":  map[string]any{"enum": []string{"a", "b"}},
				"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 2},
				"code":  map[string]any{"type": "string", "pattern": "^[A-Z]+$"},
				"ratio": map[string]any{"type": "number"},
			},
		}
		tests := []struct {
			name  string
			input any
			want  []string
		}{
			{"valid", map[string]any{"path": "a.txt", "n": 2, "mode": "a", "tags": []string{"x"}, "code": "AB", "ratio": 0.5}, []string{}},
			{"an integer is a number", map[string]any{"path": "a", "ratio": 2}, []string{}},
			{"not an object", []int{1}, []string{"input: must be an object"}},
			{"missing", map[string]any{}, []string{"input.path: is required"}},
			{"empty", map[string]any{"path": ""}, []string{"input.path: must not be empty"}},
			{"wrong type", map[string]any{"path": 5}, []string{"input.path: must be a string"}},
			{"unknown field", map[string]any{"path": "a", "x": 1}, []string{"input.x: is not a known field"}},
			{"integer bounds", map[string]any{"path": "a", "n": 4}, []string{"input.n: must be ≤ 3"}},
			{"not an integer", map[string]any{"path": "a", "n": 1.5}, []string{"input.n: must be an integer"}},
			{"enum", map[string]any{"path": "a", "mode": "c"}, []string{`input.mode: must be one of "a", "b"`}},
			{"items", map[string]any{"path": "a", "tags": []any{"x", 1, "y"}}, []string{"input.tags: must have at most 2 items", "input.tags[1]: must be a string"}},
			// A pattern is the server's to check (RE2, linear time; its 400
			// names the field): the console never evaluates one.
			{"pattern", map[string]any{"path": "a", "code": "ab"}, []string{}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var got []string
				run(t, `async (a) => (await import('/console/schema.js')).validate(a.schema, a.input)`,
					map[string]any{"schema": files, "input": tc.input}, &got)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			})
		}
		// A pattern a backtracking engine takes exponential time on: the
		// check returns (the context's deadline is only a safety net).
		var got []string
		run(t, `async (a) => (await import('/console/schema.js')).validate(a.schema, a.input)`,
			map[string]any{"schema": map[string]any{"type": "string", "pattern": "^(x+x+)+y$"}, "input": strings.Repeat("x", 32)}, &got)
		if len(got) != 0 {
			t.Errorf("a hostile pattern: %q, want it left to the server", got)
		}
	})
}

// TestNoPatternEvaluated: the console builds no regular expression from
// what a server or a model sent (a schema's pattern): its scripts hold no
// RegExp constructor at all, so a hostile pattern cannot freeze the tab.
func TestNoPatternEvaluated(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the console's scripts: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "RegExp(") {
			t.Errorf("%s constructs a RegExp: a schema's pattern is the server's to check", f)
		}
	}
}
