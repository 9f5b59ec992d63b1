package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/agentrt/agentrt/internal/buildinfo"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

const usage = `agentrt-proxy governs only the tool calls that go through it.

A host that also gives the model a shell, file access or tools of its own
lets the model act outside the proxy, including on the proxy's own
database and configuration. Give the host no other way to act if every
action must pass here.

agentrt-proxy is a stdio MCP server that an MCP host starts instead of the
real servers. Each call runs through agentrt's gate: the pinned schema, the
policy, an approval bound to the exact request, a lease, and the outcome
recorded. It opens no network listener unless -listen asks for one,
offers no tool that approves, and writes only the protocol on stdout.

Bring a host's servers under the proxy:
  agentrt-proxy init -from HOST [-config FILE] [-write-host-config] [-policy CLASS=OUTCOME] [-secret-store env|file] [-no-login] [-open]
                                        HOST: claude-desktop, claude-code, cursor, vscode or a
                                        path; pins every server, suggests each tool's class and
                                        writes a policy under which every change waits for approval
  agentrt-proxy review -config FILE [-accept-read-only] [-accept SERVER.TOOL[=CLASS]] [-drop SERVER.TOOL]
                                        turn suggestions into rules (a suggested tool is not offered)
  agentrt-proxy restore-host-config -from HOST
                                        put back the host file init -write-host-config replaced

usage:
  agentrt-proxy -config FILE            serve one host over stdin and stdout
  agentrt-proxy -config FILE -listen 127.0.0.1:PORT [-token-file FILE] [-max-sessions N] [-stdio=false]
                                        also serve streamable HTTP on loopback, every
                                        request with the bearer token (printed to stderr
                                        unless read from an owner-only -token-file)
  agentrt-proxy pin -config FILE [-diff [-yes]]
                                        pin each server's tools (manifests 0600); -diff shows
                                        what changed since the last pin before writing
  agentrt-proxy check -config FILE      load every server and report; fails if nothing registers
  agentrt-proxy login -config FILE [-open] SERVER
                                        log in to an OAuth server (authorization code, PKCE);
                                        prints the URL, receives the redirect on loopback only
                                        while it runs, stores the tokens owner-only
  agentrt-proxy recheck -config FILE [-run ID | -session S] [-limit N] [-current-tools] [-json]
                                        ask today's policy about recorded calls
  agentrt-proxy version                 print the version and the Go release it was built with

Decide approvals with agentrt on the same database:
  agentrt -db DATABASE approve RUN -approval ID    (or reject)

Exit status: 0 success; 1 failure; 2 usage.
`

// Run runs one command; ctx ends a serving proxy (SIGINT, SIGTERM).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (isHelp(args[0]) || args[0] == "help") {
		io.WriteString(stderr, usage)
		return ExitOK
	}
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args, stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agentrt-proxy: unknown command %q\n\n%s", trace.Sanitize(name), usage)
	return ExitUsage
}

// command is one of agentrt-proxy's commands; every one answers -h with
// the usage, on stderr, since stdout is the protocol's when serving.
type command struct {
	name string
	run  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are agentrt-proxy's commands; serve is the one run when none
// is named.
var commands = []command{
	{"serve", serve},
	{"pin", pin},
	{"init", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return initCmd(ctx, args, stdout, stderr)
	}},
	{"review", review},
	{"restore-host-config", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return restoreHostConfig(args, stdout, stderr)
	}},
	{"check", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return check(ctx, args, stdout, stderr)
	}},
	{"login", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return login(ctx, args, stdout, stderr)
	}},
	{"recheck", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return recheck(ctx, args, stdout, stderr)
	}},
	{"version", version},
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

func version(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		io.WriteString(stderr, usage)
		return ExitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "agentrt-proxy version: unexpected argument %q\n", trace.Sanitize(args[0]))
		return ExitUsage
	}
	fmt.Fprintf(stdout, "agentrt-proxy %s (%s)\n", buildinfo.Version(), runtime.Version())
	return ExitOK
}

// flags parses a command's flags; -config is required.
func flags(name string, args []string, stderr io.Writer, more func(*flag.FlagSet)) (string, int, bool) {
	fs := flag.NewFlagSet("agentrt-proxy "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "the proxy's configuration file")
	if more != nil {
		more(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			io.WriteString(stderr, usage)
			return "", ExitOK, false
		}
		fmt.Fprintf(stderr, "agentrt-proxy %s: %s\n\n%s", name, trace.Sanitize(err.Error()), usage)
		return "", ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentrt-proxy %s: unexpected argument %q\n", name, trace.Sanitize(fs.Arg(0)))
		return "", ExitUsage, false
	}
	if *config == "" {
		fmt.Fprintf(stderr, "agentrt-proxy %s: -config FILE is required\n", name)
		return "", ExitUsage, false
	}
	return *config, ExitOK, true
}

func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "agentrt-proxy %s: %s\n", name, trace.Sanitize(err.Error()))
	return ExitFailure
}

func loadConfig(name, path string, stderr io.Writer) (*proxy.Config, int) {
	cfg, err := proxy.LoadConfig(path)
	if err != nil {
		return nil, fail(stderr, name, err)
	}
	return cfg, ExitOK
}
