package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// Timeouts init writes for every server; the operator may change them.
const (
	initConnectTimeout = 30 * time.Second
	initDefaultTimeout = 60 * time.Second
)

// initCmd reads a host's server definitions, pins each server that
// starts, and writes a configuration whose rules are all suggestions:
// nothing is offered until an operator reviews them. It prints the host
// configuration that routes through the proxy and, with
// -write-host-config, writes it after a backup.
func initCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("agentrt-proxy init", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	from := fset.String("from", "", "the host: claude-desktop, claude-code, cursor, vscode, or a path to its configuration file")
	config := fset.String("config", "", "the configuration to write (default ~/agentrt/proxy.json)")
	writeHost := fset.Bool("write-host-config", false, "rewrite the host's file to start only the proxy, after a backup")
	noLogin := fset.Bool("no-login", false, "leave out a server that asks for an OAuth login instead of logging in to it")
	open := fset.Bool("open", false, "open a server's OAuth authorization URL in a browser")
	pol := &policyFlag{p: initPolicy()}
	fset.Var(pol, "policy", "CLASS=OUTCOME: what a tool of CLASS does, over read_only=allow, local_mutation=require_approval, remote_mutation=require_approval, destructive=deny (repeatable)")
	store := fset.String("secret-store", "env", "where each secret a host entry references as ${VAR} lives: env (the host passes the variable to the proxy) or file (init copies its value into an owner-only file under secrets/)")
	if code, ok := parse("init", fset, args, stderr); !ok {
		return code
	}
	if *store != storeEnv && *store != storeFile {
		fmt.Fprintf(stderr, "agentrt-proxy init: -secret-store must be env or file, got %q\n", trace.Sanitize(*store))
		return ExitUsage
	}
	h, ok := hostArg("init", *from, true, stderr)
	if !ok {
		return ExitUsage
	}
	out := *config
	if out == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fail(stderr, "init", err)
		}
		out = filepath.Join(home, "agentrt", "proxy.json")
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return fail(stderr, "init", err)
	}
	if _, err := os.Lstat(out); err == nil {
		return fail(stderr, "init", fmt.Errorf("%s exists; init writes a new configuration (remove it, or choose another -config)", out))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(stderr, "init", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return fail(stderr, "init", err)
	}

	doc, err := readHostFile(h)
	if err != nil {
		return fail(stderr, "init", err)
	}
	entries, err := doc.entries(h.key)
	if err != nil {
		return fail(stderr, "init", fmt.Errorf("%s: %w", h.path, err))
	}
	// Every env value and header is a secret from here on: it goes into
	// the owner-only configuration or secret store and never to stdout or
	// stderr. A referenced variable is read from init's own environment
	// to pin the server now.
	var secrets []string
	imports := make([]imported, len(entries))
	for i, e := range entries {
		for _, v := range append(envValues(e.Env), envValues(e.Headers)...) {
			// A reference names where a secret is, and is printed as such.
			if sv, err := parseSecretValue(v); err != nil || sv.Var == "" {
				secrets = append(secrets, v)
			}
		}
		if e.Unsupported == "" {
			imports[i] = importSecrets(e, *store, os.LookupEnv)
			secrets = append(secrets, imports[i].values...)
		}
	}
	stdout, stderr = redact(stdout, secrets), redact(stderr, secrets)

	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return fail(stderr, "init", err)
	}
	fmt.Fprintf(stdout, "reading %d server(s) from %s (%s)\n", len(entries), trace.Sanitize(h.path), h.key)
	var servers []any
	names := map[string]bool{}
	left := 0
	passEnv := map[string]string{}
	for i, e := range entries {
		label := trace.Sanitize(e.Name)
		if e.Unsupported == "" {
			e.Unsupported = imports[i].unsupported
		}
		if e.Unsupported != "" {
			fmt.Fprintf(stderr, "agentrt-proxy init: server %s left out: %s\n", label, e.Unsupported)
			left++
			continue
		}
		im := imports[i]
		if filepath.Base(e.Command) == "agentrt-proxy" {
			fmt.Fprintf(stdout, "server %s already starts agentrt-proxy; skipped\n", label)
			continue
		}
		name := serverName(e.Name, names)
		names[name] = true
		srv := mcp.Server{Name: name, Endpoint: e.URL, SSE: e.SSE, ConnectTimeout: initConnectTimeout}
		probe := &authProbe{}
		if e.Command != "" {
			srv.Command = append([]string{e.Command}, e.Args...)
			for _, k := range slices.Sorted(maps.Keys(im.plainEnv)) {
				srv.Env = append(srv.Env, k+"="+im.plainEnv[k])
			}
			srv.Env = append(srv.Env, im.resolvedEnv...)
		} else {
			srv.HTTPClient = probeClient(proxy.HeaderClient(e.URL, im.resolvedHeaders), probe)
		}
		announceStart(stdout, stderr, label, e.Command, e.Args)
		m, err := mcp.Pin(ctx, srv)
		oauth := false
		if err != nil && probe.bearer && len(e.Headers) == 0 && !e.SSE {
			// The server asks for OAuth: log in now (the same flow as
			// `agentrt-proxy login`), then pin with the stored tokens.
			if *noLogin {
				fmt.Fprintf(stderr, "agentrt-proxy init: server %s left out: it asks for an OAuth login (-no-login is set); add it with an \"oauth\" entry and run `agentrt-proxy login`\n", label)
				left++
				continue
			}
			m, err = initLogin(ctx, name, e.URL, filepath.Dir(out), *open, stdout, stderr)
			oauth = err == nil
		}
		if err != nil {
			// mcp escapes what the server chose (its stderr tail among
			// it); escaping again would only double the backslashes.
			fmt.Fprintf(stderr, "agentrt-proxy init: server %s left out: it did not start: %s\n", label, err.Error())
			left++
			continue
		}
		manifest := name + ".manifest.json"
		if err := mcp.WriteManifest(filepath.Join(filepath.Dir(out), manifest), m); err != nil {
			return fail(stderr, "init", err)
		}
		if name != e.Name {
			fmt.Fprintf(stdout, "server %s (named %s here): pinned %d tool(s) to %s\n", label, name, len(m.Tools), manifest)
		} else {
			fmt.Fprintf(stdout, "server %s: pinned %d tool(s) to %s\n", name, len(m.Tools), manifest)
		}
		rules := map[string]any{}
		for _, tool := range slices.Sorted(maps.Keys(m.Tools)) {
			class, reason := proxy.Suggest(m.Tools[tool])
			rules[tool] = map[string]any{"side_effect": string(class), "suggestion": reason}
			fmt.Fprintf(stdout, "  %s: suggested %s (%s)\n", trace.Sanitize(tool), class, reason)
		}
		s := map[string]any{"name": name, "manifest": manifest, "rules": rules,
			"connect_timeout": initConnectTimeout.String(), "default_timeout": initDefaultTimeout.String()}
		if e.Command != "" {
			s["command"] = srv.Command
			if len(im.plainEnv) > 0 {
				s["env"] = im.plainEnv
			}
			if len(im.secretEnv) > 0 {
				s["secret_env"] = im.secretEnv
			}
		} else {
			s["endpoint"] = e.URL
			if e.SSE {
				s["transport"] = "sse"
			}
			if len(im.headers) > 0 {
				s["headers"] = im.headers
			}
			if oauth {
				s["oauth"] = map[string]any{}
			}
		}
		if len(rules) == 0 {
			// "rules": {} says the server offers no tools; its prompts and
			// resources are served as its surfaces allow.
			fmt.Fprintf(stdout, "  it offers no tools: written with \"rules\": {}\n")
		}
		if err := im.writeFiles(filepath.Dir(out), name); err != nil {
			return fail(stderr, "init", err)
		}
		for _, line := range im.report() {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
		for k, v := range im.pass {
			passEnv[k] = v
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return fail(stderr, "init", fmt.Errorf("no server was pinned; nothing written"))
	}
	h.passEnv = passEnv
	cfg := configDoc{"database": "runs.db", "session": sessionFor(h), "policy": pol.p, "servers": servers}
	if err := cfg.write(out); err != nil {
		return fail(stderr, "init", err)
	}
	fmt.Fprintf(stdout, "wrote %s (owner-only); %d server(s), %d left out\n", trace.Sanitize(out), len(servers), left)
	printClasses(stdout, &proxy.Config{Path: out, Policy: pol.p})
	fmt.Fprintf(stdout, "  (change it in the file, or run init with -policy CLASS=OUTCOME)\n")
	fmt.Fprintf(stdout, "every rule is a suggestion, and no tool is offered until you review it:\n  agentrt-proxy review -config %s\n\n", quoteArg(out))

	return initHostConfig(stdout, stderr, h, doc, bin, out, *writeHost)
}

// initHostConfig prints the host configuration that routes through the
// proxy and, with writeHost, puts it in place after a backup.
func initHostConfig(stdout, stderr io.Writer, h *host, doc *hostDoc, bin, out string, writeHost bool) int {
	fmt.Fprintf(stdout, "the host's configuration that routes through the proxy (%s, key %q):\n%s", trace.Sanitize(h.path), h.key, h.hostSnippet(bin, out))
	if !writeHost {
		fmt.Fprintf(stdout, "put it in place yourself, or run init again with -write-host-config (after a backup)\n")
		return ExitOK
	}
	backup, err := writeHostConfig(h, doc.raw, doc.splice(h, bin, out), time.Now())
	if err != nil {
		return fail(stderr, "init", err)
	}
	fmt.Fprintf(stdout, "rewrote %s to start only the proxy; the original is in %s\n", trace.Sanitize(h.path), trace.Sanitize(backup))
	fmt.Fprintf(stdout, "restore it with: agentrt-proxy restore-host-config -from %s\n", quoteArg(fromArg(h)))
	fmt.Fprintf(stdout, "next: review, then `agentrt-proxy check -config %s`, then restart the host\n", quoteArg(out))
	return ExitOK
}

// serverName makes a host's key a server name the proxy accepts (it
// prefixes the tool names the model sees), unique among taken.
func serverName(key string, taken map[string]bool) string {
	b := []byte(key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = []byte("server")
	}
	if len(b) > 60 {
		b = b[:60]
	}
	name := string(b)
	for n := 2; taken[name]; n++ {
		name = string(b) + "-" + strconv.Itoa(n)
	}
	return name
}

func sessionFor(h *host) string {
	if h.id == "" {
		return proxy.DefaultSession
	}
	return h.id
}

func fromArg(h *host) string {
	if h.id != "" {
		return h.id
	}
	return h.path
}

// quoteArg quotes a path for a shell when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(trace.Sanitize(s), "'", `'\''`) + "'"
}

// redactor blanks secrets out of everything written through it. Each
// Write is redacted whole, and every line the commands print is one
// Write, so a secret is never split across two.
type redactor struct {
	w       io.Writer
	secrets []string
}

// minSecret is the shortest value redacted: shorter ones would blank
// ordinary words and numbers out of the report.
const minSecret = 6

// redact wraps w so that no form of a secret in which it could be
// printed (as is, escaped by trace.Sanitize, or quoted) reaches it.
func redact(w io.Writer, secrets []string) io.Writer {
	var forms []string
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		q := strconv.Quote(s)
		forms = append(forms, s, trace.Sanitize(s), q[1:len(q)-1], trace.Sanitize(q[1:len(q)-1]))
	}
	if len(forms) == 0 {
		return w
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return &redactor{w: w, secrets: forms}
}

func (r *redactor) Write(p []byte) (int, error) {
	s := string(p)
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// parse parses a command's flags, printing usage on -h.
func parse(name string, fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			io.WriteString(stderr, usage)
			return ExitOK, false
		}
		fmt.Fprintf(stderr, "agentrt-proxy %s: %s\n\n%s", name, trace.Sanitize(err.Error()), usage)
		return ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentrt-proxy %s: unexpected argument %q\n", name, trace.Sanitize(fs.Arg(0)))
		return ExitUsage, false
	}
	return ExitOK, true
}
