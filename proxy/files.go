package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"

	agentrt "github.com/agentrt/agentrt"
)

// checkPrivate refuses a file whoever else could rewrite: a symbolic link
// (what it points to may change under the proxy), anything but a regular
// file, a file another account owns, or one group or others can write. A
// missing file passes when missingOK is set (a database not created yet).
func checkPrivate(path string, missingOK bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) && missingOK {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy: cannot read %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &agentrt.SymlinkError{Path: path}
	}
	if !fi.Mode().IsRegular() {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(fi.Mode().Perm()), Reason: "it is not a regular file"}
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if me := uint32(os.Geteuid()); st.Uid != me {
			return &agentrt.OwnerError{Path: path, Owner: st.Uid, User: me}
		}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(perm), Reason: "group or others can write it"}
	}
	return nil
}

// checkFiles holds the configuration, every manifest, the database and the
// index (and their sidecars) to checkPrivate. The proxy runs it before and
// after it opens the stores, so a file swapped for a link or loosened in
// between is caught before the first call.
func checkFiles(cfg *Config, opened bool) error {
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
		if err := checkPrivate(p, false); err != nil {
			return err
		}
	}
	for _, db := range []string{cfg.Database, cfg.Index} {
		for _, p := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
			if err := checkPrivate(p, true); err != nil {
				return err
			}
		}
	}
	return nil
}
