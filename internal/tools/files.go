package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hitch-agents/hitch/internal/agent"
)

// ErrFilesUnavailable is every files call's error where the disk is not
// shared between invocations (Lambda).
var ErrFilesUnavailable = errors.New("files tools need a shared disk; not available on Lambda")

// FilesConfig configures the files group.
type FilesConfig struct {
	// Root is the directory the tools work in; created on first use.
	Root string
	// Store, when set, keeps the files instead of Root (files on S3:
	// internal/s3files).
	Store FileStore
	// Unavailable makes every call fail with ErrFilesUnavailable.
	Unavailable bool
}

// FileStore keeps a files group's files: a directory (Dir) or an S3 prefix
// (internal/s3files). Names are clean, relative and slash-separated; "." is
// the root. Errors are for the model to read: a missing file wraps
// ErrNotExist, a directory where a file is wanted ErrIsDir, a file where a
// directory is wanted ErrNotDir; others say what went wrong without internal
// detail.
type FileStore interface {
	// List returns the entries of a directory, sorted, directories ending
	// with "/".
	List(ctx context.Context, dir string) ([]string, error)
	// Read returns a file's content, at most limit bytes (more is an error).
	Read(ctx context.Context, name string, limit int64) ([]byte, error)
	// Write creates or replaces a file, creating its directories.
	Write(ctx context.Context, name string, data []byte) error
	// Append appends to a file, creating it (and its directories) if missing.
	Append(ctx context.Context, name string, data []byte) error
	// Delete deletes a file.
	Delete(ctx context.Context, name string) error
}

// Errors a FileStore wraps, with the path: "a.txt: no such file or directory".
var (
	ErrNotExist = errors.New("no such file or directory")
	ErrIsDir    = errors.New("is a directory")
	ErrNotDir   = errors.New("not a directory")
)

// PathError is a FileStore's error about one path.
func PathError(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }

// maxReadBytes bounds what read_file loads into memory; the engine cuts the
// result to the agent's max_tool_result_bytes anyway.
const maxReadBytes = 8 << 20

// Files returns the files group: list_files, read_file, write_file,
// append_file, delete_file. All but append_file are idempotent.
func Files(cfg FilesConfig) []Builtin {
	store := cfg.Store
	if store == nil {
		store = Dir(cfg.Root)
	}
	mk := func(op *fileOp) *FileTool { return &FileTool{store: store, unavailable: cfg.Unavailable, op: op} }
	return []Builtin{
		{Tool: mk(listFiles), Idempotent: true},
		{Tool: mk(readFile), Idempotent: true},
		{Tool: mk(writeFile), Idempotent: true},
		{Tool: mk(appendFile), Idempotent: false},
		{Tool: mk(deleteFile), Idempotent: true},
	}
}

// FileTool is one tool of the files group.
type FileTool struct {
	store       FileStore
	unavailable bool
	op          *fileOp
}

var (
	_ agent.Tool           = (*FileTool)(nil)
	_ agent.InputValidator = (*FileTool)(nil)
)

// fileInput is the input of every files tool; each uses its part.
type fileInput struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type fileOp struct {
	name        string
	description string
	schema      *Schema
	run         func(ctx context.Context, s FileStore, in fileInput) (string, error)
}

// Spec describes the tool.
func (t *FileTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: t.op.name, Description: t.op.description, InputSchema: t.op.schema.Raw()}
}

// ValidateInput checks the input against the schema.
func (t *FileTool) ValidateInput(input json.RawMessage) error { return t.op.schema.Validate(input) }

// Run runs the operation inside the root.
func (t *FileTool) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	if t.unavailable {
		return agent.ToolOutput{}, ErrFilesUnavailable
	}
	var in fileInput
	if err := decodeInput(t.op.schema, call.Input, &in); err != nil {
		return agent.ToolOutput{}, err
	}
	p, err := cleanPath(in.Path)
	if err != nil {
		return agent.ToolOutput{}, err
	}
	in.Path = p
	if err := ctx.Err(); err != nil {
		return agent.ToolOutput{}, err
	}
	out, err := t.op.run(ctx, t.store, in)
	if err != nil {
		return agent.ToolOutput{}, err
	}
	return text(out), nil
}

// cleanPath checks a path given by the model: relative, not leaving the root.
// "" is the root itself. The result is slash-separated.
func cleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("path %q is absolute; paths are relative to the files root", p)
	}
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q leaves the files root", p)
	}
	return filepath.ToSlash(filepath.Clean(p)), nil
}

const (
	pathOptional = `{
	"type": "object",
	"properties": {"path": {"type": "string", "description": "A directory relative to the files root; the root when omitted."}},
	"additionalProperties": false
}`
	pathOnly = `{
	"type": "object",
	"properties": {"path": {"type": "string", "minLength": 1, "description": "A file path relative to the files root."}},
	"required": ["path"],
	"additionalProperties": false
}`
	pathContent = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1, "description": "A file path relative to the files root."},
		"content": {"type": "string", "description": "The text to write."}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`
)

var listFiles = &fileOp{
	name:        "list_files",
	description: "Lists a directory of the files root (the root by default): one name per line, sorted, directories ending with /.",
	schema:      MustCompileSchema(pathOptional),
	run: func(ctx context.Context, s FileStore, in fileInput) (string, error) {
		names, err := s.List(ctx, in.Path)
		if err != nil {
			return "", err
		}
		if len(names) == 0 {
			return "(empty directory)", nil
		}
		return strings.Join(names, "\n"), nil
	},
}

var readFile = &fileOp{
	name:        "read_file",
	description: "Reads a text file of the files root.",
	schema:      MustCompileSchema(pathOnly),
	run: func(ctx context.Context, s FileStore, in fileInput) (string, error) {
		b, err := s.Read(ctx, in.Path, maxReadBytes)
		if errors.Is(err, ErrIsDir) {
			return "", fmt.Errorf("%s: is a directory; use list_files", in.Path)
		}
		if err != nil {
			return "", err
		}
		if len(b) == 0 {
			return "(empty file)", nil
		}
		return string(b), nil
	},
}

var writeFile = &fileOp{
	name:        "write_file",
	description: "Writes a text file of the files root, creating it (and its directories) or replacing it.",
	schema:      MustCompileSchema(pathContent),
	run: func(ctx context.Context, s FileStore, in fileInput) (string, error) {
		if err := s.Write(ctx, in.Path, []byte(in.Content)); err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote %s to %s", byteCount(len(in.Content)), in.Path), nil
	},
}

var appendFile = &fileOp{
	name:        "append_file",
	description: "Appends text to a file of the files root, creating it (and its directories) if missing.",
	schema:      MustCompileSchema(pathContent),
	run: func(ctx context.Context, s FileStore, in fileInput) (string, error) {
		if err := s.Append(ctx, in.Path, []byte(in.Content)); err != nil {
			return "", err
		}
		return fmt.Sprintf("appended %s to %s", byteCount(len(in.Content)), in.Path), nil
	},
}

var deleteFile = &fileOp{
	name:        "delete_file",
	description: "Deletes a file of the files root.",
	schema:      MustCompileSchema(pathOnly),
	run: func(ctx context.Context, s FileStore, in fileInput) (string, error) {
		err := s.Delete(ctx, in.Path)
		if errors.Is(err, ErrIsDir) {
			return "", fmt.Errorf("%s: is a directory; delete_file deletes files", in.Path)
		}
		if err != nil {
			return "", err
		}
		return "deleted " + in.Path, nil
	},
}

// ParseS3URL splits s3://bucket[/prefix] and checks the bucket's name.
func ParseS3URL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URL (s3://bucket/prefix)", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return "", "", fmt.Errorf("%q: %q is not an S3 bucket name (3–63 lower-case letters, digits, dots and hyphens)", u, bucket)
	}
	prefix = strings.Trim(prefix, "/")
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "." || seg == ".." {
			return "", "", fmt.Errorf("%q: the prefix may not hold . or .. segments", u)
		}
	}
	return bucket, prefix, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (c == '.' || c == '-') && i > 0 && i < len(b)-1
		if !ok {
			return false
		}
	}
	return true
}

// byteCount is n bytes in words: "1 byte", "0 bytes", "12 bytes".
func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
