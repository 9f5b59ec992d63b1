package release

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
)

// GoEnv returns base (an environment, as os.Environ gives it) set up for a
// go command outside the workspace that fetches our modules from the file
// proxy at proxyDir and every other module as base says (the ordinary
// proxy): GOWORK=off; GOPROXY with the file proxy first; GONOSUMDB naming
// our modules, so the checksum database is asked about every module but
// ours; modcache, when set, as GOMODCACHE; and flags added to GOFLAGS.
func GoEnv(base []string, proxyDir, prefix, modcache string, flags ...string) ([]string, error) {
	get := func(k string) string {
		v := ""
		for _, kv := range base {
			if key, val, ok := strings.Cut(kv, "="); ok && key == k {
				v = val
			}
		}
		return v
	}
	ordinary := get("GOPROXY")
	if ordinary == "" {
		cmd := exec.Command("go", "env", "GOPROXY")
		cmd.Env = base
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("release: go env GOPROXY: %w", err)
		}
		ordinary = strings.TrimSpace(string(out))
	}
	if ordinary == "" || ordinary == "off" {
		return nil, errors.New("release: GOPROXY is off, so nothing but our modules could be fetched")
	}
	abs, err := filepath.Abs(proxyDir)
	if err != nil {
		return nil, err
	}
	nosum := prefix
	if v := get("GONOSUMDB"); v != "" {
		nosum = v + "," + prefix
	}
	goflags := strings.TrimSpace(strings.Join(append([]string{get("GOFLAGS")}, flags...), " "))
	set := map[string]string{
		"GOWORK":    "off",
		"GOPROXY":   "file://" + filepath.ToSlash(abs) + "," + ordinary,
		"GONOSUMDB": nosum,
		"GOFLAGS":   goflags,
	}
	if modcache != "" {
		set["GOMODCACHE"] = modcache
	}
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"GOWORK", "GOPROXY", "GONOSUMDB", "GOFLAGS", "GOMODCACHE"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out, nil
}

// ReleaseModCache returns a module cache for builds that fetch our modules
// from a file proxy, kept between runs so that every other module is
// downloaded once, with our modules removed from it: a module cache never
// fetches a version again, and ours change under one version from one
// commit to the next. It is never the user's own module cache. A go
// command that uses it must run with WithoutModIndex.
func ReleaseModCache(prefix string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("release: %w", err)
	}
	dir := filepath.Join(base, "agentrt-release", "modcache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("release: %w", err)
	}
	if err := PurgeOurs(dir, prefix); err != nil {
		return "", err
	}
	return dir, nil
}

// WithoutModIndex turns off the go command's index of module-cache
// packages (GODEBUG=goindex=0) in env. The index lives in the build cache,
// keyed by the module's directory alone, since a module cache never changes
// under one version; ReleaseModCache's does, for ours, and the go command
// would build from the file list of the last run.
func WithoutModIndex(env []string) []string {
	out := make([]string, 0, len(env)+1)
	debug := "goindex=0"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				debug = v + "," + debug
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+debug)
}

// PurgeOurs removes every version of our modules from the module cache dir,
// extracted and downloaded: the core extracts to PREFIX@VERSION beside the
// directory PREFIX that holds the nested modules' PREFIX/DIR@VERSION.
func PurgeOurs(dir, prefix string) error {
	esc, err := module.EscapePath(prefix)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	base := filepath.Join(dir, filepath.FromSlash(esc))
	at, err := filepath.Glob(base + "@*")
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	for _, p := range append(at, base, filepath.Join(dir, "cache", "download", filepath.FromSlash(esc))) {
		if err := RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// RemoveAll removes dir like os.RemoveAll, first making the read-only
// directories the module cache leaves writable.
func RemoveAll(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("release: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
