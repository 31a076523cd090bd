package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/hitch-agents/hitch/internal/agent"
)

// Schema is a compiled JSON Schema of a tool's input.
type Schema struct {
	raw json.RawMessage
	sch *jsonschema.Schema
}

// schemaURL names the schema being compiled; nothing is ever loaded from it.
const schemaURL = "mem:///input_schema.json"

// CompileSchema compiles a tool's input schema. It must be a JSON object
// whose type is "object", as Bedrock requires of a tool's input.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("must be an object")
	}
	if obj["type"] != "object" {
		return nil, errors.New(`must have type: object`)
	}
	return compile(raw, doc)
}

// CompileValueSchema compiles a JSON Schema of any value: the answer an
// input call asks for (a client tool's result_schema, ask_user's schema).
func CompileValueSchema(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("must be an object (or a boolean)")
	}
	return compile(raw, doc)
}

func compile(raw json.RawMessage, doc any) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileError(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return &Schema{raw: compact.Bytes(), sch: sch}, nil
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
func (s *Schema) Raw() json.RawMessage { return s.raw }

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
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return agent.Errorf(agent.CodeInvalidInput, "%s is not valid JSON", root)
	}
	if err := s.sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return agent.Errorf(agent.CodeInvalidInput, "%s", describe(ve, root))
		}
		return agent.Errorf(agent.CodeInvalidInput, "%s is invalid: %v", root, err)
	}
	return nil
}

// compileError makes a schema that does not compile into one line.
func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			return fmt.Errorf("not a valid JSON Schema: %s", describe(ve, ""))
		}
	}
	msg := err.Error()
	// The compiler names the in-memory URL; it means nothing to the user.
	msg = strings.ReplaceAll(msg, schemaURL, "input_schema")
	return fmt.Errorf("not a valid JSON Schema: %s", msg)
}

var printer = message.NewPrinter(language.English)

// maxProblems bounds the problems one message lists.
const maxProblems = 5

// describe lists the leaf failures of ve as "field: reason", joined by "; ".
// root names the instance ("input"; "" for a schema's own location).
func describe(ve *jsonschema.ValidationError, root string) string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := location(root, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, p := range k.Missing {
				add(location(root, append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p)) + ": required")
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				add(location(root, append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], p)) + ": unknown field, not allowed")
			}
		default:
			add(loc + ": " + e.ErrorKind.LocalizedString(printer))
		}
	}
	walk(ve)
	if len(out) > maxProblems {
		out = append(out[:maxProblems], fmt.Sprintf("and %d more", len(out)-maxProblems))
	}
	return strings.Join(out, "; ")
}

// location renders a JSON pointer's tokens as a field path: input.a[2].b.
func location(root string, tokens []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	if b.Len() == 0 {
		return "(root)"
	}
	return b.String()
}
