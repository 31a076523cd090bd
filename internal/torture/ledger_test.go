package torture

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The ledger's tools over MCP: each call writes its line (key, request,
// tool call, process, tag, value) before it answers, and its result names
// the run.
func TestLedgerTools(t *testing.T) {
	l := &Ledger{}
	srv := httptest.NewServer(l.MCPHandler(ProcA, ProcB))
	defer srv.Close()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp/B"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "effect,peek,slow,upsert" {
		t.Errorf("tools %s, want effect,peek,slow,upsert", got)
	}
	before := time.Now()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: ToolEffect, Arguments: map[string]string{"tag": "t1", "v": "x"},
		Meta: sdk.Meta{"idempotency_key": "r1#c1"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.Contains(text, Marker(1)) {
		t.Errorf("result %q does not name run #1", text)
	}
	es := l.Executions()
	if len(es) != 1 {
		t.Fatalf("%d ledger lines, want 1", len(es))
	}
	e := es[0]
	if e.N != 1 || e.Key != "r1#c1" || e.RequestID != "r1" || e.ToolCallID != "c1" || e.Tool != ToolEffect || e.Process != ProcB ||
		e.Tag != "t1" || e.Value != "x" || e.Start.Before(before) || e.End.Before(e.Start) {
		t.Errorf("ledger line %+v", e)
	}
}
