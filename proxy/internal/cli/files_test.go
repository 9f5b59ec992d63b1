//go:build unix

package cli

// The file rule is tested here because this package is the one place
// whose tests can reach every reader of a trusted file and every durable
// writer in the tree: the root module's (pinned keys, key files, export
// cursors, replay recordings), mcp's, policy/cel's, the proxy's and this
// CLI's own.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	rootcli "github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/internal/files/filestest"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/replay"
)

// Every reader of a file agentrt trusts is run over the same table of
// hostile files (another account's, group- or world-writable, a link, a
// FIFO, a directory, one swapped between look and open, one too large)
// and refuses each with the same *agentrt.InsecureModeError Problem,
// after accepting the same content stored as the rule asks.
func TestFiles_EveryTrustedReadRefusesTheSameFiles(t *testing.T) {
	pub, priv := keyFiles(t)
	errOf := func(f func(string) error) func(string) error { return f }
	filestest.Refuse(t, []filestest.Reader{
		{Name: "agentrt.LoadPinnedKeys", Good: []byte("# no keys pinned\n"), Max: agentrt.MaxPinnedKeysFile,
			Read: func(p string) error { _, err := agentrt.LoadPinnedKeys(p); return err }},
		{Name: "mcp.ReadOwned", Good: []byte("{}\n"), Max: mcp.MaxFileBytes,
			Read: func(p string) error { _, err := mcp.ReadOwned(p); return err }},
		{Name: "mcp.ReadRules", Good: []byte("{}\n"), Max: mcp.MaxFileBytes,
			Read: func(p string) error { _, err := mcp.ReadRules(p); return err }},
		{Name: "mcp.ReadManifest", Good: []byte("{}\n"), Max: mcp.MaxFileBytes,
			Read: func(p string) error { _, err := mcp.ReadManifest(p); return err }},
		{Name: "cel.Load", Good: []byte("rules: []\ndefault: {outcome: deny}\n"), Max: cel.MaxFileBytes, Ext: ".yaml",
			Read: func(p string) error { _, err := cel.Load(p); return err }},
		{Name: "cel.LoadCases", Good: []byte("cases: []\n"), Max: cel.MaxFileBytes, Ext: ".yaml",
			Read: func(p string) error { _, err := cel.LoadCases(p); return err }},
		{Name: "proxy.LoadConfig", Good: []byte(`{"database":"runs.db","servers":[{"name":"fs","command":["node","server.js"],"manifest":"fs.manifest.json","rules":{"read_file":{"side_effect":"read_only"}}}]}`), Max: mcp.MaxFileBytes,
			Read: func(p string) error { _, err := proxy.LoadConfig(p); return err }},
		{Name: "proxy.ReadFrontToken", Good: []byte(strings.Repeat("ab", 32) + "\n"), Max: 4 << 10,
			Read: func(p string) error { _, err := proxy.ReadFrontToken(p); return err }},
		{Name: "agentrt-proxy readConfigDoc", Good: []byte("{}\n"), Max: mcp.MaxFileBytes,
			Read: errOf(func(p string) error { _, err := readConfigDoc(p); return err })},
		{Name: "agentrt-proxy readHostFile", Good: []byte(`{"mcpServers":{}}`), Max: maxHostFile,
			Read: func(p string) error { _, err := readHostFile(&host{path: p, key: "mcpServers"}); return err }},
		{Name: "agentrt-proxy readBackup", Good: []byte(`{"mcpServers":{}}`), Max: maxHostFile,
			Read: func(p string) error { _, err := readBackup(p); return err }},
		{Name: "export.FileCursor.Load", Good: []byte("42\n"), Max: 64,
			Read: func(p string) error { _, err := export.FileCursor{Path: p}.Load(); return err }},
		{Name: "agentrt -key (public)", Good: pub, Max: 64 << 10,
			Read: func(p string) error { _, err := rootcli.ReadPublicKeyFile(p); return err }},
		{Name: "agentrt -key (private)", Good: priv, Max: 64 << 10,
			Read: func(p string) error { _, err := rootcli.ReadPrivateKeyFile(p); return err }},
	})
}

// Every writer of a file that must survive a crash syncs the new file
// before it renames it over the old one and syncs the directory after,
// in that order, on the target's own directory, and leaves the bytes it
// meant.
func TestFiles_EveryDurableWriteSyncs(t *testing.T) {
	ctx := context.Background()
	writers := []struct {
		name  string
		write func(t *testing.T, dir string) (targets []string)
	}{
		{"mcp.WriteManifest", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "fs.manifest.json")
			must(t, mcp.WriteManifest(p, &mcp.Manifest{}))
			return []string{p}
		}},
		{"agentrt-proxy configDoc.write", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "proxy.json")
			d := configDoc{"database": "runs.db", "servers": []any{map[string]any{"name": "fs", "command": []any{"node", "server.js"}, "manifest": "fs.manifest.json",
				"rules": map[string]any{"read_file": map[string]any{"side_effect": "read_only"}}}}}
			must(t, d.write(p))
			return []string{p}
		}},
		{"agentrt-proxy writeHostConfig (the backup, then the file)", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "claude_desktop_config.json")
			must(t, os.WriteFile(p, []byte("{}"), 0o600))
			backup, err := writeHostConfig(&host{path: p, key: "mcpServers"}, []byte("{}"), []byte(`{"mcpServers":{}}`), time.Unix(0, 0))
			must(t, err)
			return []string{backup, p}
		}},
		{"agentrt approvers keygen (the key, then its .pub)", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "bot.key")
			_, err := rootcli.WriteKeyPair(p)
			must(t, err)
			return []string{p, p + ".pub"}
		}},
		{"agentrt-proxy init's secret files", func(t *testing.T, dir string) []string {
			im := &imported{files: []secretFile{{suffix: "header.Authorization", value: "Bearer s3cret", ref: map[string]string{}}}}
			must(t, im.writeFiles(dir, "remote"))
			return []string{filepath.Join(dir, im.files[0].ref["file"])}
		}},
		{"export.FileCursor.Save", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "cursor")
			must(t, export.FileCursor{Path: p}.Save(42))
			return []string{p}
		}},
		{"replay.Recorder", func(t *testing.T, dir string) []string {
			r := &replay.Recorder{Inner: fixedModel{}, Dir: dir}
			_, err := r.Generate(ctx, agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}})
			must(t, err)
			ents, err := filepath.Glob(filepath.Join(dir, "*"))
			must(t, err)
			if len(ents) != 1 {
				t.Fatalf("the recorder left %v", ents)
			}
			return ents
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			type step struct {
				s    files.Step
				path string
			}
			var steps []step
			restore := files.ObserveForTest(func(s files.Step, p string) { steps = append(steps, step{s, p}) })
			targets := w.write(t, dir)
			restore()
			if len(steps) != 4*len(targets) {
				t.Fatalf("%d steps for %d files: %v", len(steps), len(targets), steps)
			}
			for i, target := range targets {
				s := steps[4*i : 4*i+4]
				got := []files.Step{s[0].s, s[1].s, s[2].s, s[3].s}
				if !slices.Equal(got, []files.Step{files.StepCreate, files.StepSync, files.StepRename, files.StepSyncDir}) &&
					!slices.Equal(got, []files.Step{files.StepCreate, files.StepSync, files.StepLink, files.StepSyncDir}) {
					t.Fatalf("steps %v for %s: the write is not create, sync, rename or link, sync the directory", got, target)
				}
				home := filepath.Dir(target)
				if tmp := s[0].path; filepath.Dir(tmp) != home || s[1].path != tmp {
					t.Fatalf("the temporary file %s is not the synced one %s in %s", tmp, s[1].path, home)
				}
				if s[2].path != target || filepath.Clean(s[3].path) != home {
					t.Fatalf("placed at %s and synced %s; want %s and %s", s[2].path, s[3].path, target, home)
				}
				if fi, err := os.Stat(target); err != nil || fi.Size() == 0 {
					t.Fatalf("the target after the write: %v %v", fi, err)
				}
			}
		})
	}
}

type fixedModel struct{}

func (fixedModel) Name() string { return "fixed" }
func (fixedModel) Generate(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return agentrt.ModelResponse{Text: "ok", StopReason: "end_turn"}, nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// keyFiles are an ed25519 public and private key in the PEM forms the
// -key flag reads.
func keyFiles(t *testing.T) (pub, priv []byte) {
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	der, err := x509.MarshalPKIXPublicKey(pk)
	must(t, err)
	p8, err := x509.MarshalPKCS8PrivateKey(sk)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})
}
