package mcp

import (
	"encoding/json"
	"testing"
)

func TestCheckContent(t *testing.T) {
	form := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"size":{"type":"integer","minimum":1},
		"seat":{"type":"string","enum":["inside","outside"]}},"required":["name"]}`)
	var tool Tool
	for _, tc := range []struct {
		content string
		ok      bool
	}{
		{`{"name":"Ada"}`, true},
		{`{"name":"Ada","size":4,"seat":"inside"}`, true},
		{`{}`, false},
		{`{"name":""}`, false},
		{`{"name":"Ada","size":0}`, false},
		{`{"name":"Ada","seat":"roof"}`, false},
	} {
		if err := tool.CheckContent(form, json.RawMessage(tc.content)); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.content, err, tc.ok)
		}
	}
	// A schema that does not compile, or refers outside itself, is refused
	// (a form never pauses with one; one stored before is refused here).
	for _, schema := range []string{`{"type":7}`, `{"$ref":"file:///etc/passwd"}`} {
		if err := tool.CheckContent(json.RawMessage(schema), json.RawMessage(`{}`)); err == nil {
			t.Errorf("the schema %s was taken", schema)
		}
	}
}
