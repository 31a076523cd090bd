// Package schema compiles the JSON Schemas Hitch checks values against: a
// tool's input schema, a client tool's result schema, ask_user's schema
// (written by the model), an MCP server's tool input schemas and forms.
// Every schema in Hitch is compiled here, by Compile, and nowhere else.
//
// Schemas from outside are data, never a reach into the host
// (docs/api.md, "Pauses for input"): a schema is compiled with no loader,
// so only references inside the document (`#…`) resolve; any other $ref
// (a file, a URL, a URN) makes the schema invalid before the compiler
// sees it, and the compiler itself has no loader to open anything with.
// A schema over MaxBytes or nested deeper than MaxDepth is refused the
// same way. `pattern` and `patternProperties` are Go regular expressions
// (RE2, linear time): a pattern RE2 does not take (a backreference, a
// lookahead) makes the schema invalid, and no pattern can make a check
// take exponential time.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

const (
	// MaxBytes bounds a schema's JSON text.
	MaxBytes = 64 << 10
	// MaxDepth bounds how deep a schema's JSON nests (objects and arrays;
	// the schema itself is depth 1).
	MaxDepth = 32
)

// ErrInvalid is wrapped by every error of Compile: the schema is not
// JSON, not a JSON Schema, or breaks one of the rules above.
var ErrInvalid = errors.New("not a valid JSON Schema")

// Schema is a compiled JSON Schema.
type Schema struct {
	raw json.RawMessage
	sch *jsonschema.Schema
}

// url names the schema being compiled; nothing is ever loaded from it, or
// from anywhere.
const url = "mem:///schema.json"

// refKeywords are the keywords whose value is a reference.
var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// Compile compiles a JSON Schema (draft 2020-12 unless it says otherwise;
// an object or a boolean). An error wraps ErrInvalid and says, in one
// line, what is wrong; it never holds what a reference would have read.
func Compile(raw []byte) (*Schema, error) {
	if len(raw) > MaxBytes {
		return nil, invalid("over %d KiB (%d bytes)", MaxBytes>>10, len(raw))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, invalid("not JSON: %v", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, invalid("must be an object (or a boolean)")
	}
	if err := check(doc, "", 1); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// No loader: a reference the document does not hold is an error, never
	// a read (the library's default opens file:// URLs).
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(re2)
	if err := c.AddResource(url, doc); err != nil {
		return nil, compileError(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, compileError(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, invalid("not JSON: %v", err)
	}
	return &Schema{raw: compact.Bytes(), sch: sch}, nil
}

// check walks the document: its depth, and every reference local.
func check(v any, at string, depth int) error {
	if depth > MaxDepth {
		return invalid("nested deeper than %d (at %s)", MaxDepth, where(at))
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range refKeywords {
			ref, ok := v[k].(string)
			if ok && !strings.HasPrefix(ref, "#") {
				return invalid("%s %q at %s refers outside the schema; only references inside it (#…) are followed", k, ref, where(at))
			}
		}
		for k, e := range v {
			if err := check(e, at+"/"+k, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := check(e, at+"/"+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func where(at string) string {
	if at == "" {
		return "(root)"
	}
	return at
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// refuseLoader loads nothing. The walk above refuses every reference it
// would be asked for; this is the second lock on the same door (a $schema
// naming an unknown meta-schema comes here, too).
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema; nothing is loaded", u)
}

// re2 is the regular expression engine of pattern and patternProperties:
// Go's, RE2, linear in the input.
func re2(s string) (jsonschema.Regexp, error) { return regexp.Compile(s) }

// compileError makes a schema that does not compile into one line.
func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			return invalid("%s", describe(ve, ""))
		}
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return invalid("%s is outside the schema; only references inside it (#…) are followed", le.URL)
	}
	var re *jsonschema.InvalidRegexError
	if errors.As(err, &re) {
		return invalid("%s: %q is not a regex Go's RE2 takes (no backreferences or lookaround): %v", strings.TrimPrefix(re.URL, url+"#"), re.Regex, re.Err)
	}
	// The compiler names the in-memory URL; it means nothing to the user.
	return invalid("%s", strings.ReplaceAll(err.Error(), url, "schema"))
}

// Raw returns the schema as compact JSON.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// ValueError is a value that does not fit its schema: Problems names each
// field at fault and why, as "field: reason" joined by "; ".
type ValueError struct{ Problems string }

func (e *ValueError) Error() string { return e.Problems }

// Validate checks a JSON value against the schema, naming it root in the
// problems it finds (a *ValueError).
func (s *Schema) Validate(value json.RawMessage, root string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return &ValueError{Problems: root + " is not valid JSON"}
	}
	if err := s.sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ValueError{Problems: describe(ve, root)}
		}
		return &ValueError{Problems: fmt.Sprintf("%s is invalid: %v", root, err)}
	}
	return nil
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
