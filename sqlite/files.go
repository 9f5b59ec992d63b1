package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	agentrt "github.com/agentrt/agentrt"
)

// secureFiles holds the database and its sidecars to the owner-only rules:
// each must be a regular file group and others cannot write, and a sidecar
// must have the database's owner. A missing database is created 0600 (O_EXCL, so concurrent
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
	if !fi.Mode().IsRegular() {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(fi.Mode().Perm()), Reason: "it is not a regular file"}
	}
	if err := checkMode(path, fi, tighten); err != nil {
		return err
	}
	dbUID, _ := owner(fi)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		side := path + suffix
		sfi, err := os.Lstat(side)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("agentrt: cannot read %s: %w", side, err)
		}
		if !sfi.Mode().IsRegular() {
			return &agentrt.InsecureModeError{Path: side, Mode: uint32(sfi.Mode().Perm()), Reason: "it is not a regular file"}
		}
		if uid, ok := owner(sfi); ok && uid != dbUID {
			return &agentrt.InsecureModeError{Path: side, Mode: uint32(sfi.Mode().Perm()), Reason: fmt.Sprintf("it is owned by user %d, not by the database's owner %d", uid, dbUID)}
		}
		if err := checkMode(side, sfi, tighten); err != nil {
			return err
		}
	}
	return nil
}

// checkMode refuses a file group or others can write. With tighten set, it
// makes one others can only read owner-only if the user owns it.
func checkMode(path string, fi fs.FileInfo, tighten bool) error {
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(perm), Reason: "it is writable by group or others"}
	}
	if perm&0o044 != 0 && tighten {
		if uid, ok := owner(fi); ok && uid == uint32(os.Getuid()) {
			if err := os.Chmod(path, perm&^0o077); err != nil {
				return fmt.Errorf("agentrt: cannot make %s owner-only: %w", path, err)
			}
		}
	}
	return nil
}

func owner(fi fs.FileInfo) (uint32, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, true
	}
	return 0, false
}
