package torture

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecheck runs the checker again over a history a torture run saved
// (TORTURE_RECHECK=<the directory its report names>): a checker changed
// since is judged on a run already made, with no cluster.
func TestRecheck(t *testing.T) {
	dir := os.Getenv("TORTURE_RECHECK")
	if dir == "" {
		t.Skip("set TORTURE_RECHECK to a torture run's directory")
	}
	var in Input
	load(t, filepath.Join(dir, "ops.jsonl"), &in.Ops)
	load(t, filepath.Join(dir, "ledger.jsonl"), &in.Ledger)
	load(t, filepath.Join(dir, "deliveries.jsonl"), &in.Deliveries)
	load(t, filepath.Join(dir, "faults.jsonl"), &in.Faults)
	load(t, filepath.Join(dir, "observations.jsonl"), &in.Observations)
	load(t, filepath.Join(dir, "tasks.jsonl"), &in.Tasks)
	load(t, filepath.Join(dir, "answers.jsonl"), &in.Answers)
	load(t, filepath.Join(dir, "waiters.jsonl"), &in.Waiters)
	var gone []*Gone
	load(t, filepath.Join(dir, "gone.json"), &gone)
	if len(gone) > 0 {
		in.Gone = gone[0]
	}
	res := Check(in)
	start := in.Ops[0].Start
	var b strings.Builder
	Report(&b, Run{Start: start, Dir: dir}, in, res)
	fmt.Print(b.String())
	if len(res.Violations) > 0 {
		t.Errorf("%d violations of the guarantees (report above)", len(res.Violations))
	}
}

// load reads a file of JSON lines into out, a pointer to a slice.
func load[T any](t *testing.T, path string, out *[]T) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		*out = append(*out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
