package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test tools, as the MCP server lists them. An agent entry names them
// with its prefix (fx_effect, ex_effect, …) and says which need approval.
const (
	// ToolEffect is not idempotent: each run is a side effect of its own.
	ToolEffect = "effect"
	// ToolUpsert is idempotent: running it again changes nothing more.
	ToolUpsert = "upsert"
	// ToolPeek reads only: it needs no approval.
	ToolPeek = "peek"
	// ToolSlow reads only and takes SlowFor: a burst of them keeps a
	// hundred legs running at once.
	ToolSlow = "slow"
)

// SlowFor is how long a run of ToolSlow takes.
const SlowFor = 6 * time.Second

// Execution is one run of a test tool, as the tool itself wrote it in the
// ledger before its side effect.
type Execution struct {
	// N numbers executions from 1, in the order they were written; the
	// result the tool returns names it ("ran #N"), so a history's result
	// can be matched to the run that produced it.
	N int `json:"n"`
	// Key is the MCP call's _meta idempotency_key: <request_id>#<tool_call_id>.
	Key        string    `json:"key"`
	RequestID  string    `json:"request_id"`
	ToolCallID string    `json:"tool_call_id"`
	Tool       string    `json:"tool"`
	Process    string    `json:"process"` // which hitch serve called (A or B)
	Tag        string    `json:"tag"`     // the generator's tag of the call
	Value      string    `json:"value"`   // the input's v (an edit changes it)
	Start      time.Time `json:"start"`
	// End is when the side effect was done; zero when the call was cut
	// (its context ended during the side effect).
	End time.Time `json:"end"`
}

// Marker is what a result of execution n says; a history result that
// holds it comes from that run.
func Marker(n int) string { return fmt.Sprintf("ran #%d;", n) }

// Ledger records the executions of the test tools.
type Ledger struct {
	mu    sync.Mutex
	execs []Execution
	// answers are the elicitation answers the form tool received, and
	// issued the request states it gave out (elicit.go).
	answers []Answer
	issued  map[string]string
	// Delay, when set, is how long a run sleeps after its ledger line, to
	// widen the windows between a call's start and its result.
	Delay func() time.Duration
}

// Executions returns the ledger, in the order written.
func (l *Ledger) Executions() []Execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Execution, len(l.execs))
	copy(out, l.execs)
	return out
}

func (l *Ledger) begin(e Execution) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.N = len(l.execs) + 1
	l.execs = append(l.execs, e)
	return e.N
}

func (l *Ledger) end(n int, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.execs[n-1].End = at
}

// ToolInput is every test tool's input: a tag naming the call (unique per
// call the generator wrote) and a value an edit may change.
type ToolInput struct {
	Tag string `json:"tag" jsonschema:"the call's tag"`
	V   string `json:"v" jsonschema:"a value"`
}

// ToolOutput is every test tool's structured result.
type ToolOutput struct {
	Ran string `json:"ran"`
}

// MCPHandler serves the test tools over streamable HTTP; the first path
// element after prefix names the process calling (…/A, …/B), so that the
// ledger says which process ran each call.
func (l *Ledger) MCPHandler(processes ...string) http.Handler {
	mux := http.NewServeMux()
	for _, p := range processes {
		srv := l.server(p)
		mux.Handle("/mcp/"+p, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		form := l.formServer(p)
		mux.Handle("/mcp/"+p+"/form", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return form },
			&sdk.StreamableHTTPOptions{Stateless: true}))
	}
	return mux
}

func (l *Ledger) server(process string) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "hitch-torture", Version: "1"}, nil)
	no, yes := false, true
	sdk.AddTool(srv, &sdk.Tool{Name: ToolEffect, Description: "A side effect that must not run twice.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}}, l.tool(process, ToolEffect))
	sdk.AddTool(srv, &sdk.Tool{Name: ToolUpsert, Description: "A side effect that may run again.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}}, l.tool(process, ToolUpsert))
	sdk.AddTool(srv, &sdk.Tool{Name: ToolPeek, Description: "Reads; changes nothing.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no}}, l.tool(process, ToolPeek))
	sdk.AddTool(srv, &sdk.Tool{Name: ToolSlow, Description: "Reads slowly; changes nothing.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no}}, l.tool(process, ToolSlow))
	return srv
}

func (l *Ledger) tool(process, name string) sdk.ToolHandlerFor[ToolInput, ToolOutput] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in ToolInput) (*sdk.CallToolResult, ToolOutput, error) {
		key, _ := req.Params.Meta["idempotency_key"].(string)
		rid, tcid, _ := strings.Cut(key, "#")
		n := l.begin(Execution{Key: key, RequestID: rid, ToolCallID: tcid, Tool: name, Process: process,
			Tag: in.Tag, Value: in.V, Start: time.Now()})
		delay := time.Duration(0)
		if l.Delay != nil {
			delay = l.Delay()
		}
		if name == ToolSlow {
			delay += SlowFor
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ToolOutput{}, ctx.Err()
			}
		}
		l.end(n, time.Now())
		return nil, ToolOutput{Ran: fmt.Sprintf("%s %s %s", Marker(n), name, in.Tag)}, nil
	}
}

// RandomDelay is a Delay of up to max, from a source of its own (the
// ledger's timing is not part of the replayed choices).
func RandomDelay(seed uint64, max time.Duration) func() time.Duration {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 0x70727475))
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(max)))
	}
}

// byKey groups executions by their idempotency key, each group in order.
func byKey(execs []Execution) map[string][]Execution {
	m := map[string][]Execution{}
	for _, e := range execs {
		m[e.Key] = append(m[e.Key], e)
	}
	for _, es := range m {
		sort.Slice(es, func(i, j int) bool { return es[i].N < es[j].N })
	}
	return m
}
