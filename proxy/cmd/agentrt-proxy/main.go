// Command agentrt-proxy is a stdio MCP server that puts every tool call
// of an MCP host under agentrt's policy, approvals and crash safety. See
// docs/proxy.md; `agentrt-proxy -h` states its scope first.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrt/agentrt/proxy/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
