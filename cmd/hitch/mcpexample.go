package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hitch-agents/hitch/internal/mcp/mcpexample"
)

// mcpExample serves the example MCP server until ctx ends.
func mcpExample(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr("HITCH_MCP_ADDR", "127.0.0.1:8090"), "address to listen on (default: $HITCH_MCP_ADDR, else 127.0.0.1:8090; examples/mcp/tickets.yaml follows the same variable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp-example: unexpected arguments %q", fs.Args())
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("mcp-example: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpexample.New().Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "hitch mcp-example: MCP server (tools search_notes, close_ticket, reopen_ticket) on http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
