package lambdafn_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// builds holds the function binaries built by this test binary, one per
// function, in one temporary directory.
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// buildFunction builds functions/<name> as template.yaml's Makefile targets
// do (CGO_ENABLED=0, the Makefile's LAMBDA_BUILD tags, -trimpath, -ldflags
// "-s -w"), for the host's architecture, once per test binary.
func buildFunction(tb testing.TB, name string) string {
	tb.Helper()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if bin, ok := builds.bins[name]; ok {
		return bin
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "lambdafn-functions-")
		if err != nil {
			tb.Fatal(err)
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	bin := filepath.Join(builds.dir, name, "bootstrap")
	cmd := exec.Command("go", "build",
		"-tags", lambdaTags(tb), "-trimpath", "-ldflags", "-s -w", "-o", bin, "../../functions/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build functions/%s: %v\n%s", name, err, out)
	}
	builds.bins[name] = bin
	return bin
}

func removeBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
}

// lambdaTags are the build tags of the Makefile's LAMBDA_BUILD, the ones
// the deployed functions are built with.
func lambdaTags(tb testing.TB) string {
	tb.Helper()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if rest, ok := strings.CutPrefix(line, "LAMBDA_BUILD := -tags "); ok {
			return strings.Fields(rest)[0]
		}
	}
	tb.Fatal("the Makefile has no LAMBDA_BUILD := -tags …")
	return ""
}

// MaxBinary is the budget for a function's binary (docs/guide/budgets.md, "Budgets").
const MaxBinary = 30 << 20

// TestBinarySizes: every function's binary, built as for Lambda, is within
// the 30 MB of docs/guide/budgets.md, "Budgets".
func TestBinarySizes(t *testing.T) {
	for _, name := range []string{"invoke", "resume", "gettask", "authorizer", "notifier"} {
		st, err := os.Stat(buildFunction(t, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("functions/%s: %.1f MB", name, float64(st.Size())/(1<<20))
		if st.Size() > MaxBinary {
			t.Errorf("functions/%s is %.1f MB, over the budget of 30 MB", name, float64(st.Size())/(1<<20))
		}
	}
}
