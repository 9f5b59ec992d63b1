package export

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/internal/files"
)

// Cursor holds the seq of the last event delivered, so a Follower resumes
// after it.
type Cursor interface {
	// Load returns the saved seq, 0 when nothing was saved yet.
	Load() (int64, error)
	// Save records seq as delivered. It is durable when it returns.
	Save(seq int64) error
}

// MemCursor keeps the seq in memory: for tests and for followers that
// start from the beginning every time. Its methods are safe for concurrent
// use; read Seq directly only when no Follow is using it.
type MemCursor struct {
	mu  sync.Mutex
	Seq int64
}

// Load returns Seq.
func (c *MemCursor) Load() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Seq < 0 {
		return 0, fmt.Errorf("export: cursor holds a negative seq %d", c.Seq)
	}
	return c.Seq, nil
}

// Save sets Seq.
func (c *MemCursor) Save(seq int64) error {
	if seq < 0 {
		return fmt.Errorf("export: cannot save a negative seq %d", seq)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Seq = seq
	return nil
}

// maxCursorFile bounds what Load reads: a decimal int64 and a newline fit
// in far less, so anything longer is not a cursor.
const maxCursorFile = 64

// FileCursor keeps the seq as a decimal number in the file at Path. A
// missing file is seq 0; anything but a decimal seq is an error, never
// read as 0, so a damaged cursor cannot restart delivery from the
// beginning unnoticed. Save writes a temporary file beside Path, syncs it,
// makes it owner-only and renames it into place, then syncs the directory,
// so a crash leaves either the old seq or the new one.
type FileCursor struct {
	Path string
}

// Load reads the seq from Path, held to the rule for trusted files
// (files.ReadOwned): whoever can rewrite the cursor decides which events
// are delivered.
func (c FileCursor) Load() (int64, error) {
	if c.Path == "" {
		return 0, errors.New("export: FileCursor needs a Path")
	}
	b, err := files.ReadOwned(c.Path, maxCursorFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("export: reading cursor: %w", err)
	}
	text := strings.TrimSuffix(string(b), "\n")
	seq, err := strconv.ParseInt(text, 10, 64)
	if err != nil || seq < 0 || text != strconv.FormatInt(seq, 10) {
		return 0, fmt.Errorf("export: cursor %s is not a seq: %q", c.Path, text)
	}
	return seq, nil
}

// Save replaces the file at Path with seq.
func (c FileCursor) Save(seq int64) error {
	if c.Path == "" {
		return errors.New("export: FileCursor needs a Path")
	}
	if seq < 0 {
		return fmt.Errorf("export: cannot save a negative seq %d", seq)
	}
	if err := files.WriteAtomic(c.Path, []byte(strconv.FormatInt(seq, 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("export: saving cursor: %w", err)
	}
	return nil
}
