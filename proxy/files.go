package proxy

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentrt/agentrt/internal/files"
)

// checkPrivate holds a file to the rule for every file agentrt trusts
// (files.Check): a symbolic link (what it points to may change under the
// proxy), anything but a regular file, a file another account owns, or one
// group or others can write is refused. A missing file passes when
// missingOK is set (a database not created yet).
func checkPrivate(path string, missingOK bool) error {
	err := files.CheckPath(path)
	if errors.Is(err, fs.ErrNotExist) {
		if missingOK {
			return nil
		}
		return fmt.Errorf("proxy: cannot read %s: %w", path, err)
	}
	return err
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
	// A token file not written yet (no login) is read as missing later.
	for _, p := range secretFiles(cfg) {
		if err := checkPrivate(p, true); err != nil {
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
