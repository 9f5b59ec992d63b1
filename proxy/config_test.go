package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/config"
)

// writeFile writes body owner-only, whatever the umask.
func writeFile(t testing.TB, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// minimalConfig is a configuration with one stdio server on sandbox.
func minimalConfig(sandbox string) string {
	return `{"database":"runs.db","servers":[{"name":"fs","command":["node","server.js",` + jsonString(sandbox) + `],
	"manifest":"fs.manifest.json","rules":{"write_file":{"side_effect":"local_mutation","timeout":"5s"}}}]}`
}

func jsonString(s string) string {
	b := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + b + `"`
}

// A configuration read with its defaults and relative paths resolved
// against its own directory.
func TestConfig_DefaultsAndRelativePaths(t *testing.T) {
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	path := writeFile(t, filepath.Join(dir, "proxy.json"), minimalConfig(sandbox))
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Path: path, Database: filepath.Join(dir, "runs.db"), Index: filepath.Join(dir, "runs.db"+IndexSuffix),
		Session: DefaultSession, Hold: DefaultHold, RepeatWindow: DefaultRepeatWindow, MaxPending: DefaultMaxPending,
		ApprovalTTL: DefaultApprovalTTL, GrantTTL: DefaultGrantTTL, StatusTool: DefaultStatusTool, LeaseTTL: agentrt.DefaultLeaseTTL}
	got := *cfg
	got.Servers, got.Policy, want.Servers = nil, nil, nil
	if got.Path != want.Path || got.Database != want.Database || got.Index != want.Index || got.Session != want.Session ||
		got.Hold != want.Hold || got.RepeatWindow != want.RepeatWindow || got.MaxPending != want.MaxPending ||
		got.ApprovalTTL != want.ApprovalTTL || got.GrantTTL != want.GrantTTL || got.StatusTool != want.StatusTool || got.LeaseTTL != want.LeaseTTL {
		t.Fatalf("config\n got %+v\nwant %+v", got, want)
	}
	if m := cfg.Servers[0].Manifest; m != filepath.Join(dir, "fs.manifest.json") {
		t.Fatalf("manifest %s", m)
	}
	if cfg.Policy[agentrt.RemoteMutation] != agentrt.RequireApproval || cfg.Policy[agentrt.Destructive] != agentrt.Deny {
		t.Fatalf("policy %v is not the default", cfg.Policy)
	}
	r := cfg.Servers[0].Rules["write_file"]
	if r.SideEffect != agentrt.LocalMutation || r.Timeout != 5*time.Second || !config.MCPRule(r).Terminal {
		t.Fatalf("rule %+v", r)
	}
}

// Whoever writes the configuration, a manifest or the database decides how
// every tool is classified or forges an approval: a file group or others
// can write, a symbolic link, or a file of another type is refused.
func TestConfig_RefusesFilesOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "proxy.json"), minimalConfig(filepath.Join(dir, "sandbox")))
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); !errors.Is(err, agentrt.ErrInsecureMode) {
		t.Fatalf("a configuration others can write: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("a configuration others can only read: %v", err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(link); !errors.Is(err, agentrt.ErrSymlink) {
		t.Fatalf("a configuration named by a link: %v", err)
	}

	manifest := writeFile(t, cfg.Servers[0].Manifest, `{}`)
	db := writeFile(t, cfg.Database, "")
	if err := config.CheckFiles(cfg, false); err != nil {
		t.Fatalf("owner-only files refused: %v", err)
	}
	for _, f := range []string{manifest, db, cfg.Database + "-wal", cfg.Index} {
		if _, err := os.Stat(f); err != nil {
			writeFile(t, f, "")
		}
		if err := os.Chmod(f, 0o620); err != nil {
			t.Fatal(err)
		}
		if err := config.CheckFiles(cfg, false); !errors.Is(err, agentrt.ErrInsecureMode) || !strings.Contains(err.Error(), f) {
			t.Fatalf("%s writable by its group: %v", f, err)
		}
		if err := os.Chmod(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(manifest, db); err != nil {
		t.Fatal(err)
	}
	if err := config.CheckFiles(cfg, false); !errors.Is(err, agentrt.ErrSymlink) {
		t.Fatalf("a database that is a link: %v", err)
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := config.CheckFiles(cfg, false); !errors.Is(err, agentrt.ErrInsecureMode) {
		t.Fatalf("a database that is a directory: %v", err)
	}
}

// A file two readers could read two ways (a repeated key, which one
// decoder takes first and another last), a field this build does not know
// (a typo that would silently mean a default), or trailing data is refused,
// at every level.
func TestConfig_RefusesWhatCouldReadTwoWays(t *testing.T) {
	dir := t.TempDir()
	base := minimalConfig(filepath.Join(dir, "sandbox"))
	cases := map[string]string{
		"repeated top-level key": strings.Replace(base, `"database":"runs.db"`, `"database":"runs.db","database":"other.db"`, 1),
		"repeated rule key":      strings.Replace(base, `"side_effect":"local_mutation"`, `"side_effect":"read_only","side_effect":"local_mutation"`, 1),
		"repeated tool":          strings.Replace(base, `"rules":{`, `"rules":{"write_file":{"side_effect":"read_only","timeout":"5s"},`, 1),
		"escaped repeated key":   strings.Replace(base, `"database":"runs.db"`, `"database":"runs.db","d\u0061tabase":"other.db"`, 1),
		"unknown top-level":      strings.Replace(base, `"database"`, `"databse":"x","database"`, 1),
		"unknown server field":   strings.Replace(base, `"name":"fs"`, `"name":"fs","skip_path_chek":true`, 1),
		"unknown rule field":     strings.Replace(base, `"timeout":"5s"`, `"timeout":"5s","terminal":true`, 1),
		"trailing data":          base + ` {}`,
		"negative duration":      strings.Replace(base, `"database"`, `"hold":"-1s","database"`, 1),
		"a duration as a number": strings.Replace(base, `"database"`, `"hold":15,"database"`, 1),
		"an unknown outcome":     strings.Replace(base, `"timeout":"5s"`, `"timeout":"5s","outcome":"abort"`, 1),
		"an unknown class":       strings.Replace(base, `"database"`, `"policy":{"read_onyl":"allow"},"database"`, 1),
		"max_pending below one":  strings.Replace(base, `"database"`, `"max_pending":0,"database"`, 1),
		"lease_ttl below 3s":     strings.Replace(base, `"database"`, `"lease_ttl":"1s","database"`, 1),
		"an unsafe session":      strings.Replace(base, `"database"`, `"session":"../x","database"`, 1),
		"both command and URL":   strings.Replace(base, `"name":"fs"`, `"name":"fs","endpoint":"http://127.0.0.1:1/mcp"`, 1),
	}
	for name, body := range cases {
		if body == base {
			t.Fatalf("%s: the case changed nothing", name)
		}
		path := writeFile(t, filepath.Join(dir, "proxy.json"), body)
		if cfg, err := LoadConfig(path); err == nil {
			t.Errorf("%s: accepted: %+v", name, cfg)
		}
	}
	path := writeFile(t, filepath.Join(dir, "proxy.json"), base)
	if _, err := LoadConfig(path); err != nil {
		t.Fatalf("the base configuration: %v", err)
	}
}

// A stdio server whose arguments name the directory holding the database
// (or the configuration, a manifest, the index) could rewrite the policy
// or forge an approval: it is refused, naming skip_path_check, unless the
// configuration sets it. A sandbox beside those files is fine.
func TestConfig_RefusesAServerThatReachesTheProxysFiles(t *testing.T) {
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	if err := os.Mkdir(sandbox, 0o700); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(dir, "proxy.json"), minimalConfig(sandbox))
	if _, err := LoadConfig(path); err != nil {
		t.Fatalf("a sandbox beside the proxy's files: %v", err)
	}
	writeFile(t, path, minimalConfig(dir))
	_, err := LoadConfig(path)
	var re *ReachError
	if !errors.As(err, &re) || !errors.Is(err, ErrReach) || !strings.Contains(err.Error(), "skip_path_check") {
		t.Fatalf("a server on the directory holding the database: %v", err)
	}
	// The database and the manifest may live elsewhere, each reached alone.
	other := t.TempDir()
	for _, field := range []string{`"database":` + jsonString(filepath.Join(sandbox, "runs.db")), `"index":` + jsonString(filepath.Join(sandbox, "x.idx"))} {
		body := strings.Replace(minimalConfig(sandbox), `"database":"runs.db"`, `"database":"runs.db",`+field, 1)
		if strings.HasPrefix(field, `"database"`) {
			body = strings.Replace(minimalConfig(sandbox), `"database":"runs.db"`, field, 1)
		}
		writeFile(t, path, body)
		if _, err := LoadConfig(path); !errors.Is(err, ErrReach) {
			t.Fatalf("%s inside the sandbox: %v", field, err)
		}
	}
	body := strings.Replace(minimalConfig(sandbox), `"fs.manifest.json"`, jsonString(filepath.Join(sandbox, "m.json")), 1)
	writeFile(t, path, body)
	if _, err := LoadConfig(path); !errors.Is(err, ErrReach) {
		t.Fatalf("a manifest inside the sandbox: %v", err)
	}
	body = strings.Replace(minimalConfig(dir), `"name":"fs"`, `"name":"fs","skip_path_check":true`, 1)
	writeFile(t, path, body)
	if _, err := LoadConfig(path); err != nil {
		t.Fatalf("skip_path_check set: %v", err)
	}
	// An HTTP server has no arguments to read.
	body = `{"database":"runs.db","servers":[{"name":"web","endpoint":"http://127.0.0.1:1/mcp","manifest":"m.json","rules":{"t":{"side_effect":"read_only"}}}]}`
	writeFile(t, filepath.Join(other, "p.json"), body)
	if _, err := LoadConfig(filepath.Join(other, "p.json")); err != nil {
		t.Fatalf("an HTTP server: %v", err)
	}
}

// The check reads the spellings servers commonly take a path in: a flag's
// value after = or :, a file:// URL, the rest of a short flag, a leading ~,
// a relative path against where the server starts, a symbolic link to the
// directory, a hard link to the file, and a database not created yet.
func TestConfig_ReachCheckReadsCommonSpellings(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	proxyDir := filepath.Join(home, "agentrt")
	if err := os.Mkdir(proxyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(proxyDir, "proxy.json")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(proxyDir, link); err != nil {
		t.Fatal(err)
	}
	withArg := func(arg string) string {
		return `{"database":"runs.db","servers":[{"name":"fs","command":["node","server.js",` + jsonString(arg) + `],
		"manifest":"fs.manifest.json","rules":{"t":{"side_effect":"read_only","timeout":"1s"}}}]}`
	}
	writeFile(t, path, withArg(dir))
	hard := filepath.Join(dir, "hard.json")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	t.Chdir(home)
	spellings := []string{
		proxyDir,
		proxyDir + "/",
		"--root=" + proxyDir,
		"root:" + proxyDir,
		"file://" + proxyDir,
		"-r" + proxyDir,
		"-r=" + proxyDir,
		"~/agentrt",
		"--dir=~/agentrt",
		"~",
		"agentrt",
		"./agentrt/../agentrt",
		".",
		link,
		"--allow=" + link,
		filepath.Join(proxyDir, "runs.db"),
		filepath.Join(link, "runs.db-wal"),
		filepath.Join(proxyDir, "runs.db"+IndexSuffix),
		hard,
		"/",
	}
	for _, arg := range spellings {
		writeFile(t, path, withArg(arg))
		if _, err := LoadConfig(path); !errors.Is(err, ErrReach) {
			t.Errorf("argument %q was not seen to reach the proxy's files: %v", arg, err)
		}
	}
	for _, arg := range []string{dir + "/sandbox", "--root=" + filepath.Join(dir, "sandbox"), "-y", "--verbose", "stdio", "~/elsewhere"} {
		writeFile(t, path, withArg(arg))
		if _, err := LoadConfig(path); err != nil {
			t.Errorf("argument %q was refused: %v", arg, err)
		}
	}
}
