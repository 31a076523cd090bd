package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/bedrock"
	"github.com/hitch-agents/hitch/internal/bedrock/bedrockwire"
	"github.com/hitch-agents/hitch/internal/bedrock/fakebedrock"
)

// rawJSON compares raw JSON by value, numbers kept exact.
var rawJSON = cmp.Transformer("json", func(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid JSON: " + string(r)
	}
	return v
})

func ptr[T any](v T) *T { return &v }

func text(s string) bedrockwire.ContentBlock { return bedrockwire.ContentBlock{Text: ptr(s)} }

var endTurn = fakebedrock.Response{Turn: fakebedrock.Turn{
	Blocks:     []fakebedrock.Block{{Text: []string{"ok"}}},
	StopReason: "end_turn",
}}

func converse(t *testing.T, fake *fakebedrock.Server, req *agent.ModelRequest) (*agent.ModelResponse, []agent.Delta, error) {
	t.Helper()
	var deltas []agent.Delta
	resp, err := fake.Model().Converse(t.Context(), req, func(d agent.Delta) { deltas = append(deltas, d) })
	return resp, deltas, err
}

func TestConverseSends(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	tools := []agent.ToolSpec{{Name: "get_time", Description: "Tells the time", InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}}}`)}}
	history := []agent.Message{
		{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("what time"), {Type: agent.BlockImage, MediaType: "image/png", Data: png}}},
		{Role: agent.RoleAssistant, Content: []agent.Block{
			{Type: agent.BlockReasoning, Text: "let me think", Signature: "sig-1"},
			{Type: agent.BlockReasoning, Redacted: []byte("secret-bytes")},
			agent.TextBlock("checking"),
			{Type: agent.BlockToolUse, ID: "tu_1", Name: "get_time", Input: json.RawMessage(`{"zone": "UTC", "n": 12345678901234567890}`)},
			{Type: agent.BlockToolUse, ID: "tu_2", Name: "get_time", Input: json.RawMessage(`{}`)},
		}},
		{Role: agent.RoleTool, Content: []agent.Block{
			{Type: agent.BlockToolResult, ToolUseID: "tu_1", Status: agent.ResultSuccess, Content: []agent.Block{agent.TextBlock("noon"), {Type: agent.BlockJSON, JSON: json.RawMessage(`{"h":12}`)}}},
			agent.ErrorResult("tu_2", "boom"),
		}},
	}
	wantHistory := []bedrockwire.Message{
		{Role: "user", Content: []bedrockwire.ContentBlock{text("what time"), {Image: &bedrockwire.Image{Format: "png", Source: bedrockwire.ImageSource{Bytes: png}}}}},
		{Role: "assistant", Content: []bedrockwire.ContentBlock{
			{ReasoningContent: &bedrockwire.ReasoningContent{ReasoningText: &bedrockwire.ReasoningText{Text: "let me think", Signature: "sig-1"}}},
			{ReasoningContent: &bedrockwire.ReasoningContent{RedactedContent: []byte("secret-bytes")}},
			text("checking"),
			{ToolUse: &bedrockwire.ToolUse{ToolUseID: "tu_1", Name: "get_time", Input: json.RawMessage(`{"zone":"UTC","n":12345678901234567890}`)}},
			{ToolUse: &bedrockwire.ToolUse{ToolUseID: "tu_2", Name: "get_time", Input: json.RawMessage(`{}`)}},
		}},
		{Role: "user", Content: []bedrockwire.ContentBlock{
			{ToolResult: &bedrockwire.ToolResult{ToolUseID: "tu_1", Status: "success", Content: []bedrockwire.ToolResultContent{{Text: ptr("noon")}, {JSON: json.RawMessage(`{"h":12}`)}}}},
			{ToolResult: &bedrockwire.ToolResult{ToolUseID: "tu_2", Status: "error", Content: []bedrockwire.ToolResultContent{{Text: ptr("boom")}}}},
		}},
	}
	wantTools := &bedrockwire.ToolConfig{Tools: []bedrockwire.Tool{{ToolSpec: &bedrockwire.ToolSpec{Name: "get_time", Description: "Tells the time"}}}}
	wantTools.Tools[0].ToolSpec.InputSchema.JSON = tools[0].InputSchema

	tests := []struct {
		name string
		req  agent.ModelRequest
		want bedrockwire.Request
	}{
		{
			name: "plain",
			req:  agent.ModelRequest{ModelID: "m1", Messages: []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("hi")}}}},
			want: bedrockwire.Request{ModelID: "m1", Messages: []bedrockwire.Message{{Role: "user", Content: []bedrockwire.ContentBlock{text("hi")}}}},
		},
		{
			name: "system, temperature, max tokens, tools, every block",
			req: agent.ModelRequest{
				ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", System: "Be careful.", Temperature: ptr(0.5), MaxTokens: 2048,
				Tools: tools, Messages: history,
			},
			want: bedrockwire.Request{
				ModelID:         "us.anthropic.claude-sonnet-4-20250514-v1:0",
				System:          []bedrockwire.SystemBlock{{Text: "Be careful."}},
				InferenceConfig: &bedrockwire.InferenceConfig{MaxTokens: ptr(2048), Temperature: ptr(0.5)},
				ToolConfig:      wantTools,
				Messages:        wantHistory,
			},
		},
		{
			name: "cache 5m: a cache point after the system prompt and after the newest message's last block, no TTL sent",
			req: agent.ModelRequest{
				ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", System: "Be careful.", Tools: tools, Messages: history,
				CacheTTL: 5 * time.Minute,
			},
			want: bedrockwire.Request{
				ModelID:    "us.anthropic.claude-sonnet-4-20250514-v1:0",
				System:     []bedrockwire.SystemBlock{{Text: "Be careful."}, {CachePoint: &bedrockwire.CachePoint{Type: "default"}}},
				ToolConfig: wantTools,
				Messages:   withCachePoint(wantHistory, ""),
			},
		},
		{
			name: "cache 1h: the TTL sent; no system prompt, no cache point there",
			req: agent.ModelRequest{
				ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Tools: tools, Messages: history, CacheTTL: time.Hour,
			},
			want: bedrockwire.Request{
				ModelID:    "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
				ToolConfig: wantTools,
				Messages:   withCachePoint(wantHistory, "1h"),
			},
		},
		{
			name: "reasoning: thinking sent, temperature not",
			req: agent.ModelRequest{
				ModelID: "m1", Temperature: ptr(0.2), MaxTokens: 4096, ReasoningBudget: 1024, Tools: tools, Messages: history,
			},
			want: bedrockwire.Request{
				ModelID:                      "m1",
				InferenceConfig:              &bedrockwire.InferenceConfig{MaxTokens: ptr(4096)},
				AdditionalModelRequestFields: json.RawMessage(`{"thinking":{"type":"enabled","budget_tokens":1024}}`),
				ToolConfig:                   wantTools,
				Messages:                     wantHistory,
			},
		},
		{
			name: "tool entries merged into one user message, dangling call answered, retired tool declared",
			req: agent.ModelRequest{ModelID: "m1", Messages: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("a")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{{Type: agent.BlockToolUse, ID: "x", Name: "old_tool", Input: json.RawMessage(`{}`)}}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("b")}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("c")}},
			}},
			want: bedrockwire.Request{ModelID: "m1",
				ToolConfig: &bedrockwire.ToolConfig{Tools: []bedrockwire.Tool{{ToolSpec: func() *bedrockwire.ToolSpec {
					s := &bedrockwire.ToolSpec{Name: "old_tool", Description: "no longer available"}
					s.InputSchema.JSON = json.RawMessage(`{"type":"object"}`)
					return s
				}()}}},
				Messages: []bedrockwire.Message{
					{Role: "user", Content: []bedrockwire.ContentBlock{text("a")}},
					{Role: "assistant", Content: []bedrockwire.ContentBlock{{ToolUse: &bedrockwire.ToolUse{ToolUseID: "x", Name: "old_tool", Input: json.RawMessage(`{}`)}}}},
					{Role: "user", Content: []bedrockwire.ContentBlock{
						{ToolResult: &bedrockwire.ToolResult{ToolUseID: "x", Status: "error", Content: []bedrockwire.ToolResultContent{{Text: ptr("not run: no result was recorded")}}}},
						text("b"), text("c"),
					}},
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakebedrock.New(t)
			fake.Push(endTurn)
			if _, _, err := converse(t, fake, &tt.req); err != nil {
				t.Fatalf("Converse: %v", err)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("fake got %d requests, want 1", len(reqs))
			}
			if diff := cmp.Diff(&tt.want, reqs[0], rawJSON); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConverseStreams(t *testing.T) {
	user := []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}
	tests := []struct {
		name       string
		turn       fakebedrock.Turn
		want       *agent.ModelResponse
		wantDeltas []agent.Delta
	}{
		{
			name: "text",
			turn: fakebedrock.Turn{
				Blocks:     []fakebedrock.Block{{Text: []string{"Hello", ", ", "world"}}},
				StopReason: "end_turn", Usage: fakebedrock.Usage{InputTokens: 10, OutputTokens: 3},
			},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("Hello, world")},
				StopReason: agent.StopEndTurn, Usage: agent.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13},
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaAnswer, Text: "Hello"}, {Kind: agent.DeltaAnswer, Text: ", "}, {Kind: agent.DeltaAnswer, Text: "world"}},
		},
		{
			name: "reasoning with signature, then text",
			turn: fakebedrock.Turn{
				Blocks: []fakebedrock.Block{
					{Reasoning: []string{"hmm", " yes"}, Signature: "c2lnbmF0dXJl"},
					{Text: []string{"done"}},
				},
				StopReason: "end_turn",
			},
			want: &agent.ModelResponse{
				Content: []agent.Block{
					{Type: agent.BlockReasoning, Text: "hmm yes", Signature: "c2lnbmF0dXJl"},
					agent.TextBlock("done"),
				},
				StopReason: agent.StopEndTurn,
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaThinking, Text: "hmm"}, {Kind: agent.DeltaThinking, Text: " yes"}, {Kind: agent.DeltaAnswer, Text: "done"}},
		},
		{
			name: "redacted reasoning kept, not streamed",
			turn: fakebedrock.Turn{
				Blocks:     []fakebedrock.Block{{Redacted: []byte{0, 1, 2, 255}}, {Text: []string{"x"}}},
				StopReason: "end_turn",
			},
			want: &agent.ModelResponse{
				Content:    []agent.Block{{Type: agent.BlockReasoning, Redacted: []byte{0, 1, 2, 255}}, agent.TextBlock("x")},
				StopReason: agent.StopEndTurn,
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaAnswer, Text: "x"}},
		},
		{
			name: "tool use, input split across deltas",
			turn: fakebedrock.Turn{
				Blocks: []fakebedrock.Block{
					{Text: []string{"Deleting."}},
					{ToolUse: &fakebedrock.ToolCall{ID: "tooluse_a", Name: "delete_file", Input: []string{`{"pa`, `th": "ol`, `d.log"`, `}`}}},
					{ToolUse: &fakebedrock.ToolCall{ID: "tooluse_b", Name: "get_time"}},
				},
				StopReason: "tool_use", Usage: fakebedrock.Usage{InputTokens: 5, OutputTokens: 7},
			},
			want: &agent.ModelResponse{
				Content: []agent.Block{
					agent.TextBlock("Deleting."),
					{Type: agent.BlockToolUse, ID: "tooluse_a", Name: "delete_file", Input: json.RawMessage(`{"path":"old.log"}`)},
					{Type: agent.BlockToolUse, ID: "tooluse_b", Name: "get_time", Input: json.RawMessage(`{}`)},
				},
				StopReason: agent.StopToolUse, Usage: agent.Usage{InputTokens: 5, OutputTokens: 7, TotalTokens: 12},
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaAnswer, Text: "Deleting."}},
		},
		{
			name: "cache reads and writes",
			turn: fakebedrock.Turn{
				Blocks:     []fakebedrock.Block{{Text: []string{"ok"}}},
				StopReason: "end_turn", Usage: fakebedrock.Usage{InputTokens: 4, OutputTokens: 1, CacheReadTokens: 1490, CacheWriteTokens: 300},
			},
			want: &agent.ModelResponse{
				Content:    []agent.Block{agent.TextBlock("ok")},
				StopReason: agent.StopEndTurn,
				Usage:      agent.Usage{InputTokens: 4, OutputTokens: 1, TotalTokens: 1795, CacheReadInputTokens: 1490, CacheWriteInputTokens: 300},
			},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaAnswer, Text: "ok"}},
		},
		{
			name:       "max tokens",
			turn:       fakebedrock.Turn{Blocks: []fakebedrock.Block{{Text: []string{"cut"}}}, StopReason: "max_tokens"},
			want:       &agent.ModelResponse{Content: []agent.Block{agent.TextBlock("cut")}, StopReason: agent.StopMaxTokens},
			wantDeltas: []agent.Delta{{Kind: agent.DeltaAnswer, Text: "cut"}},
		},
		{
			name: "guardrail",
			turn: fakebedrock.Turn{StopReason: "guardrail_intervened"},
			want: &agent.ModelResponse{StopReason: agent.StopGuardrail},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakebedrock.New(t)
			fake.Push(fakebedrock.Response{Turn: tt.turn})
			got, deltas, err := converse(t, fake, &agent.ModelRequest{ModelID: "m", Messages: user})
			if err != nil {
				t.Fatalf("Converse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, rawJSON); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConverseErrors(t *testing.T) {
	user := []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}
	partial := []fakebedrock.Block{{Text: []string{"par"}}}
	tests := []struct {
		name     string
		resp     fakebedrock.Response
		messages []agent.Message
		want     *agent.Error
		// wantIn: substrings of the message
		wantIn []string
	}{
		{
			name:   "429 throttling with Retry-After",
			resp:   fakebedrock.Response{Status: http.StatusTooManyRequests, ErrorType: "ThrottlingException", Message: "Too many requests, please wait before trying again.", RetryAfter: "7"},
			want:   &agent.Error{Code: agent.CodeThrottled, RetryAfter: 7},
			wantIn: []string{"ThrottlingException", "Too many requests"},
		},
		{
			name: "429 throttling without Retry-After",
			resp: fakebedrock.Response{Status: http.StatusTooManyRequests, ErrorType: "ThrottlingException", Message: "slow down"},
			want: &agent.Error{Code: agent.CodeThrottled, RetryAfter: 2},
		},
		{
			name: "service quota exceeded",
			resp: fakebedrock.Response{Status: http.StatusBadRequest, ErrorType: "ServiceQuotaExceededException", Message: "quota"},
			want: &agent.Error{Code: agent.CodeThrottled, RetryAfter: 2},
		},
		{
			name:   "in-stream throttling",
			resp:   fakebedrock.Response{Turn: fakebedrock.Turn{Blocks: partial, Exception: &fakebedrock.Exception{Type: "throttlingException", Message: "Too many tokens per minute"}}},
			want:   &agent.Error{Code: agent.CodeThrottled, RetryAfter: 2},
			wantIn: []string{"Too many tokens per minute"},
		},
		{
			name:   "in-stream model stream error",
			resp:   fakebedrock.Response{Turn: fakebedrock.Turn{Blocks: partial, Exception: &fakebedrock.Exception{Type: "modelStreamErrorException", Message: "the model broke"}}},
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"ModelStreamErrorException", "the model broke"},
		},
		{
			name:   "in-stream internal error",
			resp:   fakebedrock.Response{Turn: fakebedrock.Turn{Exception: &fakebedrock.Exception{Type: "internalServerException", Message: "oops"}}},
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"oops"},
		},
		{
			name:   "input too long",
			resp:   fakebedrock.Response{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: "Input is too long for requested model."},
			want:   &agent.Error{Code: agent.CodeContextWindowExceeded},
			wantIn: []string{"too long"},
		},
		{
			name: "context window stop reason",
			resp: fakebedrock.Response{Turn: fakebedrock.Turn{Blocks: partial, StopReason: "model_context_window_exceeded"}},
			want: &agent.Error{Code: agent.CodeContextWindowExceeded},
		},
		{
			name:   "other validation error",
			resp:   fakebedrock.Response{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: "The provided model identifier is invalid."},
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"ValidationException", "model identifier is invalid"},
		},
		{
			name: "500 internal server error",
			resp: fakebedrock.Response{Status: http.StatusInternalServerError, ErrorType: "InternalServerException", Message: "internal"},
			want: &agent.Error{Code: agent.CodeModelError},
		},
		{
			name:   "424 model error",
			resp:   fakebedrock.Response{Status: http.StatusFailedDependency, ErrorType: "ModelErrorException", Message: "model failed"},
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"ModelErrorException"},
		},
		{
			name:   "408 model timeout",
			resp:   fakebedrock.Response{Status: http.StatusRequestTimeout, ErrorType: "ModelTimeoutException", Message: "timed out"},
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"ModelTimeoutException"},
		},
		{
			name:   "conversation starting with the assistant: the fake refuses it",
			resp:   endTurn,
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"ValidationException", "must start with a user message"},
			messages: []agent.Message{
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("I speak first")}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}},
			},
		},
		{
			name:   "conversation ending with the assistant: the fake refuses it",
			resp:   endTurn,
			want:   &agent.Error{Code: agent.CodeModelError},
			wantIn: []string{"must end with a user message"},
			messages: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("done")}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakebedrock.New(t)
			fake.Push(tt.resp)
			msgs := tt.messages
			if msgs == nil {
				msgs = user
			}
			_, _, err := converse(t, fake, &agent.ModelRequest{ModelID: "m", Messages: msgs})
			var got *agent.Error
			if !errors.As(err, &got) {
				t.Fatalf("Converse error = %v (%T), want *agent.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(agent.Error{}, "Message")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
			for _, secret := range []string{"local-secret", "AKIDLOCAL", "Signature=", "Credential="} {
				if strings.Contains(got.Message, secret) {
					t.Errorf("message %q leaks %q", got.Message, secret)
				}
			}
		})
	}
}

func TestConverseCanceled(t *testing.T) {
	fake := fakebedrock.New(t)
	fake.Push(fakebedrock.Response{Hang: true, Turn: fakebedrock.Turn{Blocks: []fakebedrock.Block{{Text: []string{"one"}}}}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := fake.Model().Converse(ctx, &agent.ModelRequest{ModelID: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}},
		func(agent.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Converse error = %v, want context.Canceled", err)
	}
}

func TestNormalize(t *testing.T) {
	use := agent.Block{Type: agent.BlockToolUse, ID: "a", Name: "t"}
	res := agent.Block{Type: agent.BlockToolResult, ToolUseID: "a", Status: agent.ResultSuccess}
	tests := []struct {
		name string
		in   []agent.Message
		want []agent.Message
	}{
		{
			name: "tool role becomes user and merges with the next user message",
			in: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{use}},
				{Role: agent.RoleTool, Content: []agent.Block{res}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("2")}},
			},
			want: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{use}},
				{Role: agent.RoleUser, Content: []agent.Block{res, agent.TextBlock("2")}},
			},
		},
		{
			name: "dangling call at the end gets an error result",
			in: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{use}},
			},
			want: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{use}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.ErrorResult("a", "not run: no result was recorded")}},
			},
		},
		{
			name: "consecutive assistant messages merge",
			in: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("a")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("b")}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("2")}},
			},
			want: []agent.Message{
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("1")}},
				{Role: agent.RoleAssistant, Content: []agent.Block{agent.TextBlock("a"), agent.TextBlock("b")}},
				{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("2")}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := cloneMessages(tt.in)
			got := bedrock.Normalize(in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("Normalize modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneMessages(ms []agent.Message) []agent.Message {
	out := make([]agent.Message, len(ms))
	for i, m := range ms {
		out[i] = agent.Message{Role: m.Role, Content: append([]agent.Block(nil), m.Content...)}
	}
	return out
}

// withCachePoint is msgs with a cache point of ttl after the last block of
// the last message.
func withCachePoint(msgs []bedrockwire.Message, ttl types.CacheTTL) []bedrockwire.Message {
	out := append([]bedrockwire.Message(nil), msgs...)
	last := &out[len(out)-1]
	last.Content = append(append([]bedrockwire.ContentBlock(nil), last.Content...),
		bedrockwire.ContentBlock{CachePoint: &bedrockwire.CachePoint{Type: "default", TTL: ttl}})
	return out
}

// A model Bedrock refuses cache points for: the refused call is sent again
// at once without them and answers; from then on the Model sends that model
// none (one log line says so), and still sends them to another model.
func TestConverseCacheRefused(t *testing.T) {
	fake := fakebedrock.New(t)
	var logs bytes.Buffer
	m := bedrock.New(fake.Client(), bedrock.WithLog(slog.New(slog.NewTextHandler(&logs, nil))))
	user := []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}
	call := func(model string) {
		t.Helper()
		fake.Push(endTurn)
		resp, err := m.Converse(t.Context(), &agent.ModelRequest{ModelID: model, System: "Be careful.", Messages: user, CacheTTL: 5 * time.Minute}, nil)
		if err != nil {
			t.Fatalf("Converse(%s): %v", model, err)
		}
		if resp.Content[0].Text != "ok" {
			t.Fatalf("Converse(%s) = %+v", model, resp)
		}
	}
	const llama, claude = "meta.llama3-70b-instruct-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0"
	call(llama)
	call(llama)
	call(claude)
	var got []int
	for _, r := range fake.Requests() {
		got = append(got, len(bedrockwire.CachePoints(r)))
	}
	// the refused request, its retry, the next call, the other model
	if diff := cmp.Diff([]int{2, 0, 0, 2}, got); diff != "" {
		t.Errorf("cache points per request (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), "prompt caching is off for this model"); n != 1 {
		t.Errorf("%d log lines about it, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "model="+llama) || !strings.Contains(logs.String(), "extraneous key [cachePoint]") {
		t.Errorf("the log line does not name the model and Bedrock's reason:\n%s", logs.String())
	}
}

// A ValidationException about something else is not retried, and caching
// stays on.
func TestConverseOtherRefusalNotRetried(t *testing.T) {
	fake := fakebedrock.New(t)
	m := bedrock.New(fake.Client(), bedrock.WithLog(slog.New(slog.DiscardHandler)))
	user := []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}
	req := &agent.ModelRequest{ModelID: "anthropic.claude-3-5-haiku-20241022-v1:0", System: "s", Messages: user, CacheTTL: 5 * time.Minute}
	fake.Push(fakebedrock.Response{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: "The provided model identifier is invalid."}, endTurn)
	if _, err := m.Converse(t.Context(), req, nil); err == nil {
		t.Fatal("Converse: no error, want the ValidationException")
	}
	if _, err := m.Converse(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range fake.Requests() {
		got = append(got, len(bedrockwire.CachePoints(r)))
	}
	if diff := cmp.Diff([]int{2, 2}, got); diff != "" {
		t.Errorf("cache points per request (-want +got):\n%s", diff)
	}
}

// The wordings of a refusal for cache points that are sent again without
// them: Bedrock's own, and the model's passed on.
func TestConverseCacheRefusalWordings(t *testing.T) {
	for _, tc := range []struct{ errType, message string }{
		{"ValidationException", "The model returned the following errors: A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"ValidationException", "The model returned the following errors: ttl: 1h is not supported by this model"},
		{"AccessDeniedException", "You invoked an unsupported model or your request did not allow prompt caching."},
	} {
		t.Run(tc.message, func(t *testing.T) {
			fake := fakebedrock.New(t)
			m := bedrock.New(fake.Client(), bedrock.WithLog(slog.New(slog.DiscardHandler)))
			fake.Push(fakebedrock.Response{Status: http.StatusBadRequest, ErrorType: tc.errType, Message: tc.message}, endTurn)
			req := &agent.ModelRequest{ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", System: "s", CacheTTL: time.Hour,
				Messages: []agent.Message{{Role: agent.RoleUser, Content: []agent.Block{agent.TextBlock("go")}}}}
			if _, err := m.Converse(t.Context(), req, nil); err != nil {
				t.Fatalf("Converse: %v", err)
			}
			var got []int
			for _, r := range fake.Requests() {
				got = append(got, len(bedrockwire.CachePoints(r)))
			}
			if diff := cmp.Diff([]int{2, 0}, got); diff != "" {
				t.Errorf("cache points per request (-want +got):\n%s", diff)
			}
		})
	}
}
