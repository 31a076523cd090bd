package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/hitch-agents/hitch/internal/agent"
)

// readBody reads the body within the limit: 413 body_too_large past it.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, agent.Errorf(agent.CodeBodyTooLarge, "the body is over %d bytes", limit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, agent.Errorf(agent.CodeBodyTooLarge, "the body is over %d bytes", limit)
	}
	if err != nil {
		return nil, agent.Errorf(agent.CodeInvalidJSON, "the body could not be read")
	}
	return b, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data. what names the thing decoded, for messages; typeCode is the
// code of a value of the wrong type.
func decodeStrict(data []byte, v any, what, typeCode string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, what, typeCode)
	}
	if dec.More() {
		return agent.Errorf(agent.CodeInvalidJSON, "%s: unexpected data after the JSON value", what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return agent.Errorf(agent.CodeInvalidJSON, "%s: unexpected data after the JSON value", what)
	}
	return nil
}

func jsonError(err error, what, typeCode string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return agent.Errorf(agent.CodeInvalidJSON, "%s is not valid JSON", what)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = what
		}
		return agent.Errorf(typeCode, "%s: %s must be a JSON %s", what, field, jsonKind(te))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return agent.Errorf(agent.CodeUnknownField, "%s: unknown field %s", what, name)
	}
	return agent.Errorf(agent.CodeInvalidJSON, "%s is not valid JSON", what)
}

func jsonKind(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind().String() {
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "int", "int64", "float64":
		return "number"
	case "bool":
		return "boolean"
	}
	return "value"
}

// userMessage is the invoke body (docs/api.md, Invoke).
type userMessage struct {
	SessionID string
	TaskID    string
	Items     []agent.InputItem
	Metadata  map[string]string
}

// parseUserMessage decodes an invoke (or, with editOnly, an edit) body, each
// field with its own error code.
func parseUserMessage(body []byte, editOnly bool) (*userMessage, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict(body, &top, "the body", agent.CodeInvalidJSON); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, agent.Errorf(agent.CodeInvalidJSON, "the body must be a JSON object")
	}
	known := map[string]bool{"items": true}
	if !editOnly {
		known["session_id"], known["task_id"], known["metadata"] = true, true, true
	}
	for k := range top {
		if !known[k] {
			return nil, agent.Errorf(agent.CodeUnknownField, "unknown field %q", k)
		}
	}
	m := &userMessage{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"session_id", &m.SessionID}, {"task_id", &m.TaskID}} {
		raw, ok := top[f.name]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return nil, agent.Errorf(agent.CodeInvalidID, "%s must be a UUID string", f.name)
		}
	}
	raw, ok := top["items"]
	if !ok || string(raw) == "null" {
		return nil, agent.Errorf(agent.CodeInvalidItems, "items is required: a non-empty list of {content_type, content}")
	}
	if err := decodeStrict(raw, &m.Items, "items", agent.CodeInvalidItems); err != nil {
		return nil, err
	}
	if raw, ok := top["metadata"]; ok && string(raw) != "null" {
		if err := decodeStrict(raw, &m.Metadata, "metadata", agent.CodeInvalidMetadata); err != nil {
			return nil, agent.Errorf(agent.CodeInvalidMetadata, "metadata must be an object of string values")
		}
	}
	return m, nil
}
