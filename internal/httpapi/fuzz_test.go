package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// The fuzz targets drive the real handler (in process, through
// httptest.ResponseRecorder) with what a client controls: the bodies of
// invoke, edit, resume and cancel, Last-Event-ID and ?after=, and list
// cursors. The property: no panic, never a 5xx, and every refusal is the
// error body of docs/api.md with the status of its code. Seeds live in
// testdata/fuzz/<target>/ and in f.Add; `go test` runs them, `make fuzz`
// fuzzes.

// fuzzEnv is the engine suite's agent over a store, with a model that
// answers at once ("pause" makes it call the guarded tool).
type fuzzEnv struct {
	h http.Handler
	e *agent.Engine
}

func newFuzzEnv(tb testing.TB, store agent.Store) *fuzzEnv {
	tb.Helper()
	en := enginetest.New(tb, store)
	en.E.Now = nil
	en.E.Model = &agenttest.QuickModel{PauseTool: "guarded", PauseInput: `{"text":"x"}`}
	api := &httpapi.Server{Engine: en.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler), MaxBody: 64 << 10, JSONWait: time.Minute}
	return &fuzzEnv{h: api.Handler(), e: en.E}
}

// start runs a message of alice's to its end or pause: "pause" pauses.
func (fe *fuzzEnv) start(tb testing.TB, text string) *agent.RequestResult {
	tb.Helper()
	ctx := context.Background()
	run, err := fe.e.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: text}}})
	if err != nil {
		tb.Fatalf("invoke: %v", err)
	}
	return run.Execute(ctx, agent.Discard)
}

func (fe *fuzzEnv) serve(ctx context.Context, method, target string, body []byte, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer alice")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	fe.h.ServeHTTP(w, r)
	return w
}

// checkAnswer is the property every answer must have.
func checkAnswer(tb testing.TB, w *httptest.ResponseRecorder) {
	tb.Helper()
	if w.Code >= 500 {
		tb.Fatalf("status %d for a client's input: %s", w.Code, w.Body)
	}
	if w.Code == http.StatusNoContent {
		return
	}
	if ct := w.Header().Get("Content-Type"); ct == "text/event-stream" {
		return
	}
	if w.Code >= 400 {
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			tb.Fatalf("status %d without an error body: %q", w.Code, w.Body)
		}
		if s := httpapi.StatusOf(e.Error.Code); s != w.Code {
			tb.Fatalf("code %s answered with %d, its status is %d", e.Error.Code, w.Code, s)
		}
		return
	}
	if !json.Valid(w.Body.Bytes()) {
		tb.Fatalf("status %d with a body that is not JSON: %q", w.Code, w.Body)
	}
}

// fuzzing tells whether the test binary fuzzes (-test.fuzz) rather than
// running the seeds; targets then use only the memory store, since every
// fuzz worker would start its own DynamoDB Local.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

func FuzzInvokeBody(f *testing.F) {
	for _, s := range []struct{ body, key string }{
		{`{"items":[{"content_type":"text","content":"hi"}],"metadata":{"ticket":"ACME-42"}}`, ""},
		{`{"items":[{"content":"hi"}]}`, "pay-7"},
		{`{"session_id":"0190F3A1-5B2C-7D4E-8F60-1A2B3C4D5E6F","items":[{"content":"x"}]}`, ""},
		{`{"task_id":"0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f","items":[{"content":"x"}]}`, ""},
		{`{"items":[{"content_type":"image","content":"data:image/png;base64,iVBORw0KGgo="}]}`, ""},
		{`{"items":[{"content_type":"image","content":"data:image/gif;base64,!!"}]}`, ""},
		{`{"items":[]}`, ""},
		{`{"items":null,"metadata":null}`, ""},
		{`{"items":[{"content":"x"}],"metadata":{"n":1}}`, ""},
		{`{"items":[{"content":"x"}]} {}`, ""},
		{`[{"content":"x"}]`, ""},
		{`{"items":[{"content":"x"}],"colour":"red"}`, "tab\tkey"},
		{`{"task_id":5,"items":[{"content":"x"}]}`, ""},
		{"", ""},
	} {
		f.Add([]byte(s.body), s.key)
	}
	fe := newFuzzEnv(f, memstore.New())
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		hdr := []string{}
		if key != "" {
			hdr = append(hdr, "Idempotency-Key", key)
		}
		checkAnswer(t, fe.serve(context.Background(), "POST", "/agents/acc/invoke", body, hdr...))
	})
}

func FuzzEditBody(f *testing.F) {
	for _, b := range []string{
		`{"items":[{"content":"hello again"}]}`,
		`{"items":[{"content_type":"text","content":"pause"}]}`,
		`{"items":[{"content":"x"}],"task_id":"0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f"}`,
		`{"items":[{"content":"x"}],"metadata":{}}`,
		`{"items":[]}`,
		`{"items":[{"content_type":"video","content":"x"}]}`,
		`{"items":`,
		`null`,
		``,
	} {
		f.Add([]byte(b))
	}
	fe := newFuzzEnv(f, memstore.New())
	f.Fuzz(func(t *testing.T, body []byte) {
		done := fe.start(t, "hello")
		path := "/agents/acc/tasks/" + done.TaskID + "/requests/" + done.RequestID + "/edit"
		checkAnswer(t, fe.serve(context.Background(), "POST", path, body))
	})
}

func FuzzResumeBody(f *testing.F) {
	for _, b := range []string{
		`{"action":"approve"}`,
		`{"action":"reject","reason":"no"}`,
		`{"action":"approve","round":1}`,
		`{"action":"approve","round":0}`,
		`{"action":"approve","round":2}`,
		`{"decisions":[{"tool_call_id":"g1","action":"approve"}]}`,
		`{"decisions":[{"tool_call_id":"g1","action":"edit","input":{"text":"y"}}]}`,
		`{"decisions":[{"tool_call_id":"g1","action":"edit","input":{"nope":1}}]}`,
		`{"decisions":[{"tool_call_id":"g1","action":"edit","input":"{}"}]}`,
		`{"decisions":[{"tool_call_id":"g1","action":"reject","reason":"no"},{"tool_call_id":"g1","action":"approve"}]}`,
		`{"decisions":[{"tool_call_id":"nope","action":"approve"}]}`,
		`{"decisions":[],"action":"approve"}`,
		`{"action":"perhaps"}`,
		`{"action":"approve","round":1e400}`,
		`{"action":"approve","colour":1}`,
		`{"action":`,
		``,
	} {
		f.Add([]byte(b))
	}
	fe := newFuzzEnv(f, memstore.New())
	f.Fuzz(func(t *testing.T, body []byte) {
		p := fe.start(t, "pause")
		if p.Status != agent.StatusPaused {
			t.Fatalf("setup: %s, want Paused", p.Status)
		}
		checkAnswer(t, fe.serve(context.Background(), "POST", p.ResumeURL, body))
	})
}

func FuzzCancelBody(f *testing.F) {
	for _, b := range []string{``, ` `, `{}`, `{"reason":"not needed"}`, `{"reason":null}`, `{"reason":5}`, `{"why":"x"}`, `{"reason":"x"} 1`, `[]`, `"x"`} {
		f.Add([]byte(b))
	}
	fe := newFuzzEnv(f, memstore.New())
	f.Fuzz(func(t *testing.T, body []byte) {
		p := fe.start(t, "pause")
		checkAnswer(t, fe.serve(context.Background(), "POST", "/agents/acc/tasks/"+p.TaskID+"/cancel", body))
	})
}

// validEventID is what Last-Event-ID and ?after= accept: decimal digits
// that fit an int64 (or nothing).
func validEventID(v string) bool {
	if v == "" {
		return true
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

func FuzzLastEventID(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"0", ""}, {"3", ""}, {"", "2"}, {"1", "99"}, {"9223372036854775807", ""},
		{"9223372036854775808", ""}, {"-1", ""}, {"+1", ""}, {" 1", ""}, {"1.0", ""}, {"", "x"}, {"0x10", ""}, {"", "-0"},
	} {
		f.Add(s[0], s[1])
	}
	fe := newFuzzEnv(f, memstore.New())
	done := fe.start(f, "hello")
	path := "/agents/acc/tasks/" + done.TaskID + "/requests/" + done.RequestID + "/events"
	f.Fuzz(func(t *testing.T, header, after string) {
		target := path
		v := header
		if after != "" {
			target += "?after=" + url.QueryEscape(after)
			v = after
		}
		// A follower past the last event waits for more: the deadline ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		w := fe.serve(ctx, "GET", target, nil, "Last-Event-ID", header)
		checkAnswer(t, w)
		switch ok := validEventID(v); {
		case ok && w.Code != 200:
			t.Fatalf("Last-Event-ID %q, after %q: %d %s, want 200", header, after, w.Code, w.Body)
		case !ok && (w.Code != 400 || !strings.Contains(w.Body.String(), agent.CodeInvalidLastEventID)):
			t.Fatalf("Last-Event-ID %q, after %q: %d %s, want 400 invalid_last_event_id", header, after, w.Code, w.Body)
		}
	})
}

func FuzzListCursor(f *testing.F) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []string{
		"",
		agent.ListPosition{At: at, ID: "0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f"}.Cursor(),
		agent.ListPosition{At: time.Time{}, ID: "0190f3a1-5b2c-7d4e-8f60-1a2b3c4d5e6f"}.Cursor(),
		agent.ListPosition{At: at, ID: strings.Repeat("x", 2000)}.Cursor(),
		agent.ListPosition{At: at, ID: strings.Repeat("y", 40000)}.Cursor(),
		agent.ListPosition{At: at, ID: "TASK#x"}.Cursor(),
		"eyJhdCI6IjIwMjYtMTEtMDFUMTI6MDA6MDAuMDAwMDAwMDAwWiIsImlkIjoiIn0",
		"not-a-cursor", "zz", "====", "e30",
	} {
		f.Add(c)
	}
	type target struct {
		fe  *fuzzEnv
		sid string
	}
	var targets []target
	add := func(store agent.Store) {
		fe := newFuzzEnv(f, store)
		done := fe.start(f, "hello")
		fe.start(f, "pause")
		targets = append(targets, target{fe, done.SessionID})
	}
	add(memstore.New())
	if !fuzzing() {
		add(orderStores()["dynamodb"](f))
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		p, perr := agent.ParseCursor(cursor)
		if perr == nil && p != nil {
			if again, err := agent.ParseCursor(p.Cursor()); err != nil || again.Compare(*p) != 0 {
				t.Fatalf("cursor %q: %+v does not survive its own encoding: %+v, %v", cursor, p, again, err)
			}
		}
		q := "?limit=1&cursor=" + url.QueryEscape(cursor)
		for _, tg := range targets {
			for _, path := range []string{"/agents/acc/tasks" + q, "/agents/acc/tasks" + q + "&status=Paused", "/agents/acc/sessions/" + tg.sid + "/tasks" + q} {
				w := tg.fe.serve(context.Background(), "GET", path, nil)
				checkAnswer(t, w)
				if (perr == nil) != (w.Code == 200) {
					t.Fatalf("GET %s: %d %s; ParseCursor: %v", path, w.Code, w.Body, perr)
				}
			}
		}
	})
}
