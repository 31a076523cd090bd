package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hitch-agents/hitch/internal/agent"
)

// RunBytes is the conformance suite of agent.ArtifactBytes (memory, a
// directory, S3). newBytes returns an empty store.
func RunBytes(t *testing.T, newBytes func(tb testing.TB) agent.ArtifactBytes) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b agent.ArtifactBytes)
	}{
		{"PutOpen", testBytesPutOpen},
		{"FailedBodyKeepsNothing", testBytesFailedBody},
		{"Delete", testBytesDelete},
		{"DeleteTask", testBytesDeleteTask},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newBytes(t)) })
	}
}

func readBytes(tb testing.TB, b agent.ArtifactBytes, taskID, artifactID string) ([]byte, error) {
	tb.Helper()
	rc, err := b.Open(context.Background(), taskID, artifactID)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func putBytes(tb testing.TB, b agent.ArtifactBytes, taskID, artifactID string, data []byte) {
	tb.Helper()
	if err := b.Put(context.Background(), taskID, artifactID, bytes.NewReader(data)); err != nil {
		tb.Fatalf("Put(%s, %s): %v", taskID, artifactID, err)
	}
}

func testBytesPutOpen(t *testing.T, b agent.ArtifactBytes) {
	task, other := id(), id()
	a1, a2 := id(), id()
	big := bytes.Repeat([]byte("0123456789abcdef"), 12<<16) // 12 MiB: several parts on S3
	putBytes(t, b, task, a1, []byte("# Report\n"))
	putBytes(t, b, task, a2, big)
	putBytes(t, b, other, a1, []byte("another task's bytes"))
	putBytes(t, b, task, id(), nil)
	if got, err := readBytes(t, b, task, a1); err != nil || string(got) != "# Report\n" {
		t.Errorf("Open(a1) = %q, %v; want the report", got, err)
	}
	if got, err := readBytes(t, b, task, a2); err != nil || !bytes.Equal(got, big) {
		t.Errorf("Open(a2) = %d bytes, %v; want %d equal bytes", len(got), err, len(big))
	}
	if got, err := readBytes(t, b, other, a1); err != nil || string(got) != "another task's bytes" {
		t.Errorf("Open(other task, a1) = %q, %v", got, err)
	}
	if _, err := readBytes(t, b, task, id()); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("Open(unknown) = %v, want ErrNotFound", err)
	}
}

// failingReader gives n bytes, then an error.
type failingReader struct{ n int }

var errBody = errors.New("the body failed")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBody
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

func testBytesFailedBody(t *testing.T, b agent.ArtifactBytes) {
	task := id()
	for _, n := range []int{10, 11 << 20} { // one part, and past the first parts
		a := id()
		if err := b.Put(context.Background(), task, a, &failingReader{n: n}); err == nil {
			t.Errorf("Put of a body failing after %d bytes: no error", n)
		}
		if _, err := readBytes(t, b, task, a); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Open after a failed Put of %d bytes = %v, want ErrNotFound", n, err)
		}
	}
}

func testBytesDelete(t *testing.T, b agent.ArtifactBytes) {
	ctx := context.Background()
	task, a1, a2 := id(), id(), id()
	putBytes(t, b, task, a1, []byte("one"))
	putBytes(t, b, task, a2, []byte("two"))
	if err := b.Delete(ctx, task, a1); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := readBytes(t, b, task, a1); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("Open of a deleted artifact = %v, want ErrNotFound", err)
	}
	if got, err := readBytes(t, b, task, a2); err != nil || string(got) != "two" {
		t.Errorf("Open of the other artifact = %q, %v", got, err)
	}
	if err := b.Delete(ctx, task, a1); err != nil {
		t.Errorf("Delete of a deleted artifact: %v, want nil", err)
	}
}

func testBytesDeleteTask(t *testing.T, b agent.ArtifactBytes) {
	ctx := context.Background()
	task, other := id(), id()
	var ids []string
	for i := range 5 {
		a := id()
		ids = append(ids, a)
		putBytes(t, b, task, a, []byte(strings.Repeat("a", i)))
	}
	kept := id()
	putBytes(t, b, other, kept, []byte("kept"))
	if err := b.DeleteTask(ctx, task); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	for _, a := range ids {
		if _, err := readBytes(t, b, task, a); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Open(%s) after DeleteTask = %v, want ErrNotFound", a, err)
		}
	}
	if got, err := readBytes(t, b, other, kept); err != nil || string(got) != "kept" {
		t.Errorf("another task's artifact after DeleteTask = %q, %v", got, err)
	}
	if err := b.DeleteTask(ctx, task); err != nil {
		t.Errorf("DeleteTask of a task without artifacts: %v", err)
	}
}
