package schema_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/schema"
)

// TestCompile: the rules of a schema from outside (docs/api.md, "Pauses
// for input"), each refusal an ErrInvalid naming what is wrong.
func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		wantErr      string // a part of the error; "" for none
	}{
		{"an object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"true", `true`, ""},
		{"an array", `[{}]`, "must be an object"},
		{"not JSON", `{"type":`, "not JSON"},
		{"a local reference", `{"$defs":{"a":{"type":"integer"}},"$ref":"#/$defs/a"}`, ""},
		{"an anchor", `{"$defs":{"a":{"$anchor":"x","type":"integer"}},"$ref":"#x"}`, ""},
		{"a missing local reference", `{"$ref":"#/$defs/none"}`, "not found"},
		{"a file", `{"$ref":"file:///etc/passwd"}`, `$ref "file:///etc/passwd" at (root) refers outside the schema`},
		{"a relative reference", `{"$id":"file:///etc/","properties":{"a":{"$ref":"passwd"}}}`, `$ref "passwd" at /properties/a refers outside the schema`},
		{"https", `{"$ref":"https://example.com/s.json"}`, "refers outside the schema"},
		{"a meta-schema elsewhere", `{"$schema":"https://example.com/meta"}`, "https://example.com/meta is outside the schema"},
		{"a known meta-schema", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}`, ""},
		{"a backreference", `{"pattern":"(a)\\1"}`, "regex"},
		{"a property named $ref", `{"type":"object","properties":{"$ref":{"type":"string"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Compile([]byte(tc.schema))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile() error = %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, schema.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Compile() error = %v, want ErrInvalid containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "mem:") {
				t.Errorf("the error names the internal URL: %v", err)
			}
		})
	}
}

// TestCompileLimits: 64 KiB and depth 32 are the last sizes taken.
func TestCompileLimits(t *testing.T) {
	nest := func(n int) string { // n levels of JSON nesting
		return strings.Repeat(`{"not":`, n-1) + `{}` + strings.Repeat(`}`, n-1)
	}
	sized := func(n int) string { // n bytes
		head := `{"description":"`
		return head + strings.Repeat("x", n-len(head)-2) + `"}`
	}
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"depth 32", nest(schema.MaxDepth), true},
		{"depth 33", nest(schema.MaxDepth + 1), false},
		{"depth 33 in an array", `{"allOf":[` + nest(schema.MaxDepth-1) + `]}`, false},
		{"64 KiB", sized(schema.MaxBytes), true},
		{"64 KiB and a byte", sized(schema.MaxBytes + 1), false},
	} {
		if _, err := schema.Compile([]byte(tc.schema)); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestValidate: problems name the field and why.
func TestValidate(t *testing.T) {
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"code":{"type":"string","pattern":"^(x+x+)+y$"}},"required":["code"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ value, want string }{
		{`{"code":"xxy"}`, ""},
		{`{}`, "answer.code: required"},
		{`{"code":"` + strings.Repeat("x", 100) + `"}`, "answer.code: "},
		{`{"code":`, "answer is not valid JSON"},
	} {
		err := s.Validate(json.RawMessage(tc.value), "answer")
		var ve *schema.ValueError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.value, err)
		case tc.want != "" && (!errors.As(err, &ve) || !strings.HasPrefix(ve.Problems, tc.want)):
			t.Errorf("%s: %v, want a ValueError starting %q", tc.value, err, tc.want)
		}
	}
}

// TestOnlyHere: no other package compiles a JSON Schema: every schema goes
// through Compile's rules.
func TestOnlyHere(t *testing.T) {
	root := filepath.Join("..", "..")
	here := filepath.Join(root, "internal", "schema")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Dir(path) == here {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), `"github.com/santhosh-tekuri/jsonschema`) {
			t.Errorf("%s imports the JSON Schema compiler; compile through internal/schema", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzCompileSchema: whatever the schema, Compile returns, opens no file
// and follows no reference outside the schema. The seeds refer to a FIFO
// (opening it to read would block until someone writes) and to a file
// holding a secret (which must never make a schema compile or show in an
// error); a reference outside the schema never compiles.
func FuzzCompileSchema(f *testing.F) {
	dir := f.TempDir()
	pipe := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		f.Fatal(err)
	}
	const secret = "TOPSECRET-VALUE-42"
	file := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(file, []byte(`{"const":"`+secret+`","$defs":{"k":{"const":"`+secret+`"}}}`), 0o600); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"$ref":"file://` + pipe + `"}`,
		`{"type":"object","properties":{"a":{"$ref":"file://` + pipe + `#/x"}}}`,
		`{"$schema":"file://` + pipe + `"}`,
		`{"$dynamicRef":"file://` + pipe + `"}`,
		`{"$id":"file://` + dir + `/","$ref":"pipe.json"}`,
		`{"$id":"file://` + dir + `/","allOf":[{"$ref":"secret.json#/$defs/k"}]}`,
		`{"$ref":"file://` + file + `"}`,
		`{"$ref":"http://127.0.0.1:1/x.json"}`,
		`{"$ref":"urn:uuid:deadbeef-1234-5678-9abc-def012345678"}`,
		`{"$defs":{"a":{"type":"string","pattern":"^(x+x+)+y$"}},"$ref":"#/$defs/a"}`,
		`{"type":"object","patternProperties":{"^a(b|c)*$":{"$ref":"#"}}}`,
		`{"$anchor":"top","items":{"$ref":"#top"}}`,
		`{"$ref":"#"}`,
		`true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		done := make(chan error, 1)
		var s *schema.Schema
		go func() {
			var err error
			s, err = schema.Compile(raw)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second): // a safety net: Compile takes microseconds
			t.Fatalf("Compile(%q) did not return: it blocked on what the schema refers to", raw)
		}
		if err != nil {
			if !errors.Is(err, schema.ErrInvalid) {
				t.Fatalf("Compile(%q) = %v, not ErrInvalid", raw, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("Compile(%q)'s error shows the file: %v", raw, err)
			}
			return
		}
		var doc any
		if json.Unmarshal(raw, &doc) != nil {
			return // JSON the schema package reads and encoding/json does not (none known)
		}
		if ref, ok := outsideRef(doc); ok {
			t.Fatalf("Compile(%q) compiled with the reference %q outside the schema", raw, ref)
		}
		for _, v := range []string{`null`, `"x"`, `{"a":[1,2]}`, `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`} {
			if err := s.Validate(json.RawMessage(v), "v"); err != nil && strings.Contains(err.Error(), secret) {
				t.Fatalf("validating against %q shows the file: %v", raw, err)
			}
		}
	})
}

// outsideRef finds a reference that does not start with '#'.
func outsideRef(v any) (string, bool) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			if r, ok := v[k].(string); ok && !strings.HasPrefix(r, "#") {
				return r, true
			}
		}
		for _, e := range v {
			if r, ok := outsideRef(e); ok {
				return r, true
			}
		}
	case []any:
		for _, e := range v {
			if r, ok := outsideRef(e); ok {
				return r, true
			}
		}
	}
	return "", false
}
