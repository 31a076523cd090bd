package bedrockwire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	txt := func(s string) ContentBlock { return ContentBlock{Text: &s} }
	use := func(id string) ContentBlock {
		return ContentBlock{ToolUse: &ToolUse{ToolUseID: id, Name: "t", Input: json.RawMessage(`{}`)}}
	}
	res := func(id string) ContentBlock {
		return ContentBlock{ToolResult: &ToolResult{ToolUseID: id, Status: "success", Content: []ToolResultContent{}}}
	}
	u := func(bs ...ContentBlock) Message { return Message{Role: "user", Content: bs} }
	a := func(bs ...ContentBlock) Message { return Message{Role: "assistant", Content: bs} }
	tools := &ToolConfig{Tools: []Tool{{ToolSpec: &ToolSpec{Name: "t"}}}}
	tools.Tools[0].ToolSpec.InputSchema.JSON = json.RawMessage(`{"type":"object"}`)
	temp := 0.5
	maxTokens := 2048
	tests := []struct {
		name string
		req  Request
		want string // "" = valid
	}{
		{"valid", Request{Messages: []Message{u(txt("hi")), a(use("1")), u(res("1"), txt("more"))}, ToolConfig: tools}, ""},
		{"empty", Request{}, "must start with a user message"},
		{"starts with assistant", Request{Messages: []Message{a(txt("x")), u(txt("y"))}}, "must start with a user message"},
		{"two user messages", Request{Messages: []Message{u(txt("x")), u(txt("y"))}}, "must alternate"},
		{"ends with assistant", Request{Messages: []Message{u(txt("x")), a(txt("y"))}}, "must end with a user message"},
		{"unknown role", Request{Messages: []Message{u(txt("x")), {Role: "tool", Content: []ContentBlock{txt("y")}}}}, "enum value set"},
		{"empty content", Request{Messages: []Message{u()}}, "is empty"},
		{"blank text", Request{Messages: []Message{u(txt(" "))}}, "is blank"},
		{"tool use unanswered", Request{Messages: []Message{u(txt("x")), a(use("1"), use("2")), u(res("1"))}, ToolConfig: tools}, "following Ids: 2"},
		{"tool use answered by text", Request{Messages: []Message{u(txt("x")), a(use("1")), u(txt("y"))}, ToolConfig: tools}, "following Ids: 1"},
		{"result without a use", Request{Messages: []Message{u(txt("x")), a(use("1")), u(res("1"), res("9"))}, ToolConfig: tools}, "no toolUse block in the previous turn"},
		{"result in the first message", Request{Messages: []Message{u(res("1"))}, ToolConfig: tools}, "no toolUse block"},
		{"duplicate result", Request{Messages: []Message{u(txt("x")), a(use("1")), u(res("1"), res("1"))}, ToolConfig: tools}, "more than once"},
		{"tool blocks without toolConfig", Request{Messages: []Message{u(txt("x")), a(use("1")), u(res("1"))}}, "toolConfig field must be defined"},
		{"tool use in a user message", Request{Messages: []Message{u(use("1"))}, ToolConfig: tools}, "only allowed in assistant"},
		{"thinking with temperature", Request{
			Messages: []Message{u(txt("x"))}, InferenceConfig: &InferenceConfig{Temperature: &temp},
			AdditionalModelRequestFields: json.RawMessage(`{"thinking":{"type":"enabled","budget_tokens":1024}}`),
		}, "temperature may only be set to 1"},
		{"thinking budget over max tokens", Request{
			Messages: []Message{u(txt("x"))}, InferenceConfig: &InferenceConfig{MaxTokens: &maxTokens},
			AdditionalModelRequestFields: json.RawMessage(`{"thinking":{"type":"enabled","budget_tokens":4096}}`),
		}, "max_tokens must be greater"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(&tt.req)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
