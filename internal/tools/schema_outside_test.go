package tools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/tools"
)

// secretFile writes a JSON file holding a secret in a temp dir: what a
// schema's file:// reference would read.
func secretFile(tb testing.TB) (path, secret string) {
	tb.Helper()
	secret = "TOPSECRET-VALUE-42"
	path = filepath.Join(tb.TempDir(), "secret.json")
	if err := os.WriteFile(path, []byte(`{"const":"`+secret+`","$defs":{"k":{"const":"`+secret+`"}}}`), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path, secret
}

// fifo makes a named pipe in a temp dir; opening it to read blocks until
// someone writes. The cleanup writes once, to free a reader left blocked
// (only the code before the fix blocks there).
func fifo(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "pipe.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_, _ = f.Write([]byte("{}"))
			_ = f.Close()
		}
	})
	return path
}

// compileReturns compiles raw in a goroutine and gives its error; a
// compile still blocked after a minute fails the test (a safety net, so a
// regression fails instead of hanging the suite; a compile takes
// microseconds).
func compileReturns(tb testing.TB, compile func(json.RawMessage) (*tools.Schema, error), raw string) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := compile(json.RawMessage(raw))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		tb.Fatalf("compiling %s did not return: it blocked opening what the schema refers to", raw)
		return nil
	}
}

// TestSchemasFromOutside: a schema is data, never a reach into the host
// (docs/api.md, "Pauses for input"): only references inside it (#…)
// resolve; a file, http or URN reference, a schema over 64 KiB or nested
// deeper than 32, a pattern RE2 does not take — each is an invalid schema,
// whose error never holds what a reference would have read; a pattern
// that backtracks elsewhere is fine on RE2.
func TestSchemasFromOutside(t *testing.T) {
	secret, word := secretFile(t)
	pipe := fifo(t)
	deep := strings.Repeat(`{"items":`, 40) + `{}` + strings.Repeat(`}`, 40)
	big := `{"type":"object","description":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, tc := range []struct {
		name, schema string
		wantErr      string // a part of the error; "" for none
	}{
		{"a file", `{"$ref":"file://` + secret + `"}`, "refers outside the schema"},
		{"a file's key", `{"$ref":"file://` + secret + `#/$defs/k"}`, "refers outside the schema"},
		{"a relative file", `{"$id":"file://` + filepath.Dir(secret) + `/","$ref":"secret.json"}`, "refers outside the schema"},
		{"a FIFO", `{"$ref":"file://` + pipe + `"}`, "refers outside the schema"},
		{"a FIFO in properties", `{"type":"object","properties":{"a":{"$ref":"file://` + pipe + `"}}}`, "refers outside the schema"},
		{"a FIFO as $dynamicRef", `{"$dynamicRef":"file://` + pipe + `"}`, "refers outside the schema"},
		{"a FIFO as $schema", `{"$schema":"file://` + pipe + `"}`, "not a valid JSON Schema"},
		{"http", `{"$ref":"http://127.0.0.1:1/schema.json"}`, "refers outside the schema"},
		{"a URN", `{"$ref":"urn:example:schema"}`, "refers outside the schema"},
		{"over 64 KiB", big, "over 64 KiB"},
		{"deeper than 32", deep, "nested deeper than 32"},
		{"a backreference", `{"type":"string","pattern":"(a)\\1"}`, "regex"},
		{"a lookahead", `{"type":"object","patternProperties":{"(?=x)":{}}}`, "regex"},
		{"a local reference", `{"$defs":{"id":{"type":"string"}},"type":"object","properties":{"id":{"$ref":"#/$defs/id"}}}`, ""},
		{"a backtracking pattern", `{"type":"string","pattern":"(x+x+)+y"}`, ""},
		{"32 deep", strings.Repeat(`{"not":`, 31) + `{}` + strings.Repeat(`}`, 31), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compileReturns(t, tools.CompileValueSchema, tc.schema)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CompileValueSchema() error = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CompileValueSchema() error = %v, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), word) {
				t.Errorf("the error shows what the file holds: %v", err)
			}
		})
	}
}

// TestBacktrackingPatternIsLinear: the pattern a backtracking engine takes
// exponential time on checks a long input on RE2 (this test would not end
// otherwise).
func TestBacktrackingPatternIsLinear(t *testing.T) {
	s, err := tools.CompileValueSchema(json.RawMessage(`{"type":"string","pattern":"^(x+x+)+y$"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.ValidateAs(json.RawMessage(`"`+strings.Repeat("x", 5000)+`"`), "result")
	if err == nil || !strings.Contains(err.Error(), "result: ") {
		t.Errorf("ValidateAs() = %v, want the value refused naming result", err)
	}
}
