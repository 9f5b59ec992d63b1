//go:build unix

package mcp

import (
	"fmt"
	"io"
	"os"
	"syscall"

	agentrt "github.com/agentrt/agentrt"
)

// ReadOwned reads a file only if it is a regular file (no symbolic link is
// followed, and a FIFO cannot make the open wait) owned by the current user that neither group nor others can
// write: whoever can write a manifest or rules file chooses how every tool
// is classified. A refusal is an *agentrt.InsecureModeError (ErrInsecureMode)
// or an error matching agentrt.ErrSymlink.
func ReadOwned(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("mcp: refusing %s: it is a symbolic link; name the file itself: %w", path, agentrt.ErrSymlink)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mode := uint32(fi.Mode().Perm())
	if !fi.Mode().IsRegular() {
		return nil, &agentrt.InsecureModeError{Path: path, Mode: mode, Reason: "not a regular file"}
	}
	if mode&0o022 != 0 {
		return nil, &agentrt.InsecureModeError{Path: path, Mode: mode, Reason: "group or others can write it"}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, &agentrt.InsecureModeError{Path: path, Mode: mode, Reason: fmt.Sprintf("it is owned by uid %d, not the current user", st.Uid)}
	}
	return io.ReadAll(io.LimitReader(f, 16<<20))
}
