package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
	"github.com/hitch-agents/hitch/internal/tools/filestest"
)

// filesEnv is a files group over a fresh root holding:
//
//	a.txt ("hello"), empty.txt, sub/b.txt ("b"), emptydir/,
//	inlink -> sub (inside), outlink -> a file outside, outdir -> a directory outside.
type filesEnv struct {
	root    string
	outside string
	tools   map[string]tools.Builtin
}

func newFilesEnv(tb testing.TB) *filesEnv {
	tb.Helper()
	base := tb.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), filepath.Join(root, "emptydir"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.txt"), "hello")
	write(filepath.Join(root, "empty.txt"), "")
	write(filepath.Join(root, "sub", "b.txt"), "b")
	write(filepath.Join(outside, "secret.txt"), "secret")
	for link, target := range map[string]string{
		"inlink":  "sub",
		"outlink": filepath.Join(outside, "secret.txt"),
		"outdir":  outside,
		"uplink":  "../outside/secret.txt",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			tb.Fatal(err)
		}
	}
	e := &filesEnv{root: root, outside: outside, tools: map[string]tools.Builtin{}}
	for _, b := range tools.Files(tools.FilesConfig{Root: root}) {
		e.tools[b.Tool.Spec().Name] = b
	}
	return e
}

func (e *filesEnv) run(tb testing.TB, name, input string) (string, error) {
	tb.Helper()
	b, ok := e.tools[name]
	if !ok {
		tb.Fatalf("no tool %s", name)
	}
	out, err := b.Tool.Run(context.Background(), agent.ToolCall{ID: "c1", Name: name, Input: json.RawMessage(input)})
	if err != nil {
		return "", err
	}
	if len(out.Content) != 1 || out.Content[0].Type != agent.BlockText {
		tb.Fatalf("%s: output %+v, want one text block", name, out.Content)
	}
	return out.Content[0].Text, nil
}

func TestFilesGroup(t *testing.T) {
	var got []string
	idem := map[string]bool{}
	for _, b := range tools.Files(tools.FilesConfig{Root: t.TempDir()}) {
		name := b.Tool.Spec().Name
		got = append(got, name)
		idem[name] = b.Idempotent
		if _, ok := b.Tool.(agent.InputValidator); !ok {
			t.Errorf("%s does not validate its input", name)
		}
	}
	if diff := cmp.Diff([]string{"list_files", "read_file", "write_file", "append_file", "delete_file"}, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	wantIdem := map[string]bool{"list_files": true, "read_file": true, "write_file": true, "append_file": false, "delete_file": true}
	if diff := cmp.Diff(wantIdem, idem); diff != "" {
		t.Errorf("idempotent (-want +got):\n%s", diff)
	}
}

// TestListAFileIsNotDir: listing a file is the tools' own ErrNotDir, not
// the operating system's error (whose text reads alike).
func TestListAFileIsNotDir(t *testing.T) {
	e := newFilesEnv(t)
	if _, err := e.run(t, "list_files", `{"path":"a.txt"}`); !errors.Is(err, tools.ErrNotDir) {
		t.Errorf("list_files a.txt: %v, want tools.ErrNotDir", err)
	}
}

func TestFilesRead(t *testing.T) {
	e := newFilesEnv(t)
	tests := []struct {
		name, tool, input string
		want, wantErr     string
	}{
		{name: "list root", tool: "list_files", input: `{}`,
			want: "a.txt\nempty.txt\nemptydir/\ninlink/\noutdir\noutlink\nsub/\nuplink"},
		{name: "list root by empty path", tool: "list_files", input: `{"path":""}`,
			want: "a.txt\nempty.txt\nemptydir/\ninlink/\noutdir\noutlink\nsub/\nuplink"},
		{name: "list sub", tool: "list_files", input: `{"path":"sub"}`, want: "b.txt"},
		{name: "list via inner link", tool: "list_files", input: `{"path":"inlink"}`, want: "b.txt"},
		{name: "list empty", tool: "list_files", input: `{"path":"emptydir"}`, want: "(empty directory)"},
		{name: "list a file", tool: "list_files", input: `{"path":"a.txt"}`, wantErr: "a.txt: not a directory"},
		{name: "list missing", tool: "list_files", input: `{"path":"nope"}`, wantErr: "nope: no such file or directory"},
		{name: "list dotdot", tool: "list_files", input: `{"path":".."}`, wantErr: `path ".." leaves the files root`},
		{name: "list absolute", tool: "list_files", input: `{"path":"/etc"}`, wantErr: `path "/etc" is absolute; paths are relative to the files root`},
		{name: "list outer link", tool: "list_files", input: `{"path":"outdir"}`, wantErr: `path "outdir" resolves outside the files root`},
		{name: "read", tool: "read_file", input: `{"path":"a.txt"}`, want: "hello"},
		{name: "read nested", tool: "read_file", input: `{"path":"sub/../sub/b.txt"}`, want: "b"},
		{name: "read via inner link", tool: "read_file", input: `{"path":"inlink/b.txt"}`, want: "b"},
		{name: "read empty", tool: "read_file", input: `{"path":"empty.txt"}`, want: "(empty file)"},
		{name: "read missing", tool: "read_file", input: `{"path":"missing.txt"}`, wantErr: "missing.txt: no such file or directory"},
		{name: "read dir", tool: "read_file", input: `{"path":"sub"}`, wantErr: "sub: is a directory; use list_files"},
		{name: "read dotdot", tool: "read_file", input: `{"path":"../outside/secret.txt"}`, wantErr: `path "../outside/secret.txt" leaves the files root`},
		{name: "read dotdot inside", tool: "read_file", input: `{"path":"sub/../../outside/secret.txt"}`, wantErr: `path "sub/../../outside/secret.txt" leaves the files root`},
		{name: "read absolute", tool: "read_file", input: `{"path":"` + filepath.Join(e.outside, "secret.txt") + `"}`, wantErr: "is absolute"},
		{name: "read absolute link", tool: "read_file", input: `{"path":"outlink"}`, wantErr: `path "outlink" resolves outside the files root`},
		{name: "read relative link", tool: "read_file", input: `{"path":"uplink"}`, wantErr: `path "uplink" resolves outside the files root`},
		{name: "read through dir link", tool: "read_file", input: `{"path":"outdir/secret.txt"}`, wantErr: `path "outdir/secret.txt" resolves outside the files root`},
		{name: "read no path", tool: "read_file", input: `{}`, wantErr: "invalid_input: input.path: required"},
		{name: "read empty path", tool: "read_file", input: `{"path":""}`, wantErr: "invalid_input: input.path: minLength: got 0, want 1"},
		{name: "read path number", tool: "read_file", input: `{"path":1}`, wantErr: "invalid_input: input.path: got number, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.run(t, tt.tool, tt.input)
			checkResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkResult(tb testing.TB, got string, err error, want, wantErr string) {
	tb.Helper()
	if wantErr != "" {
		if err == nil {
			tb.Fatalf("got %q, want error %q", got, wantErr)
		}
		if msg := err.Error(); !strings.Contains(msg, wantErr) {
			tb.Fatalf("error = %q, want %q", msg, wantErr)
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

func TestFilesWrite(t *testing.T) {
	e := newFilesEnv(t)
	steps := []struct {
		name, tool, input string
		want, wantErr     string
		// file and its content after the step ("" content: absent)
		file, content string
	}{
		{name: "write new", tool: "write_file", input: `{"path":"new.txt","content":"one"}`,
			want: "wrote 3 bytes to new.txt", file: "new.txt", content: "one"},
		{name: "write replaces", tool: "write_file", input: `{"path":"new.txt","content":"two"}`,
			want: "wrote 3 bytes to new.txt", file: "new.txt", content: "two"},
		{name: "write again is the same", tool: "write_file", input: `{"path":"new.txt","content":"two"}`,
			want: "wrote 3 bytes to new.txt", file: "new.txt", content: "two"},
		{name: "write creates dirs", tool: "write_file", input: `{"path":"x/y/z.txt","content":"deep"}`,
			want: "wrote 4 bytes to x/y/z.txt", file: "x/y/z.txt", content: "deep"},
		{name: "append creates", tool: "append_file", input: `{"path":"log/app.log","content":"a\n"}`,
			want: "appended 2 bytes to log/app.log", file: "log/app.log", content: "a\n"},
		{name: "append appends", tool: "append_file", input: `{"path":"log/app.log","content":"b\n"}`,
			want: "appended 2 bytes to log/app.log", file: "log/app.log", content: "a\nb\n"},
		{name: "delete", tool: "delete_file", input: `{"path":"new.txt"}`, want: "deleted new.txt", file: "new.txt"},
		{name: "delete again", tool: "delete_file", input: `{"path":"new.txt"}`, wantErr: "new.txt: no such file or directory"},
		{name: "delete dir", tool: "delete_file", input: `{"path":"emptydir"}`, wantErr: "emptydir: is a directory; delete_file deletes files"},
		{name: "write dotdot", tool: "write_file", input: `{"path":"../evil.txt","content":"x"}`, wantErr: `path "../evil.txt" leaves the files root`},
		{name: "write absolute", tool: "write_file", input: `{"path":"/tmp/evil.txt","content":"x"}`, wantErr: `path "/tmp/evil.txt" is absolute; paths are relative to the files root`},
		{name: "write through outer link", tool: "write_file", input: `{"path":"outlink","content":"x"}`, wantErr: `resolves outside the files root`},
		{name: "write into outer dir", tool: "write_file", input: `{"path":"outdir/new.txt","content":"x"}`, wantErr: `resolves outside the files root`},
		{name: "append through outer link", tool: "append_file", input: `{"path":"uplink","content":"x"}`, wantErr: `resolves outside the files root`},
		{name: "delete outer link", tool: "delete_file", input: `{"path":"outlink"}`, wantErr: `path "outlink" resolves outside the files root`},
		{name: "delete dotdot", tool: "delete_file", input: `{"path":"../outside/secret.txt"}`, wantErr: `leaves the files root`},
		{name: "write no content", tool: "write_file", input: `{"path":"a.txt"}`, wantErr: "invalid_input: input.content: required"},
		{name: "append no path", tool: "append_file", input: `{"content":"x"}`, wantErr: "invalid_input: input.path: required"},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.run(t, tt.tool, tt.input)
			checkResult(t, got, err, tt.want, tt.wantErr)
			if tt.file == "" {
				return
			}
			b, err := os.ReadFile(filepath.Join(e.root, tt.file))
			switch {
			case tt.content == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("%s exists (%q, %v), want it absent", tt.file, b, err)
			case tt.content != "" && string(b) != tt.content:
				t.Errorf("%s = %q (%v), want %q", tt.file, b, err, tt.content)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(e.outside, "secret.txt"))
	if err != nil || string(b) != "secret" {
		t.Errorf("outside file = %q, %v; want it untouched", b, err)
	}
	if entries, _ := os.ReadDir(e.outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want 1", len(entries))
	}
}

func TestFilesRootCreated(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sandbox")
	group := tools.Files(tools.FilesConfig{Root: root})
	out, err := group[0].Tool.Run(context.Background(), agent.ToolCall{ID: "c1", Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("list_files on a missing root: %v", err)
	}
	if got := out.Content[0].Text; got != "(empty directory)" {
		t.Errorf("list_files = %q, want (empty directory)", got)
	}
}

func TestFilesUnavailable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sandbox")
	for _, b := range tools.Files(tools.FilesConfig{Root: root, Unavailable: true}) {
		t.Run(b.Tool.Spec().Name, func(t *testing.T) {
			_, err := b.Tool.Run(context.Background(), agent.ToolCall{ID: "c1", Input: json.RawMessage(`{"path":"a","content":"b"}`)})
			if !errors.Is(err, tools.ErrFilesUnavailable) {
				t.Fatalf("Run() error = %v, want ErrFilesUnavailable", err)
			}
			if got, want := err.Error(), "files tools need a shared disk; not available on Lambda"; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
		})
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("root was created (%v); unavailable tools must not touch the disk", err)
	}
}

// The files contract suite on a directory.
func TestDirContract(t *testing.T) {
	filestest.Run(t, func(tb testing.TB) *filestest.Backend {
		base := tb.TempDir()
		root := filepath.Join(base, "root")
		if err := os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644); err != nil {
			tb.Fatal(err)
		}
		return &filestest.Backend{
			Store: tools.Dir(root),
			Put: func(tb testing.TB, name, content string) {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					tb.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					tb.Fatal(err)
				}
			},
			Get: func(tb testing.TB, name string) (string, bool) {
				b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
				return string(b), err == nil
			},
			Outside: func(tb testing.TB) (string, bool) {
				b, err := os.ReadFile(filepath.Join(base, "secret.txt"))
				return string(b), err == nil
			},
		}
	})
}
