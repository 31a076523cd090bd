package bedrockwire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

func TestValidateCachePoints(t *testing.T) {
	txt := func(s string) ContentBlock { return ContentBlock{Text: &s} }
	cp := func(ttl types.CacheTTL) ContentBlock {
		return ContentBlock{CachePoint: &CachePoint{Type: types.CachePointTypeDefault, TTL: ttl}}
	}
	sys := func(s string) SystemBlock { return SystemBlock{Text: s} }
	sysCP := func(ttl types.CacheTTL) SystemBlock {
		return SystemBlock{CachePoint: &CachePoint{Type: types.CachePointTypeDefault, TTL: ttl}}
	}
	u := func(bs ...ContentBlock) Message { return Message{Role: "user", Content: bs} }
	a := func(bs ...ContentBlock) Message { return Message{Role: "assistant", Content: bs} }
	tool := Tool{ToolSpec: &ToolSpec{Name: "t"}}
	tool.ToolSpec.InputSchema.JSON = json.RawMessage(`{"type":"object"}`)
	toolCP := Tool{CachePoint: &CachePoint{Type: types.CachePointTypeDefault}}
	const claude, nova, llama = "us.anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0", "meta.llama3-70b-instruct-v1:0"
	tests := []struct {
		name string
		req  Request
		want string // "" = valid
	}{
		{"system and newest message", Request{ModelID: claude, System: []SystemBlock{sys("s"), sysCP("")},
			Messages: []Message{u(txt("x")), a(txt("y")), u(txt("z"), cp(""))}}, ""},
		{"the local model, tools too", Request{ModelID: "local", ToolConfig: &ToolConfig{Tools: []Tool{tool, toolCP}},
			Messages: []Message{u(txt("x"), cp(""))}}, ""},
		{"assistant message", Request{ModelID: claude, Messages: []Message{u(txt("x")), a(txt("y"), cp("")), u(txt("z"))}}, ""},
		{"Nova: system and messages", Request{ModelID: nova, System: []SystemBlock{sys("s"), sysCP("")}, Messages: []Message{u(txt("x"), cp(""))}}, ""},
		{"Nova: not in the tools", Request{ModelID: nova, ToolConfig: &ToolConfig{Tools: []Tool{tool, toolCP}}, Messages: []Message{u(txt("x"))}},
			"#/toolConfig/tools/1: extraneous key [cachePoint] is not permitted"},
		{"a model without prompt caching", Request{ModelID: llama, Messages: []Message{u(txt("x"), cp(""))}},
			"#/messages/0/content/1: extraneous key [cachePoint] is not permitted"},
		{"first in a message", Request{ModelID: claude, Messages: []Message{u(txt("x")), a(txt("y")), u(cp(""), txt("z"))}},
			"cachePoint at messages.2.content.0 must follow a content block"},
		{"alone in a message", Request{ModelID: claude, Messages: []Message{u(cp(""))}}, "must follow a content block"},
		{"first in the system prompt", Request{ModelID: claude, System: []SystemBlock{sysCP(""), sys("s")}, Messages: []Message{u(txt("x"))}},
			"cachePoint at system.0 must follow"},
		{"first in the tools", Request{ModelID: claude, ToolConfig: &ToolConfig{Tools: []Tool{toolCP, tool}}, Messages: []Message{u(txt("x"))}},
			"cachePoint at toolConfig.tools.0 must follow"},
		{"two in a row", Request{ModelID: claude, Messages: []Message{u(txt("x"), cp(""), cp(""))}}, "cachePoint at messages.0.content.2 must follow"},
		{"five", Request{ModelID: claude, System: []SystemBlock{sys("s"), sysCP("")},
			Messages: []Message{u(txt("a"), cp("")), a(txt("b"), cp("")), u(txt("c"), cp("")), a(txt("d"), cp("")), u(txt("e"))}},
			"A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"TTL growing from system to messages", Request{ModelID: claude, System: []SystemBlock{sys("s"), sysCP("5m")}, Messages: []Message{u(txt("x"), cp("1h"))}},
			"a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"},
		{"TTL growing, 5m by default", Request{ModelID: claude, System: []SystemBlock{sys("s"), sysCP("")}, Messages: []Message{u(txt("x"), cp("1h"))}},
			"must not come after"},
		{"TTL shrinking", Request{ModelID: claude, System: []SystemBlock{sys("s"), sysCP("1h")}, Messages: []Message{u(txt("x"), cp("5m"))}}, ""},
		{"unknown TTL", Request{ModelID: claude, Messages: []Message{u(txt("x"), cp("10m"))}}, "Value '10m' at 'messages.0.content.1.member.cachePoint.ttl' failed to satisfy constraint"},
		{"unknown type", Request{ModelID: claude, Messages: []Message{u(txt("x"), ContentBlock{CachePoint: &CachePoint{Type: "ephemeral"}})}}, "enum value set: [default]"},
		{"a system block with text and a cache point", Request{ModelID: claude,
			System: []SystemBlock{{Text: "s", CachePoint: &CachePoint{Type: types.CachePointTypeDefault}}}, Messages: []Message{u(txt("x"))}},
			"must hold exactly one of text and cachePoint"},
		{"a content block with text and a cache point", Request{ModelID: claude,
			Messages: []Message{u(ContentBlock{Text: txt("x").Text, CachePoint: &CachePoint{Type: types.CachePointTypeDefault}})}},
			"must hold exactly one member, not 2"},
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

// A cache point in a tool result is an unknown field, refused as Bedrock
// refuses it.
func TestDecodeCachePointInToolResult(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"a","content":[{"text":"x"},{"cachePoint":{"type":"default"}}]}}]}]}`
	if _, err := DecodeRequest(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), "cachePoint") {
		t.Errorf("DecodeRequest = %v, want an unknown field cachePoint", err)
	}
}
