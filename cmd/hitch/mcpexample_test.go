package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/mcp"
)

// startMCPExample runs `hitch mcp-example --addr 127.0.0.1:0` and returns
// the URL it prints.
func startMCPExample(t *testing.T) string {
	t.Helper()
	return startMCPExampleArgs(t, "--addr", "127.0.0.1:0")
}

// startMCPExampleArgs runs `hitch mcp-example` with args.
func startMCPExampleArgs(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"mcp-example"}, args...), io.Discard, pw) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mcp-example: %v", err)
		}
		_ = pw.Close()
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := regexp.MustCompile(`http://\S+/mcp`).FindString(line)
	if url == "" {
		t.Fatalf("no URL in %q", line)
	}
	return url
}

func TestMCPExample(t *testing.T) {
	url := startMCPExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, remotes, err := mcp.Connect(ctx, mcp.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, r := range remotes {
		names = append(names, r.Name)
		if want := r.Name == "close_ticket"; r.NeedsApproval() != want {
			t.Errorf("%s needs approval: %v, want %v", r.Name, r.NeedsApproval(), want)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"close_ticket", "reopen_ticket", "search_notes"}) {
		t.Errorf("tools %v", names)
	}

	// The example agent loads with the server up (its tools) and down
	// (optional: without them).
	def, err := os.ReadFile("../../examples/mcp/tickets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{url, []string{"get_time", "tickets_close_ticket", "tickets_reopen_ticket", "tickets_search_notes"}},
		{"http://127.0.0.1:1/mcp", []string{"get_time"}},
	} {
		data := strings.Replace(string(def), "http://${HITCH_MCP_ADDR:-127.0.0.1:8090}/mcp", tc.url, 1)
		cat, err := catalog.Load(fstest.MapFS{"tickets.yaml": {Data: []byte(data)}}, ".", catalog.Env{})
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		a, _ := cat.Get("tickets")
		var got []string
		for _, b := range a.Tools {
			got = append(got, b.Tool.Spec().Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: tools %v, want %v", tc.url, got, tc.want)
		}
	}
}
