// Command mcp runs a scripted agent against the real MCP filesystem server
// under agentrt's controls: the server's tools register only through the
// operator's rules and a pin of what the server presented, a read is
// allowed, and a write waits for `agentrt approve` and then resumes.
//
//	make mcp-servers                    # npm ci --ignore-scripts, once
//	go run ./examples/mcp pin           # review and pin the server's tools
//	go run ./examples/mcp run           # reads, then waits on the write
//	agentrt -db <db> approve <run>      # the operator decides
//	go run ./examples/mcp run -resume <run>
//
// Everything lives under the per-user cache directory
// (os.UserCacheDir()/agentrt/examples-mcp), created 0700: the sandbox the
// server may touch, the manifest and rules (owner-only, read with
// mcp.ReadOwned) and the database.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

//go:embed rules.json
var defaultRules []byte

// defaultEntry is where `make mcp-servers` installs the pinned filesystem
// server, relative to the repository root.
const defaultEntry = "mcp/testdata/servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

const readme = "# Sandbox\n\nThe MCP filesystem server may read and write only in this directory.\n"

func main() {
	os.Exit(dispatch(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// paths are the example's files.
type paths struct {
	dir, sandbox, manifest, rules, db, entry string
}

func defaultPaths() (paths, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return paths{}, err
	}
	dir := filepath.Join(base, "agentrt", "examples-mcp")
	return paths{dir: dir, sandbox: filepath.Join(dir, "sandbox"), manifest: filepath.Join(dir, "manifest.json"),
		rules: filepath.Join(dir, "rules.json"), db: filepath.Join(dir, "runs.db"), entry: defaultEntry}, nil
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "pin" && args[0] != "run") {
		fmt.Fprintln(stderr, "usage: mcp pin|run [-resume RUN] [-entry PATH]")
		return 2
	}
	p, err := defaultPaths()
	if err != nil {
		fmt.Fprintln(stderr, "mcp:", err)
		return 1
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&p.entry, "entry", p.entry, "the pinned filesystem server's entry point, run with node")
	fs.StringVar(&p.rules, "rules", p.rules, "the rules file (owner-only; written from the example's defaults if missing)")
	resume := fs.String("resume", "", "resume this run after `agentrt approve`")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if args[0] == "pin" {
		err = pinCmd(ctx, p, stdout)
	} else {
		err = runCmd(ctx, p, *resume, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcp:", err)
		return 1
	}
	return 0
}

// prepare makes the per-user directory and the sandbox 0700, a README in
// the sandbox 0600 that is never overwritten, and the rules file 0600 when
// it is missing.
func prepare(p paths) error {
	for _, d := range []string{p.dir, p.sandbox} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		path string
		body []byte
	}{{filepath.Join(p.sandbox, "README.md"), []byte(readme)}, {p.rules, defaultRules}} {
		fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := fh.Write(f.body); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}

// server is the filesystem server on the sandbox, started with node and
// the pinned package's entry point, never npx.
func server(p paths) (mcp.Server, error) {
	if _, err := os.Stat(p.entry); err != nil {
		return mcp.Server{}, fmt.Errorf("the pinned filesystem server is not installed at %s: run `make mcp-servers` from the repository root", p.entry)
	}
	return mcp.Server{
		Name:           "fs",
		Command:        []string{"node", p.entry, p.sandbox},
		ConnectTimeout: 30 * time.Second,
		DefaultTimeout: 5 * time.Second,
	}, nil
}

func pinCmd(ctx context.Context, p paths, stdout io.Writer) error {
	if err := prepare(p); err != nil {
		return err
	}
	srv, err := server(p)
	if err != nil {
		return err
	}
	m, err := mcp.Pin(ctx, srv)
	if err != nil {
		return err
	}
	if err := mcp.WriteManifest(p.manifest, m); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pinned %d tools of %s in %s; review it, then: go run ./examples/mcp run\n", len(m.Tools), srv.Name, p.manifest)
	return nil
}

// approveWrites lets reads through and asks the operator about every write.
var approveWrites = agentrt.SideEffectPolicy{
	agentrt.ReadOnly:       agentrt.Allow,
	agentrt.LocalMutation:  agentrt.RequireApproval,
	agentrt.RemoteMutation: agentrt.RequireApproval,
	agentrt.Destructive:    agentrt.Deny,
}

// script reads the sandbox's README, writes a note, and completes. The
// server resolves a relative path against its own working directory, so
// the script names files by their full path in the sandbox.
func script(sandbox string) *scripted.Agent {
	arg := func(v map[string]string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	return &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("fs_read_text_file", arg(map[string]string{"path": filepath.Join(sandbox, "README.md")}), "see what the sandbox is for"),
		scripted.ToolCall("fs_write_file", arg(map[string]string{"path": filepath.Join(sandbox, "notes.txt"), "content": noteText}), "record what was read"),
		scripted.Complete(`{"wrote":"notes.txt"}`),
	}}
}

// noteText is what the approved write puts in notes.txt.
const noteText = "The sandbox README says the server may touch only this directory.\n"

func runCmd(ctx context.Context, p paths, resume string, stdout io.Writer) error {
	if err := prepare(p); err != nil {
		return err
	}
	srv, err := server(p)
	if err != nil {
		return err
	}
	m, err := mcp.ReadManifest(p.manifest)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no manifest at %s: run `go run ./examples/mcp pin` first", p.manifest)
	}
	if err != nil {
		return err
	}
	rules, err := mcp.ReadRules(p.rules)
	if err != nil {
		return err
	}
	tools, rep, err := mcp.Load(ctx, srv, m, rules)
	if err != nil {
		return err
	}
	defer rep.Connection.Close()
	fmt.Fprint(stdout, rep.String())
	store, err := sqlite.Open(p.db)
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: store, Policy: approveWrites, Tools: tools, Observer: eventlog.Writer(stdout)}, Agent: script(p.sandbox)})
	if err != nil {
		return err
	}
	var r agentrt.Run
	if resume != "" {
		r, err = d.Resume(ctx, resume)
	} else {
		r, err = d.Start(ctx, "note what the sandbox README says", agentrt.DefaultLimits())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s: %s (%s)\n", r.ID, r.Status, r.Reason)
	if r.Status == agentrt.RunWaiting {
		fmt.Fprintf(stdout, "the write waits for an operator:\n  agentrt -db %s approve %s\nthen:\n  go run ./examples/mcp run -resume %s\n", p.db, r.ID, r.ID)
	}
	return nil
}
