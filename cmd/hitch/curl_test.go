package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// curl -OJ saves an artifact under its name (docs/guide/artifacts.md, "Artifacts"): curl
// reads filename="…" (an ASCII fallback), not filename*=.
func TestCurlSavesArtifactUnderItsName(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed")
		}
		t.Skip("curl is not installed")
	}
	base, _, _ := startServe(t)
	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice",
		`{"items":[{"content":"/call save_artifact {\"name\": \"report.md\", \"content\": \"# Q3\"}"}]}`)
	if code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	tid := decode(t, body)["task_id"].(string)
	_, body = call(t, "GET", base+"/agents/assistant/tasks/"+tid, "alice", "")
	arts := decode(t, body)["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("GET task: %s", body)
	}
	dir := t.TempDir()
	cmd := exec.Command(curl, "-sSfOJ", "-H", "Authorization: Bearer alice", base+arts[0].(map[string]any)["url"].(string))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	got, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || string(got) != "# Q3" {
		t.Errorf("curl -OJ saved %s; report.md: %q, %v", strings.Join(names, ", "), got, err)
	}
}
