package perf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/bedrock/bedrockwire"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/localmodel"
)

// wireRecorder serves the local model and records every ConverseStream
// request as it arrived on the wire.
type wireRecorder struct {
	mu   sync.Mutex
	reqs []bedrockwire.Request
}

func (w *wireRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req bedrockwire.Request
		if err := json.Unmarshal(body, &req); err == nil {
			w.mu.Lock()
			w.reqs = append(w.reqs, req)
			w.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(rw, r)
	})
}

// wireTokens estimates a request's input the way the engine does
// (agent.CharsPerToken bytes a token): system prompt and messages.
func wireTokens(req bedrockwire.Request) int {
	n := 0
	for _, s := range req.System {
		n += len(s.Text)
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				n += len(*b.Text)
			case b.ToolUse != nil:
				n += len(b.ToolUse.Name) + len(b.ToolUse.Input)
			case b.ToolResult != nil:
				for _, c := range b.ToolResult.Content {
					if c.Text != nil {
						n += len(*c.Text)
					}
					n += len(c.JSON)
				}
			case b.Image != nil:
				n += agent.ImageTokens * agent.CharsPerToken
			}
		}
	}
	return (n + agent.CharsPerToken - 1) / agent.CharsPerToken
}

// compactingEnv is a DynamoDB Local engine whose agent compacts, talking to
// the local model over the wire through a recorder.
func compactingEnv(tb testing.TB, maxTokens, keep int) (*enginetest.Env, *wireRecorder, func() (map[string]int, int64)) {
	tb.Helper()
	env, c := dynamoEnv(tb)
	rec := &wireRecorder{}
	srv := httptest.NewServer(rec.wrap(localmodel.NewHandler()))
	tb.Cleanup(srv.Close)
	env.E.Model = bedrock.New(bedrock.EndpointClient(srv.URL))
	ag, _ := env.E.Agents.Get("acc")
	ag.Context = agent.ContextPolicy{MaxInputTokens: maxTokens, KeepTurns: keep}
	return env, rec, func() (map[string]int, int64) {
		calls, _ := c.Calls()
		b := c.ReadBytes()
		c.Reset()
		return calls, b
	}
}

// TestCompactionReadsOnePage: a task of 500 turns on DynamoDB Local; every
// follow-on reads one page (one Query) and makes two writes, summarising
// turns included; the model never receives more than max_input_tokens; GET
// task still shows every entry.
func TestCompactionReadsOnePage(t *testing.T) {
	const maxTokens, turns = 1000, 500
	env, rec, count := compactingEnv(t, maxTokens, 4)
	ctx := context.Background()
	filler := strings.Repeat("lorem ", 15)
	taskID := ""
	followOn := map[string]int{"Query": 1, "TransactWriteItems": 2}
	var maxRead int64
	for i := 1; i <= turns; i++ {
		count()
		run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", TaskID: taskID,
			Items: []agent.InputItem{{Content: fmt.Sprintf("turn %d %s", i, filler)}}})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		res := run.Execute(ctx, nil)
		if res.Status != agent.StatusCompleted {
			t.Fatalf("turn %d: %+v", i, res)
		}
		taskID = res.TaskID
		calls, read := count()
		// A turn that takes over a second on a loaded machine also polls
		// for a cancel (GetItem), and past 5 s renews its lease (UpdateItem):
		// neither is on the success path nor counted (docs/architecture.md).
		delete(calls, "GetItem")
		delete(calls, "UpdateItem")
		if i > 1 {
			if diff := cmp.Diff(followOn, calls); diff != "" {
				t.Fatalf("turn %d's calls (-want +got):\n%s", i, diff)
			}
			maxRead = max(maxRead, read)
		}
	}
	summaries := 0
	for i, req := range rec.reqs {
		if got := wireTokens(req); got > maxTokens {
			t.Errorf("model call %d received %d estimated tokens, over %d", i, got, maxTokens)
		}
		if len(req.System) > 0 && req.System[0].Text == agent.CompactionPrompt {
			summaries++
		}
	}
	if summaries == 0 || len(rec.reqs) != turns+summaries {
		t.Fatalf("%d model calls, %d summarising", len(rec.reqs), summaries)
	}
	var items []agent.ItemView
	after := int64(0)
	for {
		v, err := env.E.GetTask(ctx, "acc", "alice", taskID, agent.ViewOptions{AfterSeq: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, v.Items...)
		if v.NextAfterSeq == nil {
			break
		}
		after = *v.NextAfterSeq
	}
	compacted := 0
	for _, it := range items {
		if it.CompactedBy != 0 {
			compacted++
		}
	}
	if len(items) != 2*turns+summaries || compacted < 2*turns-100 {
		t.Errorf("GET task: %d items (want %d), %d marked compacted", len(items), 2*turns+summaries, compacted)
	}
	t.Logf("500 turns: %d summarising calls, largest follow-on read %d bytes, %d entries compacted", summaries, maxRead, compacted)
}
