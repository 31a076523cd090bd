package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/fakelambda"
)

const reportARN = "arn:aws:lambda:us-east-1:123456789012:function:report"

func newReportTool(tb testing.TB, fake *fakelambda.Server) agent.Tool {
	tb.Helper()
	tool, err := tools.NewLambda(fake.Client(tb), tools.LambdaConfig{
		Function:    reportARN,
		Name:        "get_report",
		Description: "Gets a report",
		InputSchema: tools.MustCompileSchema(`{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}`),
	})
	if err != nil {
		tb.Fatalf("NewLambda() error = %v", err)
	}
	return tool
}

func TestLambda(t *testing.T) {
	tests := []struct {
		name    string
		result  fakelambda.Result
		want    []agent.Block
		wantErr string
	}{
		{name: "json object", result: fakelambda.Result{Payload: []byte(`{"id": "r1", "rows": [1, 2]}`)},
			want: []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`{"id":"r1","rows":[1,2]}`)}}},
		{name: "json array", result: fakelambda.JSON([]int{1, 2}),
			want: []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`[1,2]`)}}},
		{name: "json number", result: fakelambda.JSON(42),
			want: []agent.Block{{Type: agent.BlockJSON, JSON: json.RawMessage(`42`)}}},
		{name: "string", result: fakelambda.JSON("report r1 is ready"),
			want: []agent.Block{agent.TextBlock("report r1 is ready")}},
		{name: "empty string", result: fakelambda.JSON(""),
			want: []agent.Block{agent.TextBlock(`""`)}},
		{name: "null", result: fakelambda.Result{Payload: []byte("null")},
			want: []agent.Block{agent.TextBlock("null")}},
		{name: "nothing", result: fakelambda.Result{},
			want: []agent.Block{agent.TextBlock("null")}},
		{name: "function error", result: fakelambda.Fail("ValueError", "report r1 does not exist"),
			wantErr: "report r1 does not exist"},
		{name: "function error without message", result: fakelambda.Result{Payload: []byte(`{"oops":1}`), FunctionError: "Unhandled"},
			wantErr: `function error (Unhandled): {"oops":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakelambda.New(t)
			fake.Handle("report", func([]byte) fakelambda.Result { return tt.result })
			tool := newReportTool(t, fake)
			out, err := tool.Run(context.Background(), agent.ToolCall{
				ID: "tooluse_1", Name: "get_report", Input: json.RawMessage(`{"id":"r1"}`),
				RequestID: "req-1", IdempotencyKey: "req-1#tooluse_1",
			})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Run() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, out.Content); diff != "" {
				t.Errorf("Run() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLambdaPayload(t *testing.T) {
	fake := fakelambda.New(t)
	fake.Handle("report", func([]byte) fakelambda.Result { return fakelambda.JSON("ok") })
	tool := newReportTool(t, fake)
	calls := []agent.ToolCall{
		{ID: "tooluse_1", Name: "get_report", Input: json.RawMessage(`{"id": "r1"}`), RequestID: "req-1", IdempotencyKey: "req-1#tooluse_1"},
		// Without a key given, the tool makes it the same way.
		{ID: "tooluse_2", Name: "get_report", Input: json.RawMessage(`{"id":"r2"}`), RequestID: "req-1"},
	}
	for _, c := range calls {
		if _, err := tool.Run(context.Background(), c); err != nil {
			t.Fatalf("Run(%s) error = %v", c.ID, err)
		}
	}
	var got []map[string]any
	for _, inv := range fake.Invocations() {
		if inv.Function != reportARN || inv.InvocationType != "RequestResponse" {
			t.Errorf("invocation of %s (%s), want %s (RequestResponse)", inv.Function, inv.InvocationType, reportARN)
		}
		var p map[string]any
		if err := json.Unmarshal(inv.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", inv.Payload, err)
		}
		got = append(got, p)
	}
	want := []map[string]any{
		{"input": map[string]any{"id": "r1"}, "tool_name": "get_report", "tool_call_id": "tooluse_1", "request_id": "req-1", "idempotency_key": "req-1#tooluse_1"},
		{"input": map[string]any{"id": "r2"}, "tool_name": "get_report", "tool_call_id": "tooluse_2", "request_id": "req-1", "idempotency_key": "req-1#tooluse_2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payloads (-want +got):\n%s", diff)
	}
}

func TestLambdaInvalidInput(t *testing.T) {
	fake := fakelambda.New(t)
	fake.Handle("report", func([]byte) fakelambda.Result { return fakelambda.JSON("ok") })
	tool := newReportTool(t, fake)
	tests := []struct{ input, want string }{
		{`{}`, "invalid_input: input.id: required"},
		{`{"id": 1}`, "invalid_input: input.id: got number, want string"},
	}
	for _, tt := range tests {
		if err := tool.(agent.InputValidator).ValidateInput(json.RawMessage(tt.input)); err == nil || err.Error() != tt.want {
			t.Errorf("ValidateInput(%s) = %v, want %q", tt.input, err, tt.want)
		}
		_, err := tool.Run(context.Background(), agent.ToolCall{ID: "c", Input: json.RawMessage(tt.input)})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Run(%s) = %v, want %q", tt.input, err, tt.want)
		}
	}
	if n := len(fake.Invocations()); n != 0 {
		t.Errorf("%d invocations, want none for invalid input", n)
	}
}

func TestLambdaNotFound(t *testing.T) {
	fake := fakelambda.New(t)
	tool := newReportTool(t, fake)
	_, err := tool.Run(context.Background(), agent.ToolCall{ID: "c", Input: json.RawMessage(`{"id":"r1"}`)})
	if err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Fatalf("Run() error = %v, want ResourceNotFoundException", err)
	}
}

func TestNewLambdaErrors(t *testing.T) {
	fake := fakelambda.New(t)
	if _, err := tools.NewLambda(fake.Client(t), tools.LambdaConfig{Function: reportARN, Name: "x"}); err == nil {
		t.Error("NewLambda() without a schema: no error")
	}
	if _, err := tools.NewLambda(nil, tools.LambdaConfig{Function: reportARN, Name: "x", InputSchema: tools.MustCompileSchema(`{"type":"object"}`)}); err == nil {
		t.Error("NewLambda() without a client: no error")
	}
}
