package config

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
	"github.com/agentrt/agentrt/proxy/internal/reach"
)

// CheckFiles holds the configuration, every manifest, the database and the
// index (and their sidecars) to files.CheckPrivate. The proxy runs it before and
// after it opens the stores, so a file swapped for a link or loosened in
// between is caught before the first call.
func CheckFiles(cfg *Config, opened bool) error {
	must := []string{cfg.Path}
	for _, s := range cfg.Servers {
		must = append(must, s.Manifest)
	}
	if cfg.PolicyFile != "" {
		must = append(must, cfg.PolicyFile)
	}
	if cfg.PinnedKeys != "" {
		must = append(must, cfg.PinnedKeys)
	}
	if opened {
		must = append(must, cfg.Database, cfg.Index)
	}
	for _, p := range must {
		if err := files.CheckPrivate(p, false); err != nil {
			return err
		}
	}
	// A token file not written yet (no login) is read as missing later.
	for _, p := range secretFiles(cfg) {
		if err := files.CheckPrivate(p, true); err != nil {
			return err
		}
	}
	for _, db := range []string{cfg.Database, cfg.Index} {
		for _, p := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
			if err := files.CheckPrivate(p, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// secretFiles are the files a configuration reads secrets or tokens from.
func secretFiles(cfg *Config) []string {
	var out []string
	for _, s := range cfg.Servers {
		for _, m := range []map[string]credentials.SecretRef{s.Headers, s.SecretEnv} {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if m[k].File != "" {
					out = append(out, m[k].File)
				}
			}
		}
		if s.OAuth != nil {
			out = append(out, s.OAuth.Tokens)
			if s.OAuth.ClientSecret != nil && s.OAuth.ClientSecret.File != "" {
				out = append(out, s.OAuth.ClientSecret.File)
			}
			if s.OAuth.PrivateKey != nil {
				out = append(out, s.OAuth.PrivateKey.File)
			}
		}
	}
	return out
}

// protectedFiles are the files whoever writes them controls the proxy
// through: the configuration, the database and its sidecars, the index and
// its sidecars, and every manifest.
func protectedFiles(cfg *Config) []string {
	out := []string{cfg.Path}
	for _, db := range []string{cfg.Database, cfg.Index} {
		out = append(out, db, db+"-wal", db+"-shm", db+"-journal")
	}
	for _, s := range cfg.Servers {
		out = append(out, s.Manifest)
	}
	if cfg.PolicyFile != "" {
		out = append(out, cfg.PolicyFile)
	}
	return append(out, secretFiles(cfg)...)
}

// checkReach refuses a stdio server (without skip_path_check) one of whose
// arguments, relative ones read against the proxy's working directory
// (where the server starts) and against the configuration's directory,
// names a protected file or a directory holding one. It is a guard against
// a mistake in the configuration, not a boundary: what a server reaches by
// other means is not seen.
func checkReach(cfg *Config) error {
	var servers []reach.Server
	for _, s := range cfg.Servers {
		if len(s.Command) > 0 && !s.SkipPathCheck {
			servers = append(servers, reach.Server{Name: s.Name, Command: s.Command})
		}
	}
	return reach.Check(protectedFiles(cfg), filepath.Dir(cfg.Path), servers)
}

// ErrReach marks a stdio server whose arguments name one of the proxy's
// own files or a directory holding one.
var ErrReach = reach.ErrReach

// ReachError names the server, the argument and the file it reaches.
type ReachError = reach.Error
