package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

func TestCompileSchema(t *testing.T) {
	tests := []struct {
		schema  string
		wantErr string // a part of the error; "" for none
	}{
		{schema: `{"type":"object"}`},
		{schema: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`},
		{schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`},
		{schema: `[1]`, wantErr: "must be an object"},
		{schema: `{"type":"string"}`, wantErr: "must have type: object"},
		{schema: `{"properties":{}}`, wantErr: "must have type: object"},
		{schema: `{"type":"object","properties":{"id":{"type":"strin"}}}`, wantErr: "not a valid JSON Schema: properties.id.type"},
		{schema: `{"type":"object","required":"id"}`, wantErr: "not a valid JSON Schema: required: got string, want array"},
		{schema: `{"type":"object","properties":{"x":{"$ref":"#/nowhere"}}}`, wantErr: "not a valid JSON Schema"},
		{schema: `{"type":"object",`, wantErr: "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			_, err := tools.CompileSchema(json.RawMessage(tt.schema))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CompileSchema() error = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CompileSchema() error = %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "mem:") {
				t.Errorf("CompileSchema() error %q shows the internal URL", err)
			}
		})
	}
}

func TestSchemaValidate(t *testing.T) {
	s := tools.MustCompileSchema(`{
		"type": "object",
		"properties": {
			"id": {"type": "string", "minLength": 2},
			"tags": {"type": "array", "items": {"type": "string"}},
			"n": {"type": "integer", "minimum": 1}
		},
		"required": ["id"],
		"additionalProperties": false
	}`)
	tests := []struct {
		input   string
		wantErr string
	}{
		{input: `{"id":"ab"}`},
		{input: `{"id":"ab","tags":["x"],"n":3}`},
		{input: `{}`, wantErr: "input.id: required"},
		{input: ``, wantErr: "input.id: required"},
		{input: `{"id":7}`, wantErr: "input.id: got number, want string"},
		{input: `{"id":"a"}`, wantErr: "input.id: minLength: got 1, want 2"},
		{input: `{"id":"ab","tags":["x",2]}`, wantErr: "input.tags[1]: got number, want string"},
		{input: `{"id":"ab","n":0}`, wantErr: "input.n: minimum: got 0, want 1"},
		{input: `{"id":"ab","extra":1}`, wantErr: "input.extra: unknown field, not allowed"},
		{input: `[]`, wantErr: "input: got array, want object"},
		{input: `{"id":`, wantErr: "input is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			err := s.Validate(json.RawMessage(tt.input))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() error = %v", err)
				}
				return
			}
			var ae *agent.Error
			if !errors.As(err, &ae) || ae.Code != agent.CodeInvalidInput {
				t.Fatalf("Validate() error = %#v, want an *agent.Error invalid_input", err)
			}
			if ae.Message != tt.wantErr {
				t.Errorf("Validate() message = %q, want %q", ae.Message, tt.wantErr)
			}
		})
	}
}
