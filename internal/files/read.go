package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
)

// ReadOwned reads the trusted file at path, at most max bytes, if it keeps
// the rule: a regular file, not reached through a symbolic link, owned by
// the effective user, writable by neither group nor others. The checks are
// made on the opened descriptor (opened without following a link and
// without waiting on a FIFO), and the descriptor must be the file the path
// named a moment before, so a swap in between is refused rather than read.
// Where the system has no owners and modes (Windows), only the link, kind
// and size checks apply.
func ReadOwned(path string, max int64) ([]byte, error) {
	return read(path, max, false)
}

// ReadSecret is ReadOwned for a file that holds a secret (a token, a
// private key): group and others may not read it either.
func ReadSecret(path string, max int64) ([]byte, error) {
	return read(path, max, true)
}

func read(path string, max int64, secret bool) ([]byte, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if before.Mode()&fs.ModeSymlink != 0 {
		return nil, refuse(path, ProblemSymlink, uint32(before.Mode().Perm()), "it is a symbolic link")
	}
	if h := beforeOpen.Load(); h != nil {
		(*h)(path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if isLoop(err) {
			return nil, refuse(path, ProblemChanged, 0, "it was replaced by a symbolic link while it was being opened")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(before, fi) {
		return nil, refuse(path, ProblemChanged, uint32(fi.Mode().Perm()), "it was replaced while it was being opened")
	}
	if err := check(path, fi, secret); err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, tooLarge(path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("agentrt: reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, tooLarge(path, int64(len(b)), max)
	}
	return b, nil
}

func tooLarge(path string, size, max int64) *InsecureModeError {
	e := refuse(path, ProblemTooLarge, 0, fmt.Sprintf("it holds more than %d bytes, the most this file may hold", max))
	e.Size, e.Max = size, max
	return e
}

// Check applies the rule to a file agentrt does not open itself (a
// database and its sidecars, which the driver opens by path): fi must come
// from os.Lstat(path). It refuses a link, anything but a regular file, a
// file another account owns and one group or others can write.
func Check(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return refuse(path, ProblemSymlink, uint32(fi.Mode().Perm()), "it is a symbolic link")
	}
	return check(path, fi, false)
}

// CheckPath is Check on os.Lstat(path).
func CheckPath(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return Check(path, fi)
}

// CheckPrivate is CheckPath for a file its owner may not have created
// yet (a database, a token file no login has written): a missing file
// passes when missingOK is set, and is otherwise refused as unreadable.
func CheckPrivate(path string, missingOK bool) error {
	err := CheckPath(path)
	if errors.Is(err, fs.ErrNotExist) {
		if missingOK {
			return nil
		}
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	return err
}

func check(path string, fi fs.FileInfo, secret bool) error {
	mode := uint32(fi.Mode().Perm())
	if !fi.Mode().IsRegular() {
		return refuse(path, ProblemNotRegular, mode, "it is not a regular file")
	}
	if !modesMeanOwner {
		return nil
	}
	if uid, ok := ownerOf(fi); ok {
		if me := uint32(os.Geteuid()); uid != me {
			e := refuse(path, ProblemOwner, mode, fmt.Sprintf("it is owned by user %d, not by you (user %d)", uid, me))
			e.Owner, e.User = uid, me
			return e
		}
	}
	if mode&0o022 != 0 {
		return refuse(path, ProblemWritable, mode, "group or others can write it")
	}
	if secret && mode&0o044 != 0 {
		return refuse(path, ProblemReadable, mode, "group or others can read it, and it holds a secret")
	}
	return nil
}

var beforeOpen atomic.Pointer[func(path string)]

// SetBeforeOpenForTest installs f, process-wide, to run between ReadOwned's
// look at a path and its open of it: a test swaps the file there. Nil
// removes it; restore puts back the one installed before. Production code
// never sets it.
func SetBeforeOpenForTest(f func(path string)) (restore func()) {
	var p *func(string)
	if f != nil {
		p = &f
	}
	old := beforeOpen.Swap(p)
	return func() { beforeOpen.Store(old) }
}
