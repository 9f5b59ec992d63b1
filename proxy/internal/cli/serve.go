package cli

import (
	"context"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/proxy"
)

// serve answers one host over stdin and stdout until the host disconnects
// or ctx ends. Nothing but the protocol is written to stdout.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	path, code, ok := flags("serve", args, stderr, nil)
	if !ok {
		return code
	}
	cfg, code := loadConfig("serve", path, stderr)
	if cfg == nil {
		return code
	}
	p, err := proxy.New(ctx, cfg, proxy.Options{Stderr: stderr})
	if err != nil {
		return fail(stderr, "serve", err)
	}
	defer p.Close()
	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := p.Serve(ctx, t); err != nil && ctx.Err() == nil {
		return fail(stderr, "serve", err)
	}
	return ExitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
