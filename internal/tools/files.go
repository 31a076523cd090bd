package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
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
	// Unavailable makes every call fail with ErrFilesUnavailable.
	Unavailable bool
}

// maxReadBytes bounds what read_file loads into memory; the engine cuts the
// result to the agent's max_tool_result_bytes anyway.
const maxReadBytes = 8 << 20

// Files returns the files group: list_files, read_file, write_file,
// append_file, delete_file. All but append_file are idempotent.
func Files(cfg FilesConfig) []Builtin {
	fsys := &sandbox{root: cfg.Root, unavailable: cfg.Unavailable}
	mk := func(op *fileOp) *FileTool { return &FileTool{fs: fsys, op: op} }
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
	fs *sandbox
	op *fileOp
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
	run         func(r *os.Root, in fileInput) (string, error)
}

// Spec describes the tool.
func (t *FileTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: t.op.name, Description: t.op.description, InputSchema: t.op.schema.Raw()}
}

// ValidateInput checks the input against the schema.
func (t *FileTool) ValidateInput(input json.RawMessage) error { return t.op.schema.Validate(input) }

// Run runs the operation inside the root.
func (t *FileTool) Run(ctx context.Context, call agent.ToolCall) (agent.ToolOutput, error) {
	if t.fs.unavailable {
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
	r, err := t.fs.open()
	if err != nil {
		return agent.ToolOutput{}, err
	}
	defer r.Close()
	out, err := t.op.run(r, in)
	if err != nil {
		return agent.ToolOutput{}, pathError(err)
	}
	return text(out), nil
}

// sandbox is the root directory shared by a group's tools.
type sandbox struct {
	root        string
	unavailable bool
}

func (s *sandbox) open() (*os.Root, error) {
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, errors.New("the files root cannot be created")
	}
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, errors.New("the files root cannot be opened")
	}
	return r, nil
}

// cleanPath checks a path given by the model: relative, not leaving the root.
// "" is the root itself.
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
	return filepath.Clean(p), nil
}

// pathError makes an error of os.Root readable for the model, without the
// root's location on disk.
func pathError(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	name := filepath.ToSlash(pe.Path)
	switch {
	case strings.Contains(pe.Err.Error(), "path escapes from parent"):
		return fmt.Errorf("path %q resolves outside the files root", name)
	case errors.Is(pe.Err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file or directory", name)
	case errors.Is(pe.Err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", name)
	}
	return fmt.Errorf("%s: %v", name, pe.Err)
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
	run: func(r *os.Root, in fileInput) (string, error) {
		d, err := r.Open(in.Path)
		if err != nil {
			return "", err
		}
		defer d.Close()
		entries, err := d.ReadDir(-1)
		if err != nil {
			if errors.Is(err, fs.ErrInvalid) || strings.Contains(err.Error(), "not a directory") {
				return "", fmt.Errorf("%s: not a directory", filepath.ToSlash(in.Path))
			}
			return "", err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 && isDir(r, path.Join(filepath.ToSlash(in.Path), name)) {
				name += "/"
			}
			names = append(names, name)
		}
		if len(names) == 0 {
			return "(empty directory)", nil
		}
		slices.Sort(names)
		return strings.Join(names, "\n"), nil
	},
}

// isDir tells whether name, a symlink, resolves to a directory inside the root.
func isDir(r *os.Root, name string) bool {
	fi, err := r.Stat(name)
	return err == nil && fi.IsDir()
}

var readFile = &fileOp{
	name:        "read_file",
	description: "Reads a text file of the files root.",
	schema:      MustCompileSchema(pathOnly),
	run: func(r *os.Root, in fileInput) (string, error) {
		f, err := r.Open(in.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return "", err
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%s: is a directory; use list_files", filepath.ToSlash(in.Path))
		}
		b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
		if err != nil {
			return "", err
		}
		if len(b) > maxReadBytes {
			return "", fmt.Errorf("%s: larger than %d bytes", filepath.ToSlash(in.Path), maxReadBytes)
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
	run: func(r *os.Root, in fileInput) (string, error) {
		if err := mkParents(r, in.Path); err != nil {
			return "", err
		}
		if err := r.WriteFile(in.Path, []byte(in.Content), 0o644); err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(in.Content), filepath.ToSlash(in.Path)), nil
	},
}

var appendFile = &fileOp{
	name:        "append_file",
	description: "Appends text to a file of the files root, creating it (and its directories) if missing.",
	schema:      MustCompileSchema(pathContent),
	run: func(r *os.Root, in fileInput) (string, error) {
		if err := mkParents(r, in.Path); err != nil {
			return "", err
		}
		f, err := r.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		if _, err := io.WriteString(f, in.Content); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		return fmt.Sprintf("appended %d bytes to %s", len(in.Content), filepath.ToSlash(in.Path)), nil
	},
}

var deleteFile = &fileOp{
	name:        "delete_file",
	description: "Deletes a file of the files root.",
	schema:      MustCompileSchema(pathOnly),
	run: func(r *os.Root, in fileInput) (string, error) {
		// Stat follows symlinks: a link resolving outside the root is refused
		// like any other path leaving it.
		fi, err := r.Stat(in.Path)
		if err != nil {
			return "", err
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%s: is a directory; delete_file deletes files", filepath.ToSlash(in.Path))
		}
		if err := r.Remove(in.Path); err != nil {
			return "", err
		}
		return "deleted " + filepath.ToSlash(in.Path), nil
	},
}

// mkParents creates the directories above name.
func mkParents(r *os.Root, name string) error {
	dir := filepath.Dir(name)
	if dir == "." {
		return nil
	}
	return r.MkdirAll(dir, 0o755)
}
