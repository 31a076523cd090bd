package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/hitch-agents/hitch/internal/agent"
)

// GroupArtifacts is the artifacts group: save_artifact and read_artifact.
const GroupArtifacts = "artifacts"

// FileOpener is a FileStore that streams a file (an artifact saved from a
// file is then never held whole in memory).
type FileOpener interface {
	OpenFile(ctx context.Context, name string) (io.ReadCloser, error)
}

// Artifacts returns the artifacts group. save_artifact's from_path reads
// the agent's files group, once UseFiles binds it.
func Artifacts() []Builtin {
	return []Builtin{
		// A second run would save a second artifact.
		{Tool: &SaveArtifact{}, Idempotent: false},
		{Tool: &ReadArtifact{}, Idempotent: true},
	}
}

// SaveArtifact is save_artifact {name, content | from_path, media_type?}.
type SaveArtifact struct {
	files       FileStore
	unavailable bool
}

var (
	_ agent.Tool           = (*SaveArtifact)(nil)
	_ agent.InputValidator = (*SaveArtifact)(nil)
)

// UseFiles binds the agent's files tools: from_path reads their files.
func (t *SaveArtifact) UseFiles(ft *FileTool) { t.files, t.unavailable = ft.store, ft.unavailable }

var saveArtifactSchema = MustCompileSchema(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "minLength": 1, "maxLength": 255, "description": "The artifact's file name, e.g. report.md; no / or \\."},
		"content": {"type": "string", "description": "The artifact's text."},
		"from_path": {"type": "string", "minLength": 1, "description": "A file of the files tools to save instead of content."},
		"media_type": {"type": "string", "minLength": 1, "description": "Its media type, e.g. text/csv; guessed from the name when omitted."}
	},
	"required": ["name"],
	"additionalProperties": false
}`)

// Spec describes save_artifact.
func (t *SaveArtifact) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "save_artifact",
		Description: "Saves a file the user can download, kept with this task: give name and either content (text) " +
			"or from_path (a file of the files tools). Answers the artifact's id.",
		InputSchema: saveArtifactSchema.Raw(),
	}
}

// ValidateInput checks the input against the schema.
func (t *SaveArtifact) ValidateInput(input json.RawMessage) error {
	return saveArtifactSchema.Validate(input)
}

type saveInput struct {
	Name      string  `json:"name"`
	Content   *string `json:"content"`
	FromPath  string  `json:"from_path"`
	MediaType string  `json:"media_type"`
}

// Run saves the artifact; the engine names it in the result.
func (t *SaveArtifact) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	var in saveInput
	if err := decodeInput(saveArtifactSchema, call.Input, &in); err != nil {
		return agent.ToolOutput{}, err
	}
	if err := agent.ValidateArtifactName(in.Name); err != nil {
		return agent.ToolOutput{}, err
	}
	var body io.Reader
	switch {
	case in.Content != nil && in.FromPath != "":
		return agent.ToolOutput{}, errors.New("give content or from_path, not both")
	case in.Content != nil:
		body = strings.NewReader(*in.Content)
		if in.MediaType == "" {
			in.MediaType = guessType(in.Name, "text/plain; charset=utf-8")
		}
	case in.FromPath != "":
		rc, err := t.open(ctx, in.FromPath)
		if err != nil {
			return agent.ToolOutput{}, err
		}
		defer rc.Close()
		body = rc
		if in.MediaType == "" {
			in.MediaType = guessType(in.Name, agent.DefaultArtifactType)
		}
	default:
		return agent.ToolOutput{}, errors.New("give content (the artifact's text) or from_path (a file of the files tools)")
	}
	if _, err := agent.SaveArtifact(ctx, agent.NewArtifact{Name: in.Name, MediaType: in.MediaType, Body: body}); err != nil {
		return agent.ToolOutput{}, err
	}
	return agent.ToolOutput{}, nil
}

// open opens a file of the files tools, streamed where the store can.
func (t *SaveArtifact) open(ctx context.Context, p string) (io.ReadCloser, error) {
	if t.files == nil {
		return nil, errors.New("from_path needs the files tools (builtin: files) in this agent")
	}
	if t.unavailable {
		return nil, ErrFilesUnavailable
	}
	name, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	if name == "." {
		return nil, errors.New("from_path names the files root, a directory; name a file")
	}
	if o, ok := t.files.(FileOpener); ok {
		return o.OpenFile(ctx, name)
	}
	b, err := t.files.Read(ctx, name, agent.MaxArtifactBytes)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader(string(b))), nil
}

// guessType is the media type of a name's extension, or def.
func guessType(name, def string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown; charset=utf-8"
	case ".yaml", ".yml":
		return "application/yaml"
	}
	return def
}

// ReadArtifact is read_artifact {artifact_id}: a text artifact of the task.
type ReadArtifact struct{}

var (
	_ agent.Tool           = (*ReadArtifact)(nil)
	_ agent.InputValidator = (*ReadArtifact)(nil)
)

var readArtifactSchema = MustCompileSchema(`{
	"type": "object",
	"properties": {
		"artifact_id": {"type": "string", "minLength": 1, "description": "The id a tool result gave the artifact."}
	},
	"required": ["artifact_id"],
	"additionalProperties": false
}`)

// Spec describes read_artifact.
func (t *ReadArtifact) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "read_artifact",
		Description: "Reads a text artifact of this task (a report, a CSV, JSON) by the id a tool result gave it.",
		InputSchema: readArtifactSchema.Raw(),
	}
}

// ValidateInput checks the input against the schema.
func (t *ReadArtifact) ValidateInput(input json.RawMessage) error {
	return readArtifactSchema.Validate(input)
}

// Run reads the artifact's text.
func (t *ReadArtifact) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	var in struct {
		ID string `json:"artifact_id"`
	}
	if err := decodeInput(readArtifactSchema, call.Input, &in); err != nil {
		return agent.ToolOutput{}, err
	}
	a, b, err := agent.ReadArtifact(ctx, in.ID, maxReadBytes)
	if err != nil {
		return agent.ToolOutput{}, err
	}
	if !IsText(a.MediaType) || !utf8.Valid(b) {
		return agent.ToolOutput{}, fmt.Errorf("the artifact %q is %s, not text; read_artifact reads text artifacts", a.Name, a.MediaType)
	}
	if len(b) == 0 {
		return text("(empty artifact)"), nil
	}
	return text(string(b)), nil
}

// IsText tells a textual media type: text/*, JSON, XML, YAML, JavaScript.
func IsText(mediaType string) bool {
	t, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(t, "text/"), strings.HasSuffix(t, "+json"), strings.HasSuffix(t, "+xml"):
		return true
	}
	switch t {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml", "application/javascript", "application/x-ndjson":
		return true
	}
	return false
}
