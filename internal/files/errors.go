package files

import (
	"errors"
	"fmt"
)

var (
	// ErrInsecureMode: a trusted file was refused for how it is stored:
	// a link, not a regular file, another account's, writable by group or
	// others, swapped while it was opened, or larger than its bound.
	ErrInsecureMode = errors.New("agentrt: file has an insecure mode")
	// ErrSymlink: a trusted path is a symbolic link. It comes with
	// ErrInsecureMode.
	ErrSymlink = errors.New("agentrt: path is a symbolic link")
	// ErrTooLarge: a trusted file is larger than its reader's bound. It
	// comes with ErrInsecureMode.
	ErrTooLarge = errors.New("agentrt: file is too large")
)

// Problem is the part of the rule a refused file broke.
type Problem string

const (
	// ProblemSymlink: the path names a symbolic link; only the file itself
	// is read, since what a link points at can change under the reader.
	ProblemSymlink Problem = "symlink"
	// ProblemNotRegular: the path names a directory, FIFO, device or socket.
	ProblemNotRegular Problem = "not_regular"
	// ProblemOwner: another account owns the file, and an owner can
	// rewrite it whatever its mode says now.
	ProblemOwner Problem = "owner"
	// ProblemWritable: group or others can write the file.
	ProblemWritable Problem = "writable"
	// ProblemReadable: group or others can read a secret.
	ProblemReadable Problem = "readable"
	// ProblemChanged: the path named another file by the time it was
	// opened than when it was looked at.
	ProblemChanged Problem = "changed"
	// ProblemTooLarge: the file is larger than its reader reads.
	ProblemTooLarge Problem = "too_large"
)

// InsecureModeError names a file refused by ReadOwned, ReadSecret or Check
// and says how to fix it. Owner and User are set for ProblemOwner, Size and
// Max for ProblemTooLarge.
type InsecureModeError struct {
	Path    string
	Problem Problem
	Mode    uint32 // the file's permission bits, when it was looked at
	Owner   uint32 // the file's owner
	User    uint32 // the effective user that refused it
	Size    int64
	Max     int64
	// Reason is the refusal in words, without the path.
	Reason string
}

func (e *InsecureModeError) Error() string {
	switch e.Problem {
	case ProblemOwner:
		return fmt.Sprintf("agentrt: %s is owned by user %d, not by you (user %d): its owner can rewrite what agentrt trusts in it, so run agentrt as that user or chown the file to yours", e.Path, e.Owner, e.User)
	case ProblemSymlink:
		return fmt.Sprintf("agentrt: refusing %s: it is a symbolic link; name the file itself", e.Path)
	case ProblemChanged:
		return fmt.Sprintf("agentrt: refusing %s: it was replaced while it was being opened; try again once nothing is rewriting it", e.Path)
	case ProblemTooLarge:
		return fmt.Sprintf("agentrt: refusing %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("agentrt: refusing %s: %s (mode %04o); make it owner-only with chmod 600 and chown it to the account that runs agentrt", e.Path, e.Reason, e.Mode)
}

// Is matches ErrInsecureMode, ErrSymlink for a link and ErrTooLarge for a
// file over its bound.
func (e *InsecureModeError) Is(target error) bool {
	switch target {
	case ErrInsecureMode:
		return true
	case ErrSymlink:
		return e.Problem == ProblemSymlink
	case ErrTooLarge:
		return e.Problem == ProblemTooLarge
	}
	return false
}

func refuse(path string, p Problem, mode uint32, reason string) *InsecureModeError {
	return &InsecureModeError{Path: path, Problem: p, Mode: mode, Reason: reason}
}
