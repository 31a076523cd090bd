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
	// A schema this side cannot read is left to the server.
	if err := tool.CheckContent(json.RawMessage(`{"type":7}`), json.RawMessage(`{}`)); err != nil {
		t.Errorf("an unreadable schema: %v", err)
	}
}
