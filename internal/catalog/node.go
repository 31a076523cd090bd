package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks a definition's YAML nodes and records every problem with its
// field path.
type decoder struct {
	file string
	errs []error
	// places collects the S3 locations of the load's definitions
	// (storage.go); nil when parsed alone.
	places *places
}

func (d *decoder) fail(field, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func index(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// fields reads a mapping whose keys must be among known. Keys set to null
// are left out, as if absent. It returns nil (and records why) if n is not a
// mapping.
func (d *decoder) fields(n *yaml.Node, field string, known ...string) map[string]*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.fail(field, "must be a mapping, got %s", describe(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(field, "keys must be strings")
			continue
		}
		key := k.Value
		switch {
		case seen[key]:
			d.fail(join(field, key), "duplicate key")
			continue
		case !contains(known, key):
			d.fail(join(field, key), "unknown field (known: %s)", strings.Join(known, ", "))
			continue
		}
		seen[key] = true
		if !isNull(v) {
			out[key] = deref(v)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe names a node's kind for an error.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// str reads a scalar as written: `version: 0.1` is "0.1".
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(field, "must be a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// peekStr is n's value when it is a scalar, without failing otherwise.
func (d *decoder) peekStr(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	return n.Value, true
}

// nonEmpty reads a string that must not be blank.
func (d *decoder) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := d.str(n, field)
	if ok && strings.TrimSpace(s) == "" {
		d.fail(field, "must not be empty")
		return "", false
	}
	return s, ok
}

func (d *decoder) integer(n *yaml.Node, field string, lo, hi int) (int, bool) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		d.fail(field, "must be an integer, got %s", describe(n))
		return 0, false
	}
	if v < lo || v > hi {
		d.fail(field, "must be between %d and %d, got %d", lo, hi, v)
		return 0, false
	}
	return v, true
}

func (d *decoder) number(n *yaml.Node, field string, lo, hi float64) (float64, bool) {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		d.fail(field, "must be a number, got %s", describe(n))
		return 0, false
	}
	if v < lo || v > hi {
		d.fail(field, "must be between %g and %g, got %g", lo, hi, v)
		return 0, false
	}
	return v, true
}

func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.fail(field, "must be true or false, got %s", describe(n))
		return false, false
	}
	return v, true
}

// duration reads a positive Go duration (1h, 90s).
func (d *decoder) duration(n *yaml.Node, field string) (time.Duration, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fail(field, "%q is not a Go duration", s)
		return 0, false
	}
	if v <= 0 {
		d.fail(field, "must be positive, got %s", s)
		return 0, false
	}
	return v, true
}

// stringList reads a list of strings.
func (d *decoder) stringList(n *yaml.Node, field string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		d.fail(field, "must be a list, got %s", describe(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, e := range n.Content {
		e = deref(e)
		if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
			d.fail(index(field, i), "must be a string, got %s", describe(e))
			ok = false
			continue
		}
		out = append(out, e.Value)
	}
	return out, ok
}

// toJSON renders a YAML value as JSON.
func (d *decoder) toJSON(n *yaml.Node, field string) (json.RawMessage, bool) {
	var v any
	if err := n.Decode(&v); err != nil {
		d.fail(field, "cannot be read: %v", err)
		return nil, false
	}
	v, err := jsonValue(v)
	if err != nil {
		d.fail(field, "%v", err)
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.fail(field, "cannot be rendered as JSON: %v", err)
		return nil, false
	}
	return b, true
}

// jsonValue turns what yaml.v3 decodes into values encoding/json accepts.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	case time.Time:
		// YAML reads 2025-01-01 as a timestamp; JSON Schema wants the text.
		return v.Format(time.RFC3339), nil
	}
	return v, nil
}
