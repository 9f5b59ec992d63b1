package proxy

import (
	"path/filepath"

	"github.com/agentrt/agentrt/proxy/internal/reach"
)

// ErrReach marks a stdio server whose arguments name one of the proxy's
// own files or a directory holding one.
var ErrReach = reach.ErrReach

// ReachError names the server, the argument and the file it reaches.
type ReachError = reach.Error

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
