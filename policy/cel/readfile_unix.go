//go:build unix

package celpolicy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// readOwned reads a policy file the way the proxy reads its config: the
// path must name a regular file itself (not a symbolic link), owned by the
// effective user and writable by no one else, and at most max bytes. The
// checks are made on the opened descriptor, so the file cannot be swapped
// between the check and the read.
func readOwned(path string, max int64) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if li.Mode()&os.ModeSymlink != 0 {
		return nil, &InsecureFileError{Path: path, Mode: uint32(li.Mode().Perm()), Reason: "it is a symbolic link"}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &InsecureFileError{Path: path, Reason: "it is a symbolic link"}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mode := uint32(fi.Mode().Perm())
	if !os.SameFile(li, fi) {
		return nil, &InsecureFileError{Path: path, Mode: mode, Reason: "it changed while it was opened"}
	}
	if !fi.Mode().IsRegular() {
		return nil, &InsecureFileError{Path: path, Mode: mode, Reason: "it is not a regular file"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, &InsecureFileError{Path: path, Mode: mode, Reason: "its owner cannot be read"}
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return nil, &InsecureFileError{Path: path, Mode: mode, Reason: fmt.Sprintf("it is owned by uid %d, not %d", st.Uid, uid)}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, &InsecureFileError{Path: path, Mode: mode, Reason: "group or others can write it"}
	}
	if fi.Size() > max {
		return nil, &FileError{Path: path, Reason: fmt.Sprintf("the file is %d bytes; a policy file is at most %d", fi.Size(), max)}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &FileError{Path: path, Reason: fmt.Sprintf("the file is more than %d bytes", max)}
	}
	return b, nil
}
