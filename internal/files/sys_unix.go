//go:build unix

package files

import (
	"errors"
	"io/fs"
	"syscall"
)

// openFlags never follow a link and never wait for a FIFO's writer.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

const modesMeanOwner = true

func ownerOf(fi fs.FileInfo) (uint32, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, true
	}
	return 0, false
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// dirSyncUnsupported is what a file system that cannot sync a directory
// answers; the rename is then as durable as that file system makes it.
func dirSyncUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
