package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/eventlog"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/lambdahttp"
)

// The replay tests pin docs/api.md "Reconnecting": a replay reads the event
// log page by page at its reader's pace and is never detached for being
// slow; a replay of an ended request holds every event after n, in order,
// and ends with its request_complete. Each runs on the memory store and on
// DynamoDB Local, with 20,000 reasoning deltas (20,003 events, as the issue's /think).

const replayWords = 20_000

// replayEnv is an API over the store, the store watched for the largest
// read of the event log.
type replayEnv struct {
	*env
	watch *eventReads
}

func newReplayEnv(t *testing.T, store agent.Store) *replayEnv {
	t.Helper()
	watch := &eventReads{Store: store}
	en := enginetest.New(t, watch)
	en.E.Now = nil
	api := &httpapi.Server{Engine: en.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler), MaxBody: 4096}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &replayEnv{env: &env{srv: srv, api: api, model: en.Model, store: watch}, watch: watch}
}

// eventReads counts the events each read of the event log returned.
type eventReads struct {
	agent.Store
	mu      sync.Mutex
	largest int
}

func (s *eventReads) saw(n int) {
	s.mu.Lock()
	s.largest = max(s.largest, n)
	s.mu.Unlock()
}

func (s *eventReads) ListEvents(ctx context.Context, taskID, requestID string, after int64) ([]eventlog.Event, error) {
	evs, err := s.Store.ListEvents(ctx, taskID, requestID, after)
	s.saw(len(evs))
	return evs, err
}

func (s *eventReads) ReadEvents(ctx context.Context, taskID, requestID string, from eventlog.Pos, after int64) (eventlog.Page, error) {
	page, err := s.Store.ReadEvents(ctx, taskID, requestID, from, after)
	s.saw(len(page.Events))
	return page, err
}

func (s *eventReads) Largest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.largest
}

// thinkTurn streams n words of reasoning, 100 characters each, one delta a
// word (as the local model's /think does), and answers "done": n+3 events.
// midway, when set, runs after the first half.
func thinkTurn(n int, midway func()) agenttest.Turn {
	return func(_ context.Context, _ *agent.ModelRequest, on func(agent.Delta)) (*agent.ModelResponse, error) {
		pad := strings.Repeat("w", 93)
		for i := range n {
			if i == n/2 && midway != nil {
				midway()
			}
			on(agent.Delta{Kind: agent.DeltaThinking, Text: fmt.Sprintf("%06d%s ", i+1, pad)})
		}
		on(agent.Delta{Kind: agent.DeltaAnswer, Text: "done"})
		return &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("done")}, StopReason: agent.StopEndTurn,
			Usage: agent.Usage{InputTokens: 10, OutputTokens: int64(n + 1), TotalTokens: int64(n + 11)}}, nil
	}
}

// slowClient reads through a receive buffer of a few KB, so that the
// server's writes block while the test reads.
func slowClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		_ = c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

// slowReader hands out at most 512 bytes a read and pauses now and then:
// a reader slower than the log.
type slowReader struct {
	r io.Reader
	n int
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.n++
	if s.n%64 == 1 {
		time.Sleep(2 * time.Millisecond)
	}
	return s.r.Read(p[:min(len(p), 512)])
}

// replayed is what a replay answered: its status and its events' ids and
// names.
type replayed struct {
	status int
	ids    []int64
	names  []string
}

func scanEvents(tb testing.TB, r io.Reader) replayed {
	tb.Helper()
	var out replayed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseInt(line[4:], 10, 64)
			if err != nil {
				tb.Fatalf("id line %q", line)
			}
			out.ids = append(out.ids, id)
		case strings.HasPrefix(line, "event: "):
			out.names = append(out.names, line[7:])
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("reading the stream: %v", err)
	}
	return out
}

// replay GETs the events after `after` with a slow client and reads them
// slowly to the end.
func (e *replayEnv) replay(tb testing.TB, tid, rid string, after int64) replayed {
	tb.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/agents/acc/tasks/"+tid+"/requests/"+rid+"/events", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	resp, err := slowClient().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // the reader looks away first
	out := scanEvents(tb, &slowReader{r: resp.Body})
	out.status = resp.StatusCode
	return out
}

// checkReplay fails unless got is every event after `after` up to last,
// once each, in order, request_complete last.
func checkReplay(tb testing.TB, got replayed, after, last int64) {
	tb.Helper()
	if got.status != http.StatusOK {
		tb.Fatalf("replay after %d answered %d", after, got.status)
	}
	if want := int(last - after); len(got.ids) != want {
		tb.Errorf("replay after %d: %d events, want %d", after, len(got.ids), want)
	}
	for i, id := range got.ids {
		if id != after+1+int64(i) {
			tb.Fatalf("replay after %d: event %d has id %d, want %d", after, i, id, after+1+int64(i))
		}
	}
	if n := len(got.names); n == 0 || got.names[n-1] != agent.EventRequestComplete {
		tb.Errorf("replay after %d: the last event is not request_complete (%d events)", after, n)
	}
}

// A request of 20,003 events, replayed by a slow reader from the start, from
// the middle and from its last event but one: every event after n, once, in
// order, request_complete last; no read of the log returns it whole.
func TestReplayLongStream(t *testing.T) {
	for name, newStore := range orderStores() {
		t.Run(name, func(t *testing.T) {
			e := newReplayEnv(t, newStore(t))
			e.model.Add(thinkTurn(replayWords, nil))
			r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"think long"}]}`)
			if r.status != 200 {
				t.Fatalf("invoke: %d %s", r.status, r.body)
			}
			res := r.json(t)
			tid, rid := res["task_id"].(string), res["request_id"].(string)
			last := int64(replayWords + 3)
			for _, after := range []int64{0, 10_001, last - 1} {
				checkReplay(t, e.replay(t, tid, rid, after), after, last)
			}
			// The log is about 3 MB; a page of it is about 1 MB.
			if n := e.watch.Largest(); n > replayWords/2 {
				t.Errorf("one read of the event log returned %d events: the replay did not page", n)
			}
		})
	}
}

// A replay that catches up with a live request follows it live, at its
// reader's pace, to its request_complete: the model streams half its words,
// the replay starts, then the other half.
func TestReplayFollowsLive(t *testing.T) {
	for name, newStore := range orderStores() {
		t.Run(name, func(t *testing.T) {
			e := newReplayEnv(t, newStore(t))
			half := make(chan struct{})
			release := make(chan struct{})
			e.model.Add(thinkTurn(replayWords, func() {
				close(half)
				<-release
			}))
			type started struct{ tid, rid string }
			ids := make(chan started, 1)
			done := make(chan reply, 1)
			go func() {
				req, _ := http.NewRequest("POST", e.srv.URL+"/agents/acc/invoke", strings.NewReader(`{"items":[{"content":"think long"}]}`))
				req.Header.Set("Authorization", "Bearer alice")
				req.Header.Set("Accept", "text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- reply{}
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					var d struct {
						TaskID    string `json:"task_id"`
						RequestID string `json:"request_id"`
					}
					if line := sc.Text(); strings.HasPrefix(line, "data: ") && json.Unmarshal([]byte(line[6:]), &d) == nil && d.RequestID != "" {
						ids <- started{d.TaskID, d.RequestID}
						break
					}
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				done <- reply{status: resp.StatusCode}
			}()
			s := <-ids
			<-half
			// The first half reaches the log within a flush.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if evs, _ := e.watch.Store.ListEvents(context.Background(), s.tid, s.rid, replayWords/2); len(evs) > 0 {
					break
				}
			}
			go func() { time.Sleep(200 * time.Millisecond); close(release) }()
			got := e.replay(t, s.tid, s.rid, 0)
			<-done
			checkReplay(t, got, 0, replayWords+3)
		})
	}
}

// The same replay through the Lambda streaming adapter: its body is a pipe
// the runtime reads at the client's pace.
func TestReplayLongStreamLambda(t *testing.T) {
	for name, newStore := range orderStores() {
		t.Run(name, func(t *testing.T) {
			e := newReplayEnv(t, newStore(t))
			e.model.Add(thinkTurn(replayWords, nil))
			r := e.do(t, "POST", "/agents/acc/invoke", "alice", `{"items":[{"content":"think long"}]}`)
			if r.status != 200 {
				t.Fatalf("invoke: %d %s", r.status, r.body)
			}
			res := r.json(t)
			tid, rid := res["task_id"].(string), res["request_id"].(string)
			h := lambdahttp.New(e.api.Handler(), nil)
			h.Log = slog.New(slog.DiscardHandler)
			for _, after := range []int64{0, 10_001} {
				resp, err := h.ServeEvent(context.Background(), events.APIGatewayProxyRequest{
					HTTPMethod: "GET", Path: "/agents/acc/tasks/" + tid + "/requests/" + rid + "/events",
					Headers: map[string]string{"Authorization": "Bearer alice", "Last-Event-ID": strconv.FormatInt(after, 10)},
				})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
				got := scanEvents(t, &slowReader{r: resp.Body})
				got.status = resp.StatusCode
				resp.Close()
				checkReplay(t, got, after, replayWords+3)
			}
		})
	}
}
