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
	if !fi.Mode().IsRegular() {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(fi.Mode().Perm()), Reason: "it is not a regular file"}
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if err := checkMode(path, fi, tighten); err != nil {
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
		if !sfi.Mode().IsRegular() {
			return &agentrt.InsecureModeError{Path: side, Mode: uint32(sfi.Mode().Perm()), Reason: "it is not a regular file"}
		}
		if err := checkOwner(side, sfi); err != nil {
			return err
		}
		if err := checkMode(side, sfi, tighten); err != nil {
			return err
		}
	}
	return nil
}

// checkOwner refuses a file another account owns: its owner can rewrite it,
// and so forge any approval in it, whatever its mode says now. This holds
// for root too, which could write it.
func checkOwner(path string, fi fs.FileInfo) error {
	if uid, ok := owner(fi); ok {
		if me := uint32(os.Geteuid()); uid != me {
			return &agentrt.OwnerError{Path: path, Owner: uid, User: me}
		}
	}
	return nil
}

// checkMode refuses a file group or others can write, after checkOwner has
// found it the effective user's.
func checkMode(path string, fi fs.FileInfo, tighten bool) error {
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return &agentrt.InsecureModeError{Path: path, Mode: uint32(perm), Reason: "it is writable by group or others"}
	}
	if perm&0o044 != 0 && tighten {
		if err := os.Chmod(path, perm&^0o077); err != nil {
			return fmt.Errorf("agentrt: cannot make %s owner-only: %w", path, err)
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
