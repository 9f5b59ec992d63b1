package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Step is one durable step WriteAtomic took, as a test observer hears it.
type Step string

const (
	StepCreate  Step = "create"   // the temporary file exists, empty
	StepSync    Step = "sync"     // its bytes and mode are on disk
	StepRename  Step = "rename"   // it replaced the target
	StepLink    Step = "link"     // it took the target's name (WriteNew)
	StepSyncDir Step = "sync_dir" // the rename is on disk
)

// WriteAtomic replaces path with data, mode perm, so that a crash leaves
// either the old file or the new one whole, never an empty or partial one:
// it writes a temporary file it creates itself (O_EXCL under a random name
// in path's directory, so nothing planted there in advance is written
// through), sets its mode, syncs it, renames it over path (which replaces
// a link there rather than following it) and syncs the directory. A failed
// write leaves path untouched and removes the temporary file.
func WriteAtomic(path string, data []byte, perm fs.FileMode) error {
	return WriteAtomicChecked(path, data, perm, nil)
}

// WriteAtomicChecked is WriteAtomic that calls check with the temporary
// file's path once it is synced and closed, before the rename; an error
// from check leaves path untouched. A writer uses it to have the file's
// own reader accept the new bytes before they replace the old.
func WriteAtomicChecked(path string, data []byte, perm fs.FileMode, check func(tmp string) error) error {
	return write(path, data, perm, check, false)
}

// WriteNew is WriteAtomic for a file that must not replace one already
// there (a private key, a backup): the synced temporary file is linked to
// path, which fails with an error matching fs.ErrExist when path exists,
// and then unlinked. A crash leaves no file at path or the whole new one.
// A file system without hard links cannot hold such a file; WriteNew then
// fails and writes nothing.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, nil, true)
}

func write(path string, data []byte, perm fs.FileMode, check func(tmp string) error, exclusive bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("agentrt: writing %s: %w", path, err)
	}
	tmp := f.Name()
	observe(StepCreate, tmp)
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	// The umask narrowed the mode CreateTemp asked for; perm is exact.
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("agentrt: writing %s: %w", path, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("agentrt: writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("agentrt: syncing %s: %w", path, err)
	}
	observe(StepSync, tmp)
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("agentrt: writing %s: %w", path, err)
	}
	if check != nil {
		if err = check(tmp); err != nil {
			return err
		}
	}
	if exclusive {
		if err = os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("agentrt: not writing %s: a file is already there: %w", path, fs.ErrExist)
			}
			return fmt.Errorf("agentrt: creating %s: %w", path, err)
		}
		observe(StepLink, path)
		// The new file has its name; a crash before this leaves a stray
		// temporary name, never a partial file at path.
		os.Remove(tmp)
	} else {
		if err = os.Rename(tmp, path); err != nil {
			return fmt.Errorf("agentrt: replacing %s: %w", path, err)
		}
		observe(StepRename, path)
	}
	if err := SyncDir(dir); err != nil {
		return err
	}
	observe(StepSyncDir, dir)
	return nil
}

// SyncDir makes a rename or create in dir durable. A file system that
// cannot sync a directory is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("agentrt: opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !dirSyncUnsupported(err) {
		return fmt.Errorf("agentrt: syncing %s: %w", dir, err)
	}
	return nil
}

var observer atomic.Pointer[func(Step, string)]

func observe(s Step, path string) {
	if f := observer.Load(); f != nil {
		(*f)(s, path)
	}
}

// ObserveForTest installs f, process-wide, to hear each step WriteAtomic
// takes, after it succeeded, with the file or directory it took it on. Nil
// removes it; restore puts back the one installed before. Production code
// never sets it.
func ObserveForTest(f func(s Step, path string)) (restore func()) {
	var p *func(Step, string)
	if f != nil {
		p = &f
	}
	old := observer.Swap(p)
	return func() { observer.Store(old) }
}
