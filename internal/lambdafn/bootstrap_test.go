package lambdafn_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// do (CGO_ENABLED=0, -tags lambda.norpc, -trimpath, -ldflags "-s -w"), for
// the host's architecture, once per test binary.
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
		"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", bin, "../../functions/"+name)
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
