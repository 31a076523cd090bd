// Command hitch runs Hitch locally: `hitch serve` serves the API of docs/api.md
// with the same handlers the Lambda functions use, on the in-memory store or
// DynamoDB, with the local model or Amazon Bedrock; `hitch chat` talks to an
// agent from the terminal.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `hitch runs stateful, human-in-the-loop LLM agents.

Usage:
  hitch serve [flags]   serve the API locally (hitch serve -h for the flags)
  hitch chat [flags]    talk to an agent from the terminal, approving its calls
  hitch mcp-example [--addr 127.0.0.1:8090]
                        serve an example MCP server (notes, tickets) to try MCP tools
  hitch webhook listen [--addr 127.0.0.1:9000] --secret S
                        receive an agent's webhooks, verify and print them
  hitch webhook verify --secret S --id ID --timestamp TS --signature SIG < body
                        check a webhook's signature

Environment: HITCH_ADDR is serve's --addr, HITCH_URL the --url of chat and
webhook listen, HITCH_MCP_ADDR mcp-example's --addr (a flag wins).
`

// defaultURL is the API's base URL when neither --url nor HITCH_URL says.
const defaultURL = "http://127.0.0.1:8080"

// envOr is the environment variable name's value, or def when it is unset
// or empty: a flag's default that the environment may change.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hitch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr, nil)
	case "chat":
		return chat(ctx, args[1:], os.Stdin, stdout, stderr)
	case "mcp-example":
		return mcpExample(ctx, args[1:], stderr)
	case "webhook":
		return webhookCmd(ctx, args[1:], os.Stdin, stdout, stderr, nil)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
