//go:build !unix

package files

import "io/fs"

// Without O_NOFOLLOW, the Lstat before the open and the SameFile after it
// still refuse a link.
const openFlags = 0

// modesMeanOwner is false where permission bits do not mean owner, group
// and others (Windows reports 0666 for every writable file).
const modesMeanOwner = false

func ownerOf(fs.FileInfo) (uint32, bool) { return 0, false }

func isLoop(error) bool { return false }

// A directory cannot be synced here; the rename is as durable as the file
// system makes it.
func dirSyncUnsupported(error) bool { return true }
