package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"time"

	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// login runs the OAuth authorization-code flow for one server of the
// configuration and stores its tokens in the server's owner-only token
// file. It prints the authorization URL on stderr (and opens a browser
// with -open); the redirect comes back to a loopback listener that exists
// only while login runs. No token is ever printed.
func login(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("agentrt-proxy login", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	config := fset.String("config", "", "the proxy's configuration file")
	open := fset.Bool("open", false, "open the authorization URL in a browser")
	timeout := fset.Duration("timeout", 10*time.Minute, "how long to wait for the browser")
	if err := fset.Parse(args); err != nil {
		return usageError(stderr, "login", err)
	}
	var server string
	if fset.NArg() > 0 {
		server = fset.Arg(0)
		// Flags may follow the server's name too.
		if err := fset.Parse(fset.Args()[1:]); err != nil {
			return usageError(stderr, "login", err)
		}
	}
	if server == "" || fset.NArg() > 0 {
		fmt.Fprintln(stderr, "agentrt-proxy login: usage: agentrt-proxy login -config FILE [-open] SERVER")
		return ExitUsage
	}
	if *config == "" {
		fmt.Fprintln(stderr, "agentrt-proxy login: -config FILE is required")
		return ExitUsage
	}
	cfg, code := loadConfig("login", *config, stderr)
	if cfg == nil {
		return code
	}
	opts := proxy.LoginOptions{Stderr: stderr, Timeout: *timeout}
	if *open {
		opts.Open = openBrowser
	}
	path, err := proxy.Login(ctx, cfg, server, opts)
	if err != nil {
		return fail(stderr, "login", err)
	}
	fmt.Fprintf(stdout, "logged in to %s; the tokens are in %s (owner-only)\n", trace.Sanitize(server), trace.Sanitize(path))
	fmt.Fprintf(stdout, "next: `agentrt-proxy pin -config %s` if the server is not pinned yet, then `agentrt-proxy check -config %s`\n", quoteArg(cfg.Path), quoteArg(cfg.Path))
	return ExitOK
}

func usageError(stderr io.Writer, name string, err error) int {
	if err == flag.ErrHelp {
		io.WriteString(stderr, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "agentrt-proxy %s: %s\n\n%s", name, trace.Sanitize(err.Error()), usage)
	return ExitUsage
}

// openBrowser hands the URL to the desktop's opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
