package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// serve answers one host over stdin and stdout until the host disconnects
// or ctx ends. Nothing but the protocol is written to stdout. With
// -listen it also answers on the loopback HTTP front, the proxy's one
// listener; without it, nothing listens.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var listen, tokenFile string
	var stdio bool
	var maxSessions int
	path, code, ok := flags("serve", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "", "also serve streamable HTTP on this loopback address")
		fs.StringVar(&tokenFile, "token-file", "", "read the front's bearer token from this owner-only file")
		fs.BoolVar(&stdio, "stdio", true, "serve a host over stdin and stdout")
		fs.IntVar(&maxSessions, "max-sessions", proxy.DefaultFrontMaxSessions, "the most HTTP sessions open at once")
	})
	if !ok {
		return code
	}
	if listen == "" && (tokenFile != "" || !stdio || maxSessions != proxy.DefaultFrontMaxSessions) {
		fmt.Fprintf(stderr, "agentrt-proxy serve: -token-file, -max-sessions and -stdio=false need -listen\n")
		return ExitUsage
	}
	var fc proxy.FrontConfig
	if listen != "" {
		var err error
		if fc, err = proxy.DefaultFrontConfig(listen); err != nil {
			fmt.Fprintf(stderr, "agentrt-proxy serve: %s\n", trace.Sanitize(err.Error()))
			return ExitUsage
		}
		if maxSessions < 1 {
			fmt.Fprintf(stderr, "agentrt-proxy serve: -max-sessions must be at least 1, got %d\n", maxSessions)
			return ExitUsage
		}
		fc.MaxSessions = maxSessions
		if tokenFile != "" {
			if fc.Token, err = proxy.ReadFrontToken(tokenFile); err != nil {
				return fail(stderr, "serve", err)
			}
		}
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
	if listen == "" {
		return serveStdio(ctx, p, stdin, stdout, stderr)
	}
	return serveFront(ctx, p, fc, tokenFile == "", stdio, stdin, stdout, stderr)
}

func serveStdio(ctx context.Context, p *proxy.Proxy, stdin io.Reader, stdout, stderr io.Writer) int {
	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := p.Serve(ctx, t); err != nil && ctx.Err() == nil {
		return fail(stderr, "serve", err)
	}
	return ExitOK
}

// serveFront serves the HTTP front, and stdio unless -stdio=false, until
// ctx ends or the stdio host disconnects. A token the proxy generated is
// printed to stderr, the one place its owner reads it from.
func serveFront(ctx context.Context, p *proxy.Proxy, fc proxy.FrontConfig, printToken, stdio bool, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := p.NewFront(fc)
	if err != nil {
		return fail(stderr, "serve", err)
	}
	if err := f.Listen(); err != nil {
		return fail(stderr, "serve", err)
	}
	fmt.Fprintf(stderr, "agentrt-proxy: listening on %s (loopback only; every request needs the bearer token)\n", f.URL())
	if printToken {
		fmt.Fprintf(stderr, "agentrt-proxy: bearer token: %s\n", fc.Token)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx) }()
	code := ExitOK
	if stdio {
		code = serveStdio(ctx, p, stdin, stdout, stderr)
	} else {
		<-ctx.Done()
	}
	cancel()
	if err := <-served; err != nil {
		return fail(stderr, "serve", err)
	}
	return code
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
