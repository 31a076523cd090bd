package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runnableMarker marks a shell block of the README or a guide that runs as
// written: the line before its ```sh fence.
const runnableMarker = "<!-- runnable -->"

// docBlock is a runnable block: where it is and its commands.
type docBlock struct {
	where, script string
}

// runnableBlocks extracts the marked ```sh blocks of README.md and
// docs/guide/*.md.
func runnableBlocks(t *testing.T) []docBlock {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "guide", "*.md"))
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	var out []docBlock
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i+1 < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != runnableMarker {
				continue
			}
			if strings.TrimSpace(lines[i+1]) != "```sh" {
				t.Fatalf("%s:%d: %s is not followed by a ```sh block", f, i+1, runnableMarker)
			}
			var script []string
			j := i + 2
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				script = append(script, lines[j])
			}
			if j == len(lines) {
				t.Fatalf("%s:%d: the block does not end", f, i+2)
			}
			out = append(out, docBlock{where: filepath.Base(f) + ":" + strconv.Itoa(i+2), script: strings.Join(script, "\n")})
			i = j
		}
	}
	return out
}

// Every shell block of the README and the guides marked runnable runs as
// written against `hitch serve` (memory store, the local model) on a free
// port: the blocks' localhost:8080 and 127.0.0.1:8080 are that port, and
// HITCH_URL and HITCH_ADDR name it too. A block fails when a command in it
// fails (bash -e -o pipefail; curl's -f is the block's to give).
func TestRunnableDocBlocks(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed")
		}
		t.Skip("curl is not installed")
	}
	blocks := runnableBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no block is marked runnable")
	}
	base, _, _ := startServe(t)
	addr := strings.TrimPrefix(base, "http://")
	for _, b := range blocks {
		t.Run(b.where, func(t *testing.T) {
			script := strings.NewReplacer("localhost:8080", addr, "127.0.0.1:8080", addr).Replace(b.script)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
			cmd.Env = append(os.Environ(), "HITCH_URL="+base, "HITCH_ADDR="+addr)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s\n--- output:\n%s", b.where, err, script, out)
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"error":{"code"`) {
					t.Errorf("%s answered an error: %s", b.where, sc.Text())
				}
			}
		})
	}
}
