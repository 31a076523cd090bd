package tools

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/schema"
)

// Schema is a compiled JSON Schema of a tool's input, or of an answer.
// Every schema is compiled by internal/schema, which loads nothing from
// outside the schema (docs/api.md, "Pauses for input").
type Schema struct{ s *schema.Schema }

// CompileSchema compiles a tool's input schema. It must be a JSON object
// whose type is "object", as Bedrock requires of a tool's input.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		if json.Valid(raw) {
			return nil, errors.New("must be an object")
		}
		return compile(raw) // says why it is not JSON
	}
	if !bytes.Equal(bytes.TrimSpace(obj["type"]), []byte(`"object"`)) {
		return nil, errors.New(`must have type: object`)
	}
	return compile(raw)
}

// CompileValueSchema compiles a JSON Schema of any value: the answer an
// input call asks for (a client tool's result_schema, ask_user's schema).
func CompileValueSchema(raw json.RawMessage) (*Schema, error) { return compile(raw) }

func compile(raw json.RawMessage) (*Schema, error) {
	s, err := schema.Compile(raw)
	if err != nil {
		return nil, err
	}
	return &Schema{s: s}, nil
}

// MustCompileSchema compiles a schema written in the code; it panics if the
// schema is wrong.
func MustCompileSchema(raw string) *Schema {
	s, err := CompileSchema(json.RawMessage(raw))
	if err != nil {
		panic("tools: bad built-in schema: " + err.Error())
	}
	return s
}

// Raw returns the schema as compact JSON, for the model.
func (s *Schema) Raw() json.RawMessage { return s.s.Raw() }

// Validate checks input (empty means {}) against the schema. An invalid
// input is an *agent.Error with code invalid_input naming each field at
// fault and why.
func (s *Schema) Validate(input json.RawMessage) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	return s.ValidateAs(input, "input")
}

// ValidateAs checks a value against the schema, naming it root in the
// problems it finds (an *agent.Error invalid_input).
func (s *Schema) ValidateAs(value json.RawMessage, root string) error {
	if err := s.s.Validate(value, root); err != nil {
		return agent.Errorf(agent.CodeInvalidInput, "%s", err.Error())
	}
	return nil
}
