// Package filestest is the contract suite of tools.FileStore: the five files
// tools run over a store, with the same answers for every back end (a
// directory, S3).
package filestest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Backend is a store under test and direct access to what it keeps.
type Backend struct {
	Store tools.FileStore
	// Put writes a file under the root, name slash-separated.
	Put func(tb testing.TB, name, content string)
	// Get reads a file under the root; ok is false when it does not exist.
	Get func(tb testing.TB, name string) (content string, ok bool)
	// Outside reads the file that Run puts beside the root (secret.txt).
	Outside func(tb testing.TB) (content string, ok bool)
}

// Run runs the suite. newBackend returns a fresh back end whose root is
// empty and that has a file secret.txt ("secret") beside its root.
func Run(t *testing.T, newBackend func(tb testing.TB) *Backend) {
	t.Run("Read", func(t *testing.T) { testRead(t, newBackend(t)) })
	t.Run("Write", func(t *testing.T) { testWrite(t, newBackend(t)) })
	t.Run("EmptyRoot", func(t *testing.T) {
		b := newBackend(t)
		got, err := run(t, b, "list_files", `{}`)
		check(t, got, err, "(empty directory)", "")
	})
}

func run(tb testing.TB, b *Backend, name, input string) (string, error) {
	tb.Helper()
	for _, bt := range tools.Files(tools.FilesConfig{Store: b.Store}) {
		if bt.Tool.Spec().Name != name {
			continue
		}
		out, err := bt.Tool.Run(context.Background(), agent.ToolCall{ID: "c1", Name: name, Input: json.RawMessage(input)})
		if err != nil {
			return "", err
		}
		if len(out.Content) != 1 || out.Content[0].Type != agent.BlockText {
			tb.Fatalf("%s: output %+v, want one text block", name, out.Content)
		}
		return out.Content[0].Text, nil
	}
	tb.Fatalf("no tool %s", name)
	return "", nil
}

func check(tb testing.TB, got string, err error, want, wantErr string) {
	tb.Helper()
	if wantErr != "" {
		if err == nil {
			tb.Fatalf("got %q, want error %q", got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			tb.Fatalf("error = %q, want %q", err.Error(), wantErr)
		}
		return
	}
	if err != nil {
		tb.Fatalf("error = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Errorf("result (-want +got):\n%s", diff)
	}
}

func testRead(t *testing.T, b *Backend) {
	b.Put(t, "a.txt", "hello")
	b.Put(t, "empty.txt", "")
	b.Put(t, "sub/b.txt", "b")
	b.Put(t, "sub/deeper/c.txt", "c")
	tests := []struct {
		name, tool, input string
		want, wantErr     string
	}{
		{"list root", "list_files", `{}`, "a.txt\nempty.txt\nsub/", ""},
		{"list sub", "list_files", `{"path":"sub"}`, "b.txt\ndeeper/", ""},
		{"list sub with a slash", "list_files", `{"path":"sub/"}`, "b.txt\ndeeper/", ""},
		{"list a file", "list_files", `{"path":"a.txt"}`, "", "a.txt: not a directory"},
		{"list missing", "list_files", `{"path":"nope"}`, "", "nope: no such file or directory"},
		{"list dotdot", "list_files", `{"path":".."}`, "", `path ".." leaves the files root`},
		{"list absolute", "list_files", `{"path":"/etc"}`, "", `path "/etc" is absolute`},
		{"read", "read_file", `{"path":"a.txt"}`, "hello", ""},
		{"read nested", "read_file", `{"path":"sub/../sub/b.txt"}`, "b", ""},
		{"read empty", "read_file", `{"path":"empty.txt"}`, "(empty file)", ""},
		{"read missing", "read_file", `{"path":"missing.txt"}`, "", "missing.txt: no such file or directory"},
		{"read a directory", "read_file", `{"path":"sub"}`, "", "sub: is a directory; use list_files"},
		{"read beside the root", "read_file", `{"path":"../secret.txt"}`, "", `path "../secret.txt" leaves the files root`},
		{"read up and out", "read_file", `{"path":"sub/../../secret.txt"}`, "", `leaves the files root`},
		{"read absolute", "read_file", `{"path":"/etc/passwd"}`, "", "is absolute"},
		{"read no path", "read_file", `{}`, "", "invalid_input: input.path: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, b, tt.tool, tt.input)
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func testWrite(t *testing.T, b *Backend) {
	b.Put(t, "keep/x.txt", "x")
	steps := []struct {
		name, tool, input string
		want, wantErr     string
		file, content     string // the file after the step ("" content: absent)
	}{
		{"write new", "write_file", `{"path":"new.txt","content":"one"}`, "wrote 3 bytes to new.txt", "", "new.txt", "one"},
		{"write replaces", "write_file", `{"path":"new.txt","content":"two"}`, "wrote 3 bytes to new.txt", "", "new.txt", "two"},
		{"write creates dirs", "write_file", `{"path":"x/y/z.txt","content":"deep"}`, "wrote 4 bytes to x/y/z.txt", "", "x/y/z.txt", "deep"},
		{"append creates", "append_file", `{"path":"log/app.log","content":"a\n"}`, "appended 2 bytes to log/app.log", "", "log/app.log", "a\n"},
		{"append appends", "append_file", `{"path":"log/app.log","content":"b\n"}`, "appended 2 bytes to log/app.log", "", "log/app.log", "a\nb\n"},
		{"delete", "delete_file", `{"path":"new.txt"}`, "deleted new.txt", "", "new.txt", ""},
		{"delete again", "delete_file", `{"path":"new.txt"}`, "", "new.txt: no such file or directory", "", ""},
		{"delete a directory", "delete_file", `{"path":"keep"}`, "", "keep: is a directory; delete_file deletes files", "keep/x.txt", "x"},
		{"write beside the root", "write_file", `{"path":"../secret.txt","content":"x"}`, "", "leaves the files root", "", ""},
		{"write absolute", "write_file", `{"path":"/tmp/evil.txt","content":"x"}`, "", "is absolute", "", ""},
		{"append up and out", "append_file", `{"path":"a/../../secret.txt","content":"x"}`, "", "leaves the files root", "", ""},
		{"delete beside the root", "delete_file", `{"path":"../secret.txt"}`, "", "leaves the files root", "", ""},
		{"write no content", "write_file", `{"path":"a.txt"}`, "", "invalid_input: input.content: required", "", ""},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, b, tt.tool, tt.input)
			check(t, got, err, tt.want, tt.wantErr)
			if tt.file == "" {
				return
			}
			content, ok := b.Get(t, tt.file)
			switch {
			case tt.content == "" && ok:
				t.Errorf("%s exists (%q), want it absent", tt.file, content)
			case tt.content != "" && content != tt.content:
				t.Errorf("%s = %q (exists %v), want %q", tt.file, content, ok, tt.content)
			}
		})
	}
	if content, ok := b.Outside(t); !ok || content != "secret" {
		t.Errorf("the file beside the root = %q (exists %v), want it untouched", content, ok)
	}
	got, err := run(t, b, "list_files", `{}`)
	check(t, got, err, "keep/\nlog/\nx/", "")
}
