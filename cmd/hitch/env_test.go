package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// HITCH_ADDR is serve's --addr when the flag is not given; the flag wins.
func TestServeAddrFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"default", "", nil, "127.0.0.1:8080"},
		{"env", "127.0.0.1:9090", nil, "127.0.0.1:9090"},
		{"flag wins", "127.0.0.1:9090", []string{"--addr", "127.0.0.1:7070"}, "127.0.0.1:7070"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HITCH_ADDR", tc.env)
			c, err := parseServe(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.addr != tc.want {
				t.Errorf("addr %q, want %q", c.addr, tc.want)
			}
		})
	}
}

// HITCH_URL is hitch chat's --url: a chat started without the flag talks
// to the server the variable names; the flag wins over it.
func TestChatURLFromEnv(t *testing.T) {
	base, _, _ := startServe(t)
	t.Setenv("HITCH_URL", base)
	var out bytes.Buffer
	if err := chat(context.Background(), []string{"--token", "carol"}, strings.NewReader("hello env\n/quit\n"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "at "+base) || !strings.Contains(out.String(), "echo: hello env") {
		t.Errorf("chat with HITCH_URL=%s:\n%s", base, out.String())
	}
	t.Setenv("HITCH_URL", "http://127.0.0.1:1") // nothing listens there
	out.Reset()
	if err := chat(context.Background(), []string{"--url", base, "--token", "carol"}, strings.NewReader("hello flag\n/quit\n"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "echo: hello flag") {
		t.Errorf("--url did not win over HITCH_URL:\n%s", out.String())
	}
}

// The MCP example follows one variable: HITCH_MCP_ADDR is where `hitch
// mcp-example` listens and where examples/mcp/tickets.yaml, unchanged,
// finds it.
func TestMCPExampleFollowsOneVariable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("HITCH_MCP_ADDR", addr)
	url := startMCPExampleArgs(t)
	if want := "http://" + addr + "/mcp"; url != want {
		t.Fatalf("mcp-example serves %s, want %s", url, want)
	}
	def, err := os.ReadFile(filepath.Join("..", "..", "examples", "mcp", "tickets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tickets.yaml"), def, 0o644); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServeDir(t, dir)
	code, body := call(t, "POST", base+"/agents/tickets/invoke", "alice", `{"items":[{"content":"/call tickets_search_notes {\"query\": \"invoice\"}"}]}`)
	if code != 200 || !strings.Contains(string(body), "tickets_search_notes success") {
		t.Errorf("the agent file did not follow HITCH_MCP_ADDR: %d %s", code, body)
	}
}
