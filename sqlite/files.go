package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/agentrt/agentrt/internal/files"
)

// secureFiles holds the database and its sidecars to the owner-only rules:
// each must be a regular file the effective user owns that group and others
// cannot write. A missing database is created 0600 (O_EXCL, so concurrent
// first opens are safe) when create is set. With tighten set, a file others
// can only read is made owner-only; open sets it only once nothing will
// refuse the file.
func secureFiles(path string, create, tighten bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("agentrt: cannot create %s: %w", path, err)
		}
		if err == nil {
			// The umask may have narrowed the mode; owner-only is exact.
			if err := f.Chmod(0o600); err != nil {
				f.Close()
				return err
			}
			f.Close()
		}
		fi, err = os.Stat(path)
		if err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("agentrt: cannot read %s: %w", path, err)
	}
	if err := checkFile(path, fi, tighten); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		side := path + suffix
		sfi, err := os.Lstat(side)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("agentrt: cannot read %s: %w", side, err)
		}
		if err := checkFile(side, sfi, tighten); err != nil {
			return err
		}
	}
	return nil
}

// checkFile holds a database file to the rule for every trusted file
// (files.Check: regular, the effective user's, writable by no one else;
// its owner could rewrite it and so forge any approval in it, whatever
// its mode says now, and this holds for root too). With tighten set, a
// file others can only read is then made owner-only.
func checkFile(path string, fi fs.FileInfo, tighten bool) error {
	if err := files.Check(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o044 != 0 && tighten {
		if err := os.Chmod(path, perm&^0o077); err != nil {
			return fmt.Errorf("agentrt: cannot make %s owner-only: %w", path, err)
		}
	}
	return nil
}
